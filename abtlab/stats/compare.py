"""Two runs side by side, as pyperf's compare_to reads two suites: per point the two
share, the ratio B/A of the means with its CI (Fieller, unpaired: the runs are separate
sweeps), a two-sided Welch t-test on the logs, Holm-adjusted over the points, and a
verdict: "faster" or "slower" when the test rejects at alpha, else "not significant"."""
from __future__ import annotations

import math

import numpy as np

from ..data import schema
from ..errors import ConfigError
from .ratios import ratio_ci
from .significance import _adjust

__all__ = ["compare_runs", "higher_is_better"]

# a time (or an energy) grows when it gets worse; a rate when it gets better
_LOWER_BETTER = ("s", "ms", "us", "ns", "J", "J s", "W")


def higher_is_better(units: str) -> bool | None:
    """True for rates ('bytes/s', 'files/s'), False for times and energies, None when the
    unit says neither (a count: 'higher' or 'lower', no judgement)."""
    if units.endswith("/s"):
        return True
    if units in _LOWER_BETTER:
        return False
    return None


def _welch_two_sided(b, a):
    """Two-sided Welch t-test on logs: mean log(b) != mean log(a). p, or NaN."""
    a, b = a[np.isfinite(a) & (a > 0)], b[np.isfinite(b) & (b > 0)]
    if a.size < 2 or b.size < 2:
        return math.nan
    if np.ptp(a) == 0 and np.ptp(b) == 0:      # two constants (a count): equal or not at all
        return 1.0 if a[0] == b[0] else 0.0
    # deferred: statsmodels is heavy; `import abtlab` and `abtlab run` do without it
    from statsmodels.stats.weightstats import ttest_ind
    return float(ttest_ind(np.log(b), np.log(a), alternative="two-sided", usevar="unequal")[1])


def _shared(da_a, da_b, field="B"):
    """(da_a, da_b, dims, differ) on the points both have: a dim with one level in each,
    a different one (the policy of two single-policy runs), is what the runs compare
    (differ: name -> (A's level, B's)) and is dropped, as are one-level dims only one of
    them has; every other dim is cut to the levels both have."""
    differ = {d: (da_a[d].values[0].item(), da_b[d].values[0].item()) for d in da_a.dims
              if d in da_b.dims and d != schema.REP and da_a.sizes[d] == da_b.sizes[d] == 1
              and da_a[d].values[0] != da_b[d].values[0]}
    da_a, da_b = da_a.squeeze(list(differ), drop=True), da_b.squeeze(list(differ), drop=True)
    da_a = da_a.squeeze([d for d in da_a.dims if d not in da_b.dims and da_a.sizes[d] == 1], drop=True)
    da_b = da_b.squeeze([d for d in da_b.dims if d not in da_a.dims and da_b.sizes[d] == 1], drop=True)
    if set(da_a.dims) != set(da_b.dims):
        raise ConfigError(field, f"dims {tuple(da_b.dims)}", f"the factors of A {tuple(da_a.dims)}")
    sel = {}
    for d in da_a.dims:
        if d == schema.REP:
            continue
        both = [v for v in da_a[d].values.tolist() if v in set(da_b[d].values.tolist())]
        if not both:
            raise ConfigError(field, f"{d} levels {da_b[d].values.tolist()}",
                              f"a run sharing a level of {d} with A ({da_a[d].values.tolist()})")
        sel[d] = both
    dims = [d for d in da_a.dims if d != schema.REP]
    return (da_a.sel(sel).transpose(*dims, schema.REP), da_b.sel(sel).transpose(*dims, schema.REP),
            dims, differ)


def _verdict(ratio, reject, better) -> str:
    if not reject or not math.isfinite(ratio):
        return "not significant"
    if better is None:
        return f"{ratio:.2f}x higher" if ratio > 1 else f"{1 / ratio:.2f}x lower"
    up = (ratio > 1) == better
    return f"{ratio if ratio > 1 else 1 / ratio:.2f}x {'faster' if up else 'slower'}"


def compare_runs(a, b, var=None, level=0.95, alpha=0.05):
    """A DataFrame, one row per point A and B share: its factor levels, `A` and `B` (the
    means, in the variable's stored unit), `B/A` with `ci_low`, `ci_high`, the Welch `p`,
    `p_adj` (Holm over the rows) and `verdict`. attrs: var, units, level, alpha, differ
    (the one-level factors in which the runs differ: name -> (A's level, B's))."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    for name, ds in (("A", a), ("B", b)):
        if var not in ds or schema.REP not in ds[var].dims:
            have = [v for v in ds.data_vars if schema.REP in ds[v].dims]
            raise ConfigError("--var", var, f"a variable with repetitions in {name}: " + ", ".join(have))
    xa, xb, dims, differ = _shared(a[var], b[var])
    rows, ps = [], []
    for idx in np.ndindex(xa.shape[:-1]):
        va, vb = xa.values[idx].astype(float), xb.values[idx].astype(float)
        r, lo, hi = ratio_ci(vb, va, level, "fieller")
        ps.append(_welch_two_sided(vb, va))
        rows.append({**{d: xa[d].values[i] for d, i in zip(dims, idx)}, "A": np.nanmean(va),
                     "B": np.nanmean(vb), "B/A": r, "ci_low": lo, "ci_high": hi})
    df = pd.DataFrame(rows)
    p = np.asarray(ps, float)
    df["p"] = p
    df["p_adj"], reject = _adjust(p, alpha, "holm")
    units = a[var].attrs.get("units", "")
    better = higher_is_better(units)
    df["verdict"] = [_verdict(r, bool(k), better) for r, k in zip(df["B/A"], reject)]
    df.attrs = {"var": var, "units": units, "level": level, "alpha": alpha, "differ": differ}
    return df
