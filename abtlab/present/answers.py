"""Each study notebook's answer in a sentence, computed from the data it ran on, printed
at the top of the notebook (and collected by `abtlab report` on its index page).

Every function prints one line starting "Answer:" and returns it; the kind of data
(measured, emulated, SIMULATED) is always in the sentence.
"""
from __future__ import annotations

import math

import numpy as np

from ..data.display import number
from ..data import schema
from ..stats.iozone_view import ratios_between
from ..stats.ratios import format_ratio
from ..stats.values import provenance_label
from ..studies.notebook_studies import optimal_delay
from .kernel_history_tables import ratio_table
from .paper_terms import PAPER_IOZONE, unblocked, unblocked_var

__all__ = ["slowdown", "abt_model", "delay", "bps", "frequency", "syscalls", "kernel_history"]


def _say(text: str) -> None:
    line = "Answer: " + text
    print(line)
    return None


def _verdict(r, lo, hi) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no verdict (CI unbounded: too few or too noisy repetitions)"
    return "slower at the faster clock" if hi < 1 else "faster" if lo > 1 else "no clear change"


def _ratios(ds, var="throughput"):
    """(lo, hi, rows): per configuration a label and (ratio, ci_low, ci_high) of var."""
    freqs = [float(f) for f in ds[schema.FREQ].values]
    lo, hi = min(freqs), max(freqs)
    sd, r, a, b = ratios_between(ds, var, lo, hi)
    cfg = [d for d in sd["ratio"].dims]
    keys = sd["ratio"].to_dataframe().reset_index()
    labels = [", ".join(f"{keys.iloc[i][d]}" if d == schema.POLICY else f"{d}={keys.iloc[i][d]}"
                        for d in cfg if ds.sizes[d] > 1) or str(ds.attrs.get("backend", ""))
              for i in range(len(r))]
    return lo, hi, list(zip(labels, r, a, b))


def slowdown(ds, var="throughput") -> None:
    """Throughput (eq. 3, write op timed) at the fastest clock over the slowest, per
    configuration, with its CI and verdict (studies 01, 04)."""
    lo, hi, rows = _ratios(ds, var)
    parts = [f"{label}: x{format_ratio(r, a, b)} ({_verdict(r, a, b)})" for label, r, a, b in rows]
    slower = sum(1 for _, r, a, b in rows if math.isfinite(b) and b < 1)
    return _say(f"{var} at {hi:g} GHz over {lo:g} GHz ({provenance_label(ds)}): " + "; ".join(parts)
                + f". {slower} of {len(rows)} configurations are slower at the faster clock.")


def abt_model(ds) -> None:
    """Study 02: unblocked threads (eq. 4; the trace evidence where the runs recorded it,
    else span overlap, said so) and commits at each clock, and the throughput ratio."""
    lo, hi, rows = _ratios(ds)
    var = unblocked_var(ds)
    m = ds[[var, "commits"]].mean(schema.REP)
    nb = [float(m[var].sel({schema.FREQ: f}).mean()) for f in (lo, hi)]
    cm = [float(m.commits.sel({schema.FREQ: f}).mean()) for f in (lo, hi)]
    what = ("the unblocked threads (class X, eq. 4: write op never slept on the journal, from the trace)"
            if var == "unblocked_threads" else
            "the threads whose write op shares no time with a commit (span overlap, not the paper's "
            "unblocked count: these runs record no sleeps)")
    _, r, a, b = rows[0]
    return _say(f"from {lo:g} to {hi:g} GHz ({provenance_label(ds)}) {what} go {number(nb[0], 3)} -> {number(nb[1], 3)} "
                f"and commits per run {number(cm[0], 3)} -> {number(cm[1], 3)}; throughput (write op timed) "
                f"x{format_ratio(r, a, b)}.")


def delay(ds, max_commit_wait_ms=None) -> None:
    """Study 03: the best delayJC window per clock and its gain over ext4."""
    best = optimal_delay(ds, max_commit_wait_ms=max_commit_wait_ms)
    parts = [f"{r.freq_ghz:g} GHz, {r.threads} threads: {r.window_ms:g} ms (x{r.gain_over_ext4:.2f} "
             f"ext4's throughput, commit wait {number(r.commit_wait_ms, 3)} ms)" for r in best.itertuples()]
    return _say(f"the best delayJC window ({provenance_label(ds)}; 0 ms = ext4 itself): "
                + "; ".join(parts) + ".")


