"""Constructed kernel history datasets with known ratios, shared by the tests of the study
(abtlab.studies.kernel_history) and of its tables and plots (abtlab.present)."""
import numpy as np
import xarray as xr

from abtlab.studies import kernel_history as kh

LOW = [100.0, 104.0, 96.0]


def constructed(high, low=LOW, machines=None, freq_mode="emulated", clock="host"):
    """ext4 and nojc at 1.6 and 3.3 GHz, 3 reps; ext4's 3.3 GHz values are `high`,
    nojc's are twice the 1.6 GHz ones."""
    x = np.array([[low, high], [low, [2 * v for v in low]]], float)   # policy, freq, rep
    coords = {"policy": ["ext4", "nojc"], "freq_ghz": [1.6, 3.3], "threads": [64], "rep": [0, 1, 2]}
    dims = ("policy", "freq_ghz", "threads", "rep")
    x = x[:, :, None, :]
    if machines:
        x = np.repeat(x[:, :, :, None, :], len(machines), axis=3)
        dims = ("policy", "freq_ghz", "threads", "machine", "rep")
        coords["machine"] = machines
    return xr.Dataset({"throughput": (dims, x, {"units": "bytes/s"})}, coords=coords,
                      attrs={"freq_mode": freq_mode, "clock": clock, "backend": "test"})


def history() -> kh.History:
    """Host slower at 3.3 GHz (0.5), the stock guest no clear difference, the legacy guest
    missing, the simulator faster (2)."""
    pt = kh.make_point(policy="ext4,nojc", reps=3)
    h = kh.History(pt)
    h.runs[kh.HOST] = constructed([50.0, 52.0, 48.0], machines=["host"])               # 0.5: slower
    h.runs[kh.STOCK] = constructed([101.0, 99.0, 100.0], machines=["guest:depth=256"], clock="virtual")
    h.missing[kh.LEGACY] = "cannot run here: no qemu"
    h.runs[kh.SIM] = constructed([200.0, 210.0, 190.0], freq_mode="simulated")          # 2: faster
    return h
