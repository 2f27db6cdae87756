"""What a run measured, as a researcher reads it: the headline quantity per point with its
unit and CI over repetitions, and its ratio between the fastest and slowest clock.

`summary_frame` gives the tidy table (one row per point), `summary_text` the few lines
`abtlab run` and `abtlab sweep` end with. Both read a Dataset or the RunArrays
(abtlab.data.arrays) the command line writes, and `summary_text` stays on numpy: no
xarray, pandas, scipy or matplotlib, so the summary costs a simulated run milliseconds,
not a second of imports.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..data import schema
from ..data.arrays import RunArrays
from ..data.display import WIDTH, display_unit, number, wrap
from ..errors import ConfigError
from ..stats.intervals import _tcrit
from ..stats.ratios import format_ratio, ratio_ci
from ..stats.values import _check_level, _provenance, provenance_label

__all__ = ["headline", "summary_frame", "summary_text"]

# the first of these a dataset has (with a finite value) is its headline: the paper's
# quantity for IOzone (eq. 3, the write op timed) and for Metarates (the FCR, eq. 9)
HEADLINES = ("throughput", "fcr", "bps", "bandwidth", "iops", "elapsed")
MAX_ROWS = 40
# how the headline is named in the summary's first line (else its long_name up to ":")
LABELS = {"throughput": "eq. 3 with the write op timed, IOzone's default report",
          "fcr": "eq. 9, one worker's file creation rate"}


def _arrays(ds) -> RunArrays:
    if isinstance(ds, RunArrays) or hasattr(ds, "data_vars"):
        return RunArrays.of(ds)
    raise ConfigError("ds", type(ds).__name__, "an xarray.Dataset run dataset")


def headline(ds) -> str | None:
    """The variable a run is read by (see HEADLINES; else its first variable with
    repetitions and units, as a lock or O_DIRECT grid has), or None when it has none."""
    run = _arrays(ds)

    def usable(var):
        dims, data, _ = run.variables[var]
        data = np.asarray(data)
        return (schema.REP in dims and np.issubdtype(data.dtype, np.number)
                and np.isfinite(data).any())
    for var in HEADLINES:
        if var in run.variables and usable(var):
            return var
    return next((v for v, (_, _, attrs) in run.variables.items()
                 if v != schema.RUN_ID and "units" in attrs and usable(v)), None)


def _unit(run, var, mean=()):
    """(shown unit, factor) of var (abtlab.data.display), chosen from its point means."""
    return display_unit(run.variables[var][2].get("units", ""), mean)


def _values(run, var, order):
    """var's array with its dims in `order` (every dim of var), checked as
    abtlab.stats.values checks a statistic's input."""
    if var not in run.variables:
        have = [v for v, (dims, _, _) in run.variables.items() if schema.REP in dims]
        raise ConfigError("var", var, ", ".join(have) or "(none: the dataset has no run variables)")
    dims, data, _ = run.variables[var]
    data = np.asarray(data)
    if schema.REP not in dims:
        raise ConfigError(f"{var}.dims", tuple(dims), f"dims including {schema.REP!r}")
    if not np.issubdtype(data.dtype, np.number):
        raise ConfigError(f"{var}.dtype", str(data.dtype), "a numeric variable")
    if data.size == 0:
        raise ConfigError(var, "empty (0 values)", "a run with at least one point and repetition")
    return np.transpose(data, [list(dims).index(d) for d in order]).astype(float)


def _points(run, var, level):
    """(dims, keys, mean, half, rsd, n) of var per point (keys: its factor levels), in
    stored units: numpy on the raw (points, reps) array, as abtlab.stats.point_summary
    computes it (xarray's alignment per operation cost a simulated run's summary ~50 ms
    for a few points)."""
    _check_level(level)
    dims = [d for d in run.variables[var][0] if d != schema.REP] if var in run.variables else []
    x = _values(run, var, dims + [schema.REP])
    x = x.reshape(-1, x.shape[-1])
    n = np.isfinite(x).sum(axis=1)
    t = np.array([_tcrit(float(level), float(k - 1)) if k >= 2 else np.nan for k in n.tolist()])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.nansum(x, axis=1) / np.maximum(n, 1), np.nan)
        sd = np.sqrt(np.nansum((x - mean[:, None]) ** 2, axis=1) / (n - 1))
        half = np.where(n >= 2, t * sd / np.sqrt(n), np.nan)
        rsd = np.where(n >= 2, sd / mean, np.nan)
    keys = list(itertools.product(*(run.coord(d).tolist() for d in dims)))
    return dims, keys, mean, half, rsd, n


def _var_or_headline(ds, var):
    var = var or headline(ds)
    if var is None:
        raise ConfigError("var", None, f"a variable with repetitions ({', '.join(HEADLINES)}, ...)")
    return var


