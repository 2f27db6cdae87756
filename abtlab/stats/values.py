"""The raw repetitions a statistic reads (NaN = a missing repetition), checked, and the
provenance every result and plot carries (measured, emulated, simulated, virtual time)."""
from __future__ import annotations

import math

import numpy as np

from ..data import schema
from ..errors import ConfigError
from ..system.device import parse_profile

__all__ = ["provenance_label"]


def _check_level(level, field="level"):
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ConfigError(field, level, "a number in (0, 1), e.g. 0.95")


def _values(ds, var, allow_all_nan=False):
    """ds[var] as a DataArray with a `rep` dim; ConfigError for anything unusable."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
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
    return {"freq_mode": ds.attrs.get("freq_mode", "?"), "provenance": provenance_label(ds),
            **extra}


def provenance_label(ds) -> str:
    """'measured', 'emulated frequency' or 'simulated', and 'emulated device' when the
    disk was the FUSE latency model: goes on every plot."""
    mode = ds.attrs.get("freq_mode", "?")
    label = {"real": "measured", "emulated": "measured, emulated frequency",
             "virtual": "measured, frequency by icount shift (whole guest CPU)",
             "simulated": "SIMULATED"}.get(mode, mode)
    if mode != "simulated" and ds.attrs.get("device_emulation"):
        label += f", emulated device ({_emulated_devices(ds)})"
    clock = str(ds.attrs.get("clock", ""))
    if "lockstep" in clock:
        label = label.replace("by icount shift", "by the lock-step clock, every vCPU at it")
        label += ", guest points in VIRTUAL time (qemu icount, lock-step vCPUs)"
    elif "virtual" in clock:
        label += ", guest points in VIRTUAL time (qemu icount)"
    return label


def _emulated_devices(ds) -> str:
    """Which device levels were the FUSE latency model (a sweep may mix them with none)."""
    names = []
    for name in str(ds.attrs.get("device_profile", "")).split(" | "):
        try:
            if parse_profile(name.strip()).kind == "latency":
                names.append(name.strip())
        except ConfigError:
            continue
    return ", ".join(names) or "see attrs"
