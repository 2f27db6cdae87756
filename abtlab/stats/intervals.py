"""One sample per point: t-intervals, RSD, and how many repetitions a target CI needs."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..data import schema
from ..errors import ConfigError
from .values import _check_level, _provenance, _values
from .tdist import t_ppf

__all__ = ["ci_halfwidth", "difference_ci", "point_stats", "point_summary", "reps_for_cv", "reps_needed"]


@functools.lru_cache(maxsize=4096)
def _tcrit(level: float, df: float) -> float:
    # scipy.stats.t.ppf's value without scipy (stats.tdist): scipy.special alone costs
    # ~0.5 s to import, which the summary at the end of `abtlab run` must not pay
    return t_ppf(0.5 + level / 2, df)


def ci_halfwidth(values, level=0.95, relative=True) -> float:
    """Half-width of the t-CI of the mean of `values` (NaNs dropped); divided by |mean|
    when relative. inf when fewer than 2 finite values (or a zero mean when relative)."""
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size < 2:
        return math.inf
    half = _tcrit(float(level), float(x.size - 1)) * x.std(ddof=1) / math.sqrt(x.size)
    if not relative:
        return float(half)
    m = abs(x.mean())
    return float(half / m) if m > 0 else math.inf


def difference_ci(before, after, level=0.95) -> tuple[float, float, float, int]:
    """(mean(after) - mean(before), lo, hi, n): Welch's t-interval of the difference of two
    independent samples (NaNs dropped); n is the smaller sample. lo and hi are NaN when a
    sample has fewer than 2 values; two constant samples (a count that never varied) give
    the difference itself at both ends."""
    a, b = (np.asarray(x, dtype=float).ravel() for x in (before, after))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    n = int(min(a.size, b.size))
    if n < 2:
        d = float(b.mean() - a.mean()) if n else math.nan
        return d, math.nan, math.nan, n
    d = float(b.mean() - a.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return d, d, d, n
    df = (va + vb) ** 2 / (va * va / (a.size - 1) + vb * vb / (b.size - 1))
    half = _tcrit(float(level), float(df)) * math.sqrt(va + vb)
    return d, d - half, d + half, n


def reps_needed(values, target_rel_halfwidth, level=0.95) -> int:
    """Repetitions for the relative CI half-width to reach the target, from the RSD of
    `values` (a pilot sample). 2 when fewer than 2 finite values: the spread is unknown."""
    if not isinstance(target_rel_halfwidth, (int, float)) or not target_rel_halfwidth > 0:
        raise ConfigError("target_rel_halfwidth", target_rel_halfwidth, "a number > 0, e.g. 0.05")
    _check_level(level)
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size < 2:
        return 2
    if x.mean() == 0:
        raise ConfigError("values", "mean 0", "a sample with a non-zero mean")
    return reps_for_cv(x.std(ddof=1) / abs(x.mean()), target_rel_halfwidth, level)


def reps_for_cv(cv, target_rel_halfwidth, level=0.95) -> int:
    """Smallest n (>= 2) whose t-CI half-width t(n-1) * cv / sqrt(n) meets the target."""
    # deferred: scipy is heavy; `import abtlab` and `abtlab run` do without it
    from scipy.stats import norm
    if cv == 0:
        return 2
    n = max(2, math.ceil((norm.ppf(0.5 + level / 2) * cv / target_rel_halfwidth) ** 2))
    while _tcrit(float(level), float(n - 1)) * cv / math.sqrt(n) > target_rel_halfwidth:
        n += 1  # t > z for small n: a few steps at most
    return n


def point_summary(ds, var="throughput", level=0.95, allow_all_nan=False):
    """Per point: mean, ci_low, ci_high (t-interval), rsd (sd/mean), n (finite reps).
    CI bounds are NaN where n < 2. allow_all_nan: NaN everywhere instead of ConfigError
    for a variable with no finite value (e.g. a plot of commits on a run without them)."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    _check_level(level)
    da = _values(ds, var, allow_all_nan)
    n = da.count(schema.REP)
    mean = da.mean(schema.REP)
    sd = da.std(schema.REP, ddof=1) if da.sizes[schema.REP] > 1 else xr.full_like(mean, np.nan)
    tc = xr.apply_ufunc(np.vectorize(lambda k: _tcrit(float(level), float(k - 1)) if k >= 2
                                     else np.nan, otypes=[float]), n)
    half = tc * sd / np.sqrt(n)
    out = xr.Dataset({"mean": mean, "ci_low": mean - half, "ci_high": mean + half,
                      "rsd": sd / mean, "n": n})
    units = da.attrs.get("units", "")
    for k in ("mean", "ci_low", "ci_high"):
        out[k].attrs["units"] = units
    out["rsd"].attrs["units"] = "1"
    out.attrs = _provenance(ds, var=var, level=level, interval="Student t")
    return out


def point_stats(ds, var: str, level: float = 0.95):
    """Dataset with mean, ci_low, ci_high, rsd, n of var over `rep` (t-interval).

    Kept for its callers (plots, demo): abtlab.stats.point_summary does the work; an
    all-NaN variable gives NaN rather than an error, so a plot of it stays empty."""
    return point_summary(ds, var, level, allow_all_nan=True)
