"""Per-point summaries of a run dataset: mean, 95% CI and RSD over repetitions."""
from __future__ import annotations

import numpy as np

from . import schema

__all__ = ["point_stats", "provenance_label"]


def point_stats(ds, var: str):
    """Dataset with mean, ci_low, ci_high, rsd, n of var over `rep` (t-interval)."""
    import xarray as xr
    from scipy import stats as st
    da = ds[var]
    n = da.count(schema.REP)
    mean = da.mean(schema.REP)
    sd = da.std(schema.REP, ddof=1)
    tcrit = xr.apply_ufunc(lambda k: st.t.ppf(0.975, np.maximum(k - 1, 1)), n)
    half = tcrit * sd / np.sqrt(n)
    return xr.Dataset({"mean": mean, "ci_low": mean - half, "ci_high": mean + half,
                       "rsd": sd / mean, "n": n})


def provenance_label(ds) -> str:
    """'measured', 'emulated frequency' or 'simulated': goes on every plot."""
    mode = ds.attrs.get("freq_mode", "?")
    return {"real": "measured", "emulated": "measured, emulated frequency",
            "simulated": "SIMULATED"}.get(mode, mode)
