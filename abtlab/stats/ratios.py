"""Slowdown ratios with CIs (Fieller, delta, bootstrap; paired for blocked sweeps); see
abtlab.stats for the methods."""
from __future__ import annotations

import math

import numpy as np

from ..data import schema
from ..errors import ConfigError
from .notices import notice, plain, silenced
from .values import _check_level, _freq_level, _provenance, _with_freq
from .intervals import _tcrit

__all__ = ["RATIO_METHODS", "format_ratio", "geomean_ratio_ci", "ratio_ci", "ratio_halfwidth", "slowdown", "slowdown_table"]


RATIO_METHODS = ("fieller", "delta", "bootstrap")


def _moments(x):
    x = x[np.isfinite(x)]
    return x, x.size, (x.mean() if x.size else np.nan), (x.var(ddof=1) if x.size > 1 else np.nan)


def _welch_df(a, na, b, nb):
    """Welch-Satterthwaite df of a sum of two variance components a, b (n-1 each)."""
    den = a * a / (na - 1) + b * b / (nb - 1)
    return (a + b) ** 2 / den if den > 0 else math.inf


def _fieller(ma, va, na, mb, vb, nb, level, cov=0.0, df=None):
    """Fieller's interval for ma/mb; cov = Cov(mean a, mean b) * n for paired samples."""
    r = ma / mb
    v11, v22, v12 = va / na, vb / nb, cov / na
    df = _welch_df(v11, na, r * r * v22, nb) if df is None else df
    t = _tcrit(level, df)
    g = t * t * v22 / (mb * mb)
    if g >= 1:
        return r, -math.inf, math.inf
    shift = g * v12 / v22 if v22 > 0 else 0.0
    inner = v11 - 2 * r * v12 + r * r * v22 - (g * (v11 - v12 * v12 / v22) if v22 > 0 else 0.0)
    root = (t / abs(mb)) * math.sqrt(max(inner, 0.0))
    return r, (r - shift - root) / (1 - g), (r - shift + root) / (1 - g)


def _delta(ma, va, na, mb, vb, nb, level, cov=0.0, df=None):
    if ma <= 0 or mb <= 0:
        raise ConfigError("method", "delta", "positive means (use method='fieller')")
    r = ma / mb
    a, b = va / (na * ma * ma), vb / (nb * mb * mb)
    se = math.sqrt(max(a + b - 2 * cov / (na * ma * mb), 0.0))
    if se == 0:
        return r, r, r
    half = _tcrit(level, _welch_df(a, na, b, nb) if df is None else df) * se
    return r, r * math.exp(-half), r * math.exp(half)


def _bootstrap(xa, xb, level, n_boot, seed, paired=False):
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, xa.size, (n_boot, xa.size))
    ib = ia if paired else rng.integers(0, xb.size, (n_boot, xb.size))
    ra, rb = xa[ia].mean(axis=1), xb[ib].mean(axis=1)
    lo, hi = np.quantile(ra / rb, [0.5 - level / 2, 0.5 + level / 2])
    return xa.mean() / xb.mean(), float(lo), float(hi)


def ratio_ci(num, den, level=0.95, method="fieller", n_boot=2000, seed=0, paired=False):
    """(ratio, low, high) of mean(num) / mean(den), NaNs dropped. Bounds are NaN when
    either sample has fewer than 2 finite values.

    paired=True: num[k] and den[k] were measured in the same block (a blocked sweep's
    repetition k); pairs with a NaN are dropped, and the covariance between the two
    means enters the interval (Fieller's theorem with covariance, n-1 df), so drift
    shared within a block cancels."""
    _check_level(level)
    if method not in RATIO_METHODS:
        raise ConfigError("method", method, " | ".join(RATIO_METHODS))
    a, b = np.asarray(num, dtype=float).ravel(), np.asarray(den, dtype=float).ravel()
    if paired:
        if a.shape != b.shape:
            raise ConfigError("den", b.shape, f"paired values: the shape of num {a.shape}")
        keep = np.isfinite(a) & np.isfinite(b)
        a, b = a[keep], b[keep]
    xa, na, ma, va = _moments(a)
    xb, nb, mb, vb = _moments(b)
    if na == 0 or nb == 0:
        return math.nan, math.nan, math.nan
    if mb == 0:             # a zero reference (no throughput): no ratio, no interval
        return (math.nan if ma == 0 else math.copysign(math.inf, ma)), math.nan, math.nan
    if na < 2 or nb < 2:
        return ma / mb, math.nan, math.nan
    if method == "bootstrap":
        return _bootstrap(xa, xb, level, int(n_boot), seed, paired)
    fn = _fieller if method == "fieller" else _delta
    extra = dict(cov=float(np.cov(xa, xb, ddof=1)[0, 1]), df=na - 1) if paired else {}
    return tuple(float(v) for v in fn(ma, va, na, mb, vb, nb, float(level), **extra))


def ratio_halfwidth(num, den, level=0.95, method="fieller", relative=True, paired=False) -> float:
    """Half-width of the CI of mean(num)/mean(den) (relative: divided by the ratio), for
    adaptive repetitions on a slowdown ratio; inf while either sample has < 2 values."""
    r, lo, hi = ratio_ci(num, den, level, method, paired=paired)
    if not (math.isfinite(lo) and math.isfinite(hi)) or (relative and r == 0):
        return math.inf
    half = (hi - lo) / 2
    return float(half / abs(r)) if relative else float(half)


