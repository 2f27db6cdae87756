import numpy as np
import pytest

from abtlab.sweep import loop as sweep


@pytest.mark.slow
def test_local_cluster_equals_serial():
    """A simulated sweep on a LocalCluster with 2 workers equals the serial result exactly."""
    levels = {"policy": ["ext4", "delayjc:window=4ms,max_resets=64,max_age=1s"], "freq_ghz": [1.6, 3.3],
              "threads": [32, 64], "file_size": [131072], "record_size": [32768], "files": [1],
              "device": ["hdd7200"]}
    kw = dict(reps=3, seed=11, quiet=True, freq_mode="simulated")
    serial = sweep.run("sim", levels, **kw)
    dist = sweep.run("sim", levels, scheduler="local", workers=2, **kw)
    for var in ("throughput", "commits", "nonblocked_threads", "mean_commit_wait"):
        np.testing.assert_array_equal(serial[var].values, dist[var].values)
    assert serial.sizes["op"] == dist.sizes["op"]
    np.testing.assert_array_equal(np.sort(serial["op_t_end"].values), np.sort(dist["op_t_end"].values))
