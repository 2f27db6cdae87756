"""Constructed run datasets with planted parameters, shared by the test_bayes_* files."""
from __future__ import annotations

import numpy as np
import xarray as xr

ATTRS = dict(backend="constructed", freq_mode="simulated", filesystem="constructed (test data)",
             mount_options="", kernel="none", cpu="none", abtlab_version="0", command="test",
             start_time="", end_time="")
FREQS = [1.6, 2.0, 2.6, 3.3]


def planted(slope_of_threads, threads=(16, 64, 256), policies=("ext4", "nojc"), reps=3,
            noise=0.03, seed=0):
    """throughput = exp(18 + 0.1 log2 threads + slope(threads, policy) log f + noise).
    slope_of_threads(threads, policy) -> the planted elasticity d log y / d log f."""
    rng = np.random.default_rng(seed)
    shape = (len(policies), len(FREQS), len(threads), 1, 1, 1, reps)
    y = np.empty(shape)
    for i, pol in enumerate(policies):
        for j, f in enumerate(FREQS):
            for k, n in enumerate(threads):
                b = slope_of_threads(n, pol)
                mu = 18 + 0.1 * np.log2(n) + b * (np.log(f) - np.log(2.3))
                y[i, j, k, 0, 0, 0] = np.exp(mu + noise * rng.standard_normal(reps))
    dims = ("policy", "freq_ghz", "threads", "file_size", "record_size", "device", "rep")
    coords = dict(policy=list(policies), freq_ghz=FREQS, threads=list(threads), file_size=[131072],
                  record_size=[32768], device=["none"], rep=np.arange(reps))
    return xr.Dataset({"throughput": (dims, y, {"units": "bytes/s"})}, coords=coords, attrs=ATTRS)
