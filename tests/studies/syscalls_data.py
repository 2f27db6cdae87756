"""Constructed system-call grids with known speedups, shared by the tests of the study
(abtlab.studies.syscalls) and of its plots (abtlab.present.syscalls_plots)."""
import numpy as np
import xarray as xr


def constructed_elapsed(speedup: np.ndarray, reps=3):
    """elapsed where t_mutex / t_spin = speedup exactly in every rep."""
    threads, work = [1, 2, 8], [1, 100]
    spin = np.ones((3, 2, reps)) * np.arange(1, reps + 1)
    el = np.stack([spin, spin * speedup[..., None]])
    return xr.Dataset({"elapsed": (("lock", "threads", "work", "rep"), el)},
                      coords={"lock": ["spin", "mutex"], "threads": threads, "work": work,
                              "rep": range(reps)}, attrs={"hardware_threads": 2})