def summary_frame(ds, var=None, level=0.95):
    """One row per point: its factor levels, then `<var> [<unit>]` (mean over
    repetitions), `ci_low [<unit>]`, `ci_high [<unit>]` (Student t at `level`, the
    interval of abtlab.stats.point_summary), `rsd` and `n`, in the unit abtlab.data.display
    shows (throughputs in MiB/s).
    attrs: var, units, level and the provenance (freq_mode, backend, ...)."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    run = _arrays(ds)
    var = _var_or_headline(run, var)
    dims, _, mean, half, rsd, n = _points(run, var, level)
    unit, k = _unit(run, var, mean)
    index = pd.MultiIndex.from_product([run.coord(d) for d in dims], names=dims)
    df = pd.DataFrame({f"{var} [{unit}]": mean * k, f"ci_low [{unit}]": (mean - half) * k,
                       f"ci_high [{unit}]": (mean + half) * k, "rsd": rsd, "n": n},
                      index=index).reset_index()
    df.attrs = {**_provenance(run, var=var, level=level, interval="Student t"),
                "var": var, "units": unit}
    return df


def _cell(mean, half):
    if not math.isfinite(mean):
        return "no value"
    if not math.isfinite(half):
        return f"{number(mean)} [no CI: too few repetitions]"
    return f"{number(mean)} [{number(mean - half)}, {number(mean + half)}]"


def _table(rows, header) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    return ["  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
            for r in [header] + rows]


def _fixed(run, dims) -> str:
    """The factors with one level, as 'threads=256 file_size=131072'."""
    return " ".join(f"{d}={run.coord(d)[0]}" for d in dims if d in run.coords and run.sizes[d] == 1)


def summary_text(ds, var=None, level=0.95, max_rows=MAX_ROWS) -> str:
    """A few lines: what was measured and how (provenance), the headline per point with
    its CI, and, with two or more clocks, its ratio fastest/slowest per configuration.
    ds: a run Dataset or its RunArrays."""
    run = _arrays(ds)
    var = var or headline(run)
    if var is None:
        return "no headline quantity in this dataset (" + ", ".join(run.variables) + ")"
    dims, keys, mean, half, _, n = _points(run, var, level)
    unit, k = _unit(run, var, mean)
    sizes = run.sizes
    shown = [i for i, d in enumerate(dims) if sizes[d] > 1]
    reps = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
    long = LABELS.get(var) or (schema.VARIABLES[var].long_name.split(":")[0]
                               if var in schema.VARIABLES else var)
    # what, its unit and its provenance first: a long label wraps after them
    lines = wrap(f"{var}, {unit}, {provenance_label(run)}: mean [{level:.0%} CI] over {reps} "
                 f"repetitions ({long})", WIDTH, indent="  ").splitlines()
    if fixed := _fixed(run, dims):
        lines += wrap(f"  at {fixed}", WIDTH, indent="     ").splitlines()
    rows = [[str(key[i]) for i in shown] + [_cell(m * k, h * k)]
            for key, m, h in zip(keys[:max_rows], mean, half)]
    lines += _table(rows, [dims[i] for i in shown] + [f"{var} [{unit}]"])
    if len(keys) > max_rows:
        lines.append(f"  ... {len(keys) - max_rows} more points: ds.abt.summary(tidy=True)")
    lines += _ratio_lines(run, var, dims, level, max_rows)
    return "\n".join(lines)


def _ratio_lines(run, var, dims, level, max_rows) -> list[str]:
    """fastest/slowest clock per configuration with its Fieller CI, as abtlab.stats.slowdown
    gives it (paired for a blocked sweep); below 1: slower at the faster clock."""
    sizes = run.sizes
    if schema.FREQ not in dims or sizes[schema.FREQ] < 2:
        return []
    freqs = [float(f) for f in run.coord(schema.FREQ)]
    lo, hi = min(freqs), max(freqs)
    cfg = [d for d in dims if d != schema.FREQ]
    x = _values(run, var, cfg + [schema.FREQ, schema.REP])
    paired = run.attrs.get("order") == "blocked"
    shown = [i for i, d in enumerate(cfg) if sizes[d] > 1]
    rows = []
    keys = itertools.product(*(run.coord(d).tolist() for d in cfg))
    for key, idx in itertools.islice(zip(keys, np.ndindex(x.shape[:-2])), max_rows):
        r = ratio_ci(x[idx][freqs.index(hi)], x[idx][freqs.index(lo)], level, "fieller", paired=paired)
        rows.append([str(key[i]) for i in shown] + [format_ratio(*r)])
    head = f"{var} at {hi:g} GHz / at {lo:g} GHz (below 1 = slower at the faster clock)"
    return [head] + _table(rows, [cfg[i] for i in shown] + [f"ratio [{level:.0%} CI]"])
