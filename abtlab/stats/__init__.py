"""Statistics of run datasets: CIs, RSD, slowdown ratios, tests, ANOVA (statsmodels).

Every function reads the raw repetitions on the `rep` dim (NaN = a missing repetition,
skipped) and keeps the dataset's provenance (freq_mode) in what it returns, so a
simulated or emulated result is never shown as measured.

Slowdown ratios are mean(var at f) / mean(var at ref) per configuration, the two
samples independent, or paired by repetition when the sweep ran blocked
(`paired=True`: the covariance of the two means enters each method). CI methods:
  "fieller"   Fieller's theorem for a ratio of independent means, Welch-Satterthwaite
              degrees of freedom (default; exact for normal means, unbounded -> +-inf
              when the reference mean is not clearly away from 0);
  "delta"     delta method on the log of the means, Welch-Satterthwaite df, exp back
              (always positive, asymmetric);
  "bootstrap" percentile bootstrap resampling each sample independently (seeded);
              it undercovers with few repetitions (~90% for a 95% CI at n=8).
The one-sided test of "var at f_high < var at f_low" is a Welch t-test on log values
(scale-free, robust to the right skew of run times), a paired t-test on log ratios for
blocked sweeps, adjusted over configurations.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..data import schema
from ..errors import ConfigError

__all__ = ["point_summary", "slowdown", "slowdown_table", "test_slowdown", "anova", "regress",
           "ci_halfwidth", "reps_needed", "reps_for_cv", "ratio_ci", "ratio_halfwidth", "format_ratio", "RATIO_METHODS",
           "CORRECTIONS"]

RATIO_METHODS = ("fieller", "delta", "bootstrap")
CORRECTIONS = ("holm", "fdr_bh", "bonferroni", "holm-sidak", "hommel", "fdr_by")


# ---------------------------------------------------------------- validation
def _check_level(level, field="level"):
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ConfigError(field, level, "a number in (0, 1), e.g. 0.95")


def _values(ds, var, allow_all_nan=False):
    """ds[var] as a DataArray with a `rep` dim; ConfigError for anything unusable."""
    import xarray as xr
    if not isinstance(ds, xr.Dataset):
        raise ConfigError("ds", type(ds).__name__, "an xarray.Dataset run dataset")
    if var not in ds.data_vars:
        have = [v for v in ds.data_vars if schema.REP in ds[v].dims]
        raise ConfigError("var", var, ", ".join(have) or "(none: the dataset has no run variables)")
    da = ds[var]
    if schema.REP not in da.dims:
        raise ConfigError(f"{var}.dims", da.dims, f"dims including {schema.REP!r}")
    if not np.issubdtype(da.dtype, np.number):
        raise ConfigError(f"{var}.dtype", str(da.dtype), "a numeric variable")
    if da.size == 0:
        raise ConfigError(var, "empty (0 values)", "a run with at least one point and repetition")
    if not allow_all_nan and not np.isfinite(da.values).any():
        raise ConfigError(var, "all NaN", "at least one finite repetition")
    return da


def _freq_level(da, f, field):
    levels = [float(x) for x in da[schema.FREQ].values]
    if f is None:
        return None
    if not any(math.isclose(float(f), x) for x in levels):
        raise ConfigError(field, f, f"one of the run's {schema.FREQ} levels {levels}")
    return [x for x in levels if math.isclose(float(f), x)][0]


def _with_freq(ds, var):
    da = _values(ds, var)
    if schema.FREQ not in da.dims or da.sizes[schema.FREQ] < 2:
        raise ConfigError(schema.FREQ, da.sizes.get(schema.FREQ),
                          f"a run whose {var} has a {schema.FREQ} dim of at least 2 levels")
    return da


def _provenance(ds, **extra):
    from .summary import provenance_label
    return {"freq_mode": ds.attrs.get("freq_mode", "?"), "provenance": provenance_label(ds),
            **extra}


# ---------------------------------------------------------------- one sample
@functools.lru_cache(maxsize=4096)
def _tcrit(level: float, df: float) -> float:
    from scipy.stats import t
    return float(t.ppf(0.5 + level / 2, df))


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


# ---------------------------------------------------------------- ratios
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
    import xarray as xr
    if paired is None:
        paired = ds.attrs.get("order") == "blocked"
    da = _with_freq(ds, var)
    ref = _freq_level(da, ref, "ref") if ref is not None else float(da[schema.FREQ].min())
    cfg, x = _configs(da)
    iref = [float(f) for f in da[schema.FREQ].values].index(ref)
    out = np.full(x.shape[:-1] + (3,), np.nan)
    for k, idx in enumerate(np.ndindex(x.shape[:-2])):
        for j in range(x.shape[-2]):
            out[idx + (j,)] = (1.0, 1.0, 1.0) if j == iref else ratio_ci(
                x[idx + (j,)], x[idx + (iref,)], level, method, n_boot, [seed, k, j], paired)
    dims = cfg + [schema.FREQ]
    coords = {d: da[d].values for d in dims}
    n = np.isfinite(x).sum(axis=-1)
    res = xr.Dataset({"ratio": (dims, out[..., 0]), "ci_low": (dims, out[..., 1]),
                      "ci_high": (dims, out[..., 2]), "n": (dims, n),
                      "n_ref": (dims, np.broadcast_to(n[..., iref:iref + 1], n.shape).copy())},
                     coords=coords)
    res.attrs = _provenance(ds, var=var, ref_freq_ghz=ref, level=level, method=method,
                            paired=int(bool(paired)))
    return res


def format_ratio(ratio, low, high, digits=2) -> str:
    """'0.53 [0.45, 0.61]'."""
    return f"{ratio:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def slowdown_table(sd, digits=2):
    """slowdown() as a DataFrame with a 'slowdown' column '0.53 [0.45, 0.61]' per point."""
    df = sd.to_dataframe().reset_index()
    df["slowdown"] = [format_ratio(r, lo, hi, digits)
                      for r, lo, hi in zip(df["ratio"], df["ci_low"], df["ci_high"])]
    df.attrs = dict(sd.attrs)
    return df


# ---------------------------------------------------------------- tests
def _welch_less(hi, lo):
    """One-sided Welch test on logs: mean log(hi) < mean log(lo). (t, df, p)."""
    from statsmodels.stats.weightstats import ttest_ind
    if hi.size < 2 or lo.size < 2:
        return math.nan, math.nan, math.nan
    t, p, df = ttest_ind(np.log(hi), np.log(lo), alternative="smaller", usevar="unequal")
    return float(t), float(df), float(p)


def _paired_less(hi, lo):
    """One-sided paired t-test on logs (blocks = repetitions): mean log(hi/lo) < 0."""
    keep = np.isfinite(hi) & np.isfinite(lo)
    d = np.log(hi[keep]) - np.log(lo[keep])
    if d.size < 2:
        return math.nan, math.nan, math.nan
    from scipy.stats import ttest_1samp
    res = ttest_1samp(d, 0.0, alternative="less")
    return float(res.statistic), float(d.size - 1), float(res.pvalue)


def _adjust(p, alpha, method):
    import gc
    from statsmodels.stats.multitest import multipletests
    p_adj, reject = np.full(p.shape, np.nan), np.zeros(p.shape, bool)
    ok = np.isfinite(p)
    if not ok.any():
        return p_adj, reject
    # multipletests' holm path calls gc.collect(): ~0.1 s over a heap holding xarray,
    # pandas and scipy. Freezing the heap first makes that collection scan nothing.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        reject[ok], p_adj[ok], _, _ = multipletests(p[ok], alpha=alpha, method=method)
    finally:
        if freeze:
            gc.unfreeze()
    return p_adj, reject


def test_slowdown(ds, var="throughput", f_low=None, f_high=None, alpha=0.05, method="holm",
                  level=0.95, ci_method="fieller", paired=None):
    """Per configuration, test "var at f_high < var at f_low" (one-sided Welch t-test on
    log values; a paired t-test on log ratios when `paired`, by default when the sweep
    ran blocked), p-values adjusted over configurations (multipletests `method`).

    Returns a DataFrame: config columns, n_low, n_high, ratio (= mean high / mean low),
    ci_low, ci_high (ci_method at `level`), t, df, p, p_adj, reject. Configurations with
    fewer than 2 finite repetitions at either frequency get p = NaN and are not counted."""
    import pandas as pd
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ConfigError("alpha", alpha, "a number in (0, 1), e.g. 0.05")
    if method not in CORRECTIONS:
        raise ConfigError("method", method, " | ".join(CORRECTIONS))
    da = _with_freq(ds, var)
    f_low = _freq_level(da, f_low, "f_low") if f_low is not None else float(da[schema.FREQ].min())
    f_high = _freq_level(da, f_high, "f_high") if f_high is not None else float(da[schema.FREQ].max())
    if f_low == f_high:
        raise ConfigError("f_high", f_high, f"a frequency other than f_low={f_low}")
    if (da.values[np.isfinite(da.values)] <= 0).any():
        raise ConfigError(var, "values <= 0", "positive values (the test is on log values)")
    if paired is None:
        paired = ds.attrs.get("order") == "blocked"
    cfg, x = _configs(da)
    freqs = [float(f) for f in da[schema.FREQ].values]
    il, ih = freqs.index(f_low), freqs.index(f_high)
    rows = []
    for idx in np.ndindex(x.shape[:-2]):
        lo, hi = x[idx + (il,)], x[idx + (ih,)]
        if paired:
            r, cl, ch = ratio_ci(hi, lo, level, ci_method, paired=True)
            t, df, p = _paired_less(hi, lo)
        else:
            lo, hi = lo[np.isfinite(lo)], hi[np.isfinite(hi)]
            r, cl, ch = ratio_ci(hi, lo, level, ci_method)
            t, df, p = _welch_less(hi, lo)
        rows.append({**{d: da[d].values[i] for d, i in zip(cfg, idx)},
                     "n_low": int(np.isfinite(lo).sum()), "n_high": int(np.isfinite(hi).sum()),
                     "ratio": r, "ci_low": cl, "ci_high": ch, "t": t, "df": df, "p": p})
    out = pd.DataFrame(rows)
    out["p_adj"], out["reject"] = _adjust(out["p"].to_numpy(float), alpha, method)
    out.attrs = _provenance(ds, var=var, f_low=f_low, f_high=f_high, alpha=alpha,
                            correction=method, test="one-sided paired t on log ratios" if paired
                            else "one-sided Welch t on log values")
    return out


# ANOVA and regression on the factors live in abtlab.stats.regression; they are part of this API.
from .regression import anova, regress  # noqa: E402

test_slowdown.__test__ = False  # a statistical test, not a pytest test, when imported by name
