"""The points the explorers of abtlab.present.widgets show, as plain functions: a slider
calls one with its new value. Both run the simulator (simulated data): `delay_point`
ext4 against delayJC at one window, `frequency_point` the SERA-IO comparison of the
frequency policies on one workload."""
from __future__ import annotations

from .. import sera
from ..errors import ConfigError
from .notebook_studies import delay_sweep, delay_table

__all__ = ["delay_point", "frequency_point", "DELAY_MEASURES"]

# the means delay_point gives per policy
DELAY_MEASURES = ("throughput_mib_s", "unblocked_threads", "commit_wait_ms")


def delay_point(window_ms=16.0, max_resets=64, threads=256, freq_ghz=3.3, reps=3, seed=0,
                device="hdd7200", **sim) -> dict:
    """Simulated ext4 and delayJC (window, max resets) at one point.
    Returns {"ext4": {...}, "delayjc": {...}} of throughput_mib_s, unblocked_threads,
    commit_wait_ms (means over reps)."""
    if not isinstance(threads, int) or threads < 1:
        raise ConfigError("threads", threads, "an integer >= 1")
    if not isinstance(freq_ghz, (int, float)) or freq_ghz <= 0:
        raise ConfigError("freq_ghz", freq_ghz, "a frequency in GHz > 0")
    ds = delay_sweep([float(window_ms)], int(max_resets), threads=(threads,), freqs=(float(freq_ghz),),
                     reps=reps, seed=seed, device=device, **sim)
    df = delay_table(ds).set_index("window_ms")
    cols = list(DELAY_MEASURES)
    return {"ext4": df.loc[0.0, cols].to_dict(), "delayjc": df.loc[float(window_ms), cols].to_dict(),
            "params": dict(window_ms=float(window_ms), max_resets=int(max_resets), threads=threads,
                           freq_ghz=float(freq_ghz), device=device)}


def frequency_point(workload="iozone", tol=0.02, up_threshold=0.8,
                    freqs=(0.8, 1.3, 1.8, 2.5), reps=3, seed=0):
    """sera.compare on one simulated workload: a DataFrame, one row per frequency policy
    (time, modelled energy, EDP and their ratios to fixed-high)."""
    if workload not in sera.WORKLOADS:
        raise ConfigError("workload", workload, " | ".join(sera.WORKLOADS))
    wl = sera.sim_workloads(names=(workload,), freqs=tuple(freqs), reps=int(reps), seed=int(seed))
    return sera.compare(wl, freqs=freqs, tol=float(tol), up_threshold=float(up_threshold))
