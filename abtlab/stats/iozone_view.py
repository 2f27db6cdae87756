"""An IOzone dataset read as the paper reads it: throughput at the fast clock over the
slow one with the write op timed (eq. 3, IOzone's default report), the same ratio with
IOzone's stonewalling and with the fsync timed (IOzone -e) beside it, and the unblocked
threads (eq. 4) at each clock.
One row per configuration."""
from __future__ import annotations

import numpy as np

from ..data import schema
from .ratios import format_ratio, slowdown
from .values import _freq_level, _provenance, _with_freq

__all__ = ["iozone_view", "has_both_throughputs", "ratios_between", "eq3_ratio"]


def has_both_throughputs(ds) -> bool:
    return "throughput" in ds and "throughput_fsync" in ds


def ratios_between(ds, var, lo, hi, level=0.95, method="fieller"):
    """(slowdown Dataset at hi, ratio, ci_low, ci_high): var at hi GHz over lo GHz per
    configuration, the three as flat arrays in the Dataset's order."""
    sd = slowdown(ds, var, lo, level, method).sel({schema.FREQ: hi})
    return (sd, *(sd[k].values.ravel() for k in ("ratio", "ci_low", "ci_high")))


def _ratio_column(ds, var, lo, hi, level, method):
    sd, r, a, b = ratios_between(ds, var, lo, hi, level, method)
    same = sd["identical"].values.ravel()
    return [format_ratio(*x, identical=bool(i)) if np.isfinite(x[0]) else "-"
            for *x, i in zip(r, a, b, same)], sd


def eq3_ratio(f_low, f_high, nb_low, nb_high):
    """The throughput ratio eq. 3 gives from the unblocked writers alone: an unblocked
    write op is memory copies (its time scales with 1/f), a blocked one waits on the
    journal and adds little, so throughput ~ NB * S * f / c and the fast clock over the
    slow one ~ (f_high / f_low) * NB(f_high) / NB(f_low). Below 1 when the unblocked
    writers fall by more than the clock rises (the paper: 240 -> 40 for 2.06)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return f_high / f_low * np.asarray(nb_high, float) / np.asarray(nb_low, float)


def iozone_view(ds, f_low=None, f_high=None, level=0.95, method="fieller"):
    """A DataFrame, one row per configuration: `throughput hi/lo` (the paper's, with its
    CI), `with fsync hi/lo` (IOzone -e), `unblocked at lo|hi` (mean writers whose write op
    never slept on the journal, from the trace: model.waits) where the runs recorded it, and
    `no overlap at lo|hi` (mean writers whose write op shares no time with any commit),
    and `eq. 3 from unblocked hi/lo` (eq3_ratio of the first of those counts: what the
    throughput ratio would be if the unblocked writers alone carried it). Below 1 =
    slower at the faster clock."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    da = _with_freq(ds, "throughput")
    freqs = [float(f) for f in da[schema.FREQ].values]
    lo = _freq_level(da, f_low, "f_low") if f_low is not None else min(freqs)
    hi = _freq_level(da, f_high, "f_high") if f_high is not None else max(freqs)
    paper, sd = _ratio_column(ds, "throughput", lo, hi, level, method)
    cfg = [d for d in sd["ratio"].dims]
    index = pd.MultiIndex.from_product([sd[d].values for d in cfg], names=cfg) if cfg else [0]
    out = pd.DataFrame({f"throughput {hi:g}/{lo:g}": paper}, index=index)
    for var, name in (("throughput_stonewall", "stonewalled"), ("throughput_fsync", "with fsync")):
        if var in ds and np.isfinite(ds[var].values).any():
            out[f"{name} {hi:g}/{lo:g}"] = _ratio_column(ds, var, lo, hi, level, method)[0]
    # unblocked by trace evidence where the run recorded why writes slept, then by span overlap
    first = None        # eq. 3's ratio from the first count there is
    for var, name in (("unblocked_threads", "unblocked"), ("threads_clear_of_commits", "no overlap")):
        if var in ds and np.isfinite(ds[var].values).any():
            nb = ds[var].mean(schema.REP)
            at = [nb.sel({schema.FREQ: f}).transpose(*cfg).values.ravel() for f in (lo, hi)]
            first = at if first is None else first
            for f, v in zip((lo, hi), at):
                out[f"{name} at {f:g}"] = np.round(v, 1)
    if first is not None:
        out[f"eq. 3 from unblocked {hi:g}/{lo:g}"] = [
            f"{x:.2f}" if np.isfinite(x) else "-" for x in eq3_ratio(lo, hi, *first)]
    out.attrs = _provenance(ds, f_low=lo, f_high=hi, level=level, method=method)
    return out.reset_index(drop=not cfg)
