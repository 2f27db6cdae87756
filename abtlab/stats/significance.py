"""The one-sided test of "slower at the higher frequency", adjusted over configurations."""
from __future__ import annotations

import gc
import math

import numpy as np

from ..data import schema
from ..errors import ConfigError
from .values import _freq_level, _provenance, _with_freq
from .notices import notice, silenced
from .ratios import _configs, ratio_ci

__all__ = ["CORRECTIONS", "test_slowdown"]


CORRECTIONS = ("holm", "fdr_bh", "bonferroni", "holm-sidak", "hommel", "fdr_by")


def _welch_less(hi, lo):
    """One-sided Welch test on logs: mean log(hi) < mean log(lo). (t, df, p)."""
    # deferred: statsmodels is heavy; `import abtlab` and `abtlab run` do without it
    from statsmodels.stats.weightstats import ttest_ind
    if hi.size < 2 or lo.size < 2:
        return math.nan, math.nan, math.nan
    t, p, df = ttest_ind(np.log(hi), np.log(lo), alternative="smaller", usevar="unequal")
    return float(t), float(df), float(p)


def _constant(hi, lo) -> bool:
    """Every finite repetition the same at both frequencies: a t statistic's 0 / 0."""
    a, b = hi[np.isfinite(hi)], lo[np.isfinite(lo)]
    return a.size > 1 and b.size > 1 and np.ptp(a) == 0 and np.ptp(b) == 0


def _plain(f) -> str:
    return f"{float(f):g}"


def _paired_less(hi, lo):
    """One-sided paired t-test on logs (blocks = repetitions): mean log(hi/lo) < 0."""
    keep = np.isfinite(hi) & np.isfinite(lo)
    d = np.log(hi[keep]) - np.log(lo[keep])
    if d.size < 2:
        return math.nan, math.nan, math.nan
    # deferred: scipy is heavy; `import abtlab` and `abtlab run` do without it
    from scipy.stats import ttest_1samp
    res = ttest_1samp(d, 0.0, alternative="less")
    return float(res.statistic), float(d.size - 1), float(res.pvalue)


def _adjust(p, alpha, method):
    # deferred: statsmodels is heavy; `import abtlab` and `abtlab run` do without it
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
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
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
    rows, constant = [], 0
    for idx in np.ndindex(x.shape[:-2]):
        lo, hi = x[idx + (il,)], x[idx + (ih,)]
        with silenced():
            if _constant(hi, lo):           # no spread to test against: no t, no p
                constant += 1
                r, cl, ch = ratio_ci(hi, lo, level, ci_method, paired=paired)
                t = df = p = math.nan
            elif paired:
                r, cl, ch = ratio_ci(hi, lo, level, ci_method, paired=True)
                t, df, p = _paired_less(hi, lo)
            else:
                lo, hi = lo[np.isfinite(lo)], hi[np.isfinite(hi)]
                r, cl, ch = ratio_ci(hi, lo, level, ci_method)
                t, df, p = _welch_less(hi, lo)
        rows.append({**{d: da[d].values[i] for d, i in zip(cfg, idx)},
                     "n_low": int(np.isfinite(lo).sum()), "n_high": int(np.isfinite(hi).sum()),
                     "ratio": r, "ci_low": cl, "ci_high": ch, "t": t, "df": df, "p": p})
    if constant:
        notice(f"{var} does not vary between repetitions at {_plain(f_low)} and {_plain(f_high)} "
               f"GHz in {constant} configuration{'s' * (constant != 1)} (zero variance): no "
               "t-test there (p is NaN)")
    out = pd.DataFrame(rows)
    out["p_adj"], out["reject"] = _adjust(out["p"].to_numpy(float), alpha, method)
    out.attrs = _provenance(ds, var=var, f_low=f_low, f_high=f_high, alpha=alpha,
                            correction=method, test="one-sided paired t on log ratios" if paired
                            else "one-sided Welch t on log values")
    return out


test_slowdown.__test__ = False  # a statistical test, not a pytest test, when imported by name