def bps(corr=None, per_run=None) -> None:
    """Study 05: which metric tracks run time best: He et al.'s sets (corr, measured with
    fio) when they ran, else the simulated runs' correlations with elapsed time."""
    ran = corr is not None
    corr = corr.dropna(subset=["normalized"]) if ran else None
    if ran and len(corr):       # a set too small for a CC has none
        best = corr.loc[corr.groupby("set")["normalized"].idxmax()]
        parts = [f"set {r.set}: {r.metric} (normalised CC {r.normalized:.2f})" for r in best.itertuples()]
        return _say("the metric that tracks run time best, measured with fio: " + "; ".join(parts) + ".")
    cc = per_run[["elapsed", "bps", "iops", "bandwidth", "arpt"]].corr()["elapsed"].drop("elapsed")
    order = ", ".join(f"{k} {v:+.2f}" for k, v in cc.sort_values(key=np.abs, ascending=False).items())
    why = "the fio study's sets are too small for a correlation; " if ran else ""
    return _say(f"{why}on SIMULATED IOzone runs, correlation with elapsed time: {order} "
                f"(strongest first; BPS is {'the' if cc.abs().idxmax() == 'bps' else 'not the'} strongest).")


def frequency(df) -> None:
    """Study 06: the policy of least energy-delay product per workload."""
    best = df.loc[df.groupby("workload")["edp"].idxmin()]
    mode = f"time {df.time_mode.iloc[0]}, energy {df.energy_mode.iloc[0]}"
    parts = [f"{r.workload}: {r.policy} (EDP x{r.edp / _fixed_high(df, r.workload):.2f} of fixed-high)"
             for r in best.itertuples()]
    return _say(f"least energy-delay product ({mode}): " + "; ".join(parts) + ".")


def _fixed_high(df, workload) -> float:
    row = df[(df.workload == workload) & (df.policy == "fixed-high")]
    return float(row.edp.iloc[0]) if len(row) else math.nan


def syscalls(here, ref) -> None:
    """Study 07: where a spinlock beats a mutex, here (measured) or in the paper's grid."""
    grid = here if here is not None else ref
    sp = grid["spin_speedup"].to_pandas()
    wins = [f"{sp.index.name}={t} {sp.columns.name}={w}" for t in sp.index for w in sp.columns
            if sp.loc[t, w] > 1]
    where = "measured here" if here is not None else "the paper's grid (nothing measured here)"
    return _say(f"a spinlock beats a mutex ({where}) at: " + (", ".join(wins) or "no cell") + ".")


def kernel_history(hist, policy="ext4") -> None:
    """Study 08, in the paper's terms: per kernel row the throughput ratio with the write op
    timed (the paper's) and its verdict, the fsync-timed ratio beside it, and the unblocked
    threads at each clock (the trace evidence, or span overlap said plainly)."""
    df = ratio_table(hist)
    df = df[df.policy == policy]
    lo, hi = df.attrs["f_low"], df.attrs["f_high"]
    parts = []
    for r in df.itertuples():
        text = (f"{r.row} [{r.data}]: x{format_ratio(r.ratio, r.ci_low, r.ci_high)} "
                f"({_verdict(r.ratio, r.ci_low, r.ci_high)})")
        if math.isfinite(r.fsync_ratio):
            text += f", with the fsync timed x{format_ratio(r.fsync_ratio, r.fsync_ci_low, r.fsync_ci_high)}"
        u = unblocked(hist.runs[r.row], lo, hi, policy)
        if u is not None:
            text += (f", unblocked threads {u.text()}" if u.evidence else
                     f", threads clear of commits {u.text()} (span overlap, not the paper's unblocked count)")
        parts.append(text)
    p = PAPER_IOZONE
    return _say(f"{policy} throughput with the write op timed (the paper's) at {hi:g} over {lo:g} GHz "
                f"(the paper: x{p['ratio']}, unblocked threads {p['unblocked_low']} -> "
                f"{p['unblocked_high']} of 256 on Linux 3.4): " + "; ".join(parts) + ".")
