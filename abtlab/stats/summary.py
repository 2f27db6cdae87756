"""Per-point summaries of a run dataset: mean, 95% CI and RSD over repetitions."""
from __future__ import annotations

__all__ = ["point_stats", "provenance_label"]


def point_stats(ds, var: str, level: float = 0.95):
    """Dataset with mean, ci_low, ci_high, rsd, n of var over `rep` (t-interval).

    Kept for its callers (plots, demo): abtlab.stats.point_summary does the work; an
    all-NaN variable gives NaN rather than an error, so a plot of it stays empty."""
    from . import point_summary
    return point_summary(ds, var, level, allow_all_nan=True)


def provenance_label(ds) -> str:
    """'measured', 'emulated frequency' or 'simulated', and 'emulated device' when the
    disk was the FUSE latency model: goes on every plot."""
    mode = ds.attrs.get("freq_mode", "?")
    label = {"real": "measured", "emulated": "measured, emulated frequency",
             "simulated": "SIMULATED"}.get(mode, mode)
    if mode != "simulated" and ds.attrs.get("device_emulation"):
        label += f", emulated device ({_emulated_devices(ds)})"
    if "virtual" in str(ds.attrs.get("clock", "")):
        label += ", guest points in VIRTUAL time (qemu icount)"
    return label


def _emulated_devices(ds) -> str:
    """Which device levels were the FUSE latency model (a sweep may mix them with none)."""
    from ..errors import ConfigError
    from ..system.device import parse_profile
    names = []
    for name in str(ds.attrs.get("device_profile", "")).split(" | "):
        try:
            if parse_profile(name.strip()).kind == "latency":
                names.append(name.strip())
        except ConfigError:
            continue
    return ", ".join(names) or "see attrs"