def _configs(da):
    """Configuration dims (all but freq and rep) and the values as (cfg..., freq, rep)."""
    cfg = [d for d in da.dims if d not in (schema.FREQ, schema.REP)]
    return cfg, da.transpose(*cfg, schema.FREQ, schema.REP).values


def slowdown(ds, var="throughput", ref=None, level=0.95, method="fieller", n_boot=2000, seed=0,
             paired=None):
    """Ratio mean(var at f) / mean(var at ref) per configuration and frequency, with CI.

    ref defaults to the lowest freq_ghz; the ref level itself is 1 by definition.
    paired: runs with the same rep index form a block (default: when the sweep ran in
    order="blocked"); the CI then uses their covariance.
    Returns a Dataset (config dims + freq_ghz) of ratio, ci_low, ci_high, n, n_ref."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    if paired is None:
        paired = ds.attrs.get("order") == "blocked"
    da = _with_freq(ds, var)
    ref = _freq_level(da, ref, "ref") if ref is not None else float(da[schema.FREQ].min())
    cfg, x = _configs(da)
    iref = [float(f) for f in da[schema.FREQ].values].index(ref)
    out = np.full(x.shape[:-1] + (3,), np.nan)
    with silenced():
        for k, idx in enumerate(np.ndindex(x.shape[:-2])):
            for j in range(x.shape[-2]):
                out[idx + (j,)] = (1.0, 1.0, 1.0) if j == iref else ratio_ci(
                    x[idx + (j,)], x[idx + (iref,)], level, method, n_boot, [seed, k, j], paired)
        zero = int((np.nanmean(x[..., iref, :], axis=-1) == 0).sum())
    if zero:
        notice(f"{var} is 0 at the reference {plain(ref)} GHz in {zero} configuration"
               f"{'s' * (zero != 1)}: no ratio to it (NaN or inf)")
    dims = cfg + [schema.FREQ]
    coords = {d: da[d].values for d in dims}
    n = np.isfinite(x).sum(axis=-1)
    same = _identical(x)
    same = same & np.broadcast_to(same[..., iref:iref + 1], same.shape)
    res = xr.Dataset({"ratio": (dims, out[..., 0]), "ci_low": (dims, out[..., 1]),
                      "ci_high": (dims, out[..., 2]), "n": (dims, n), "identical": (dims, same),
                      "n_ref": (dims, np.broadcast_to(n[..., iref:iref + 1], n.shape).copy())},
                     coords=coords)
    res.attrs = _provenance(ds, var=var, ref_freq_ghz=ref, level=level, method=method,
                            paired=int(bool(paired)))
    return res


def _identical(x) -> np.ndarray:
    """Per point: two or more repetitions, all with the same value (a deterministic machine
    whose repetitions did not differ: one run, not a sample)."""
    with np.errstate(invalid="ignore"):
        n = np.isfinite(x).sum(axis=-1)
        spread = np.nanmax(x, axis=-1) - np.nanmin(x, axis=-1) if x.size else np.zeros(x.shape[:-1])
    return (n >= 2) & (spread == 0)


def format_ratio(ratio, low, high, digits=2, identical=False) -> str:
    """'0.53 [0.45, 0.61]'; a CI that is unbounded or reaches below 0 (a ratio of positive
    means cannot: the reference mean is not clearly away from 0 with these repetitions) is
    said in words instead of as '[-inf, inf]', and so are repetitions that are all one
    value (a zero-width interval would read as certainty)."""
    if identical:
        return f"{ratio:.{digits}f} [no CI: the repetitions are identical, one run]"
    if not (math.isfinite(low) and math.isfinite(high)) or low < 0:
        return f"{ratio:.{digits}f} [no CI: too few or too noisy repetitions]"
    return f"{ratio:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def slowdown_table(sd, digits=2):
    """slowdown() as a DataFrame with a 'slowdown' column '0.53 [0.45, 0.61]' per point."""
    df = sd.to_dataframe().reset_index()
    same = df["identical"] if "identical" in df else [False] * len(df)
    df["slowdown"] = [format_ratio(r, lo, hi, digits, bool(i))
                      for r, lo, hi, i in zip(df["ratio"], df["ci_low"], df["ci_high"], same)]
    df.attrs = dict(sd.attrs)
    return df


def geomean_ratio_ci(num, den, dim: str = "rep", level: float = 0.95):
    """Geometric mean of the paired ratios num/den over dim (DataArrays), with a Student
    t interval on the log ratios (NaN bounds with fewer than two pairs): a Dataset of
    ratio, lo, hi, n. Unlike ratio_ci (a ratio of means), each pair is one measurement
    of the ratio, as in the syscall lab's side-by-side timings."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    from scipy import stats
    if not 0 < level < 1:
        raise ConfigError("level", level, "a confidence level between 0 and 1")
    lr = np.log(num / den)
    n = lr.count(dim)
    mean, sd = lr.mean(dim), lr.std(dim, ddof=1)
    t = xr.apply_ufunc(lambda k: np.where(k > 1, stats.t.ppf(0.5 + level / 2,
                                                           np.maximum(k - 1, 1)), np.nan), n)
    half = t * sd / np.sqrt(n)
    return xr.Dataset({"ratio": np.exp(mean), "lo": np.exp(mean - half),
                       "hi": np.exp(mean + half), "n": n})
