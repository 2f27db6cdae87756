import numpy as np
import pytest

from abtlab.sweep import loop as sweep
from guest_builds import assert_same_guest_build


@pytest.mark.slow
def test_local_cluster_equals_serial():
    """A simulated sweep on a LocalCluster with 2 workers equals the serial result exactly."""
    levels = {"policy": ["ext4", "delayjc:window=4ms,max_resets=64,max_age=1s"], "freq_ghz": [1.6, 3.3],
              "threads": [32, 64], "file_size": [131072], "record_size": [32768], "files": [1],
              "device": ["hdd7200"]}
    kw = dict(reps=3, seed=11, quiet=True, freq_mode="simulated")
    serial = sweep.run("sim", levels, **kw)
    dist = sweep.run("sim", levels, scheduler="local", workers=2, **kw)
    for var in ("throughput", "commits", "threads_clear_of_commits", "mean_commit_wait"):
        np.testing.assert_array_equal(serial[var].values, dist[var].values)
    assert serial.sizes["op"] == dist.sizes["op"]
    np.testing.assert_array_equal(np.sort(serial["op_t_end"].values), np.sort(dist["op_t_end"].values))


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.timeout(1500)
def test_a_local_cluster_boots_a_guest_batch_like_the_serial_executor(built_guest):
    """Guest points on a LocalCluster go in the same batches (one boot each) as serially,
    so in virtual time with one vCPU the two sweeps give the same numbers exactly."""
    levels = {"policy": ["ext4", "nojc"], "threads": [8], "files": [4], "device": ["none"],
              "machine": ["guest"]}
    kw = dict(reps=1, seed=3, quiet=True)
    serial = sweep.run("metarates", levels, **kw)
    dist = sweep.run("metarates", levels, scheduler="local", workers=2, **kw)
    assert_same_guest_build(serial, dist)
    for var in ("fcr", "commits"):
        np.testing.assert_array_equal(serial[var].values, dist[var].values, err_msg=var)
    np.testing.assert_array_equal(serial["op_t_end"].values, dist["op_t_end"].values)


def test_only_virtual_time_guest_groups_run_beside_others():
    """On a cluster, host runs queue for the one I/O worker; virtual-time guest groups do
    not (nothing on the host enters their timing), clock=host guests do."""
    from abtlab.sweep.executor import Task, _isolated, groups
    from abtlab.sweep.plan import RunSettings

    def task(machine, i=0, backend="iozone"):
        point = {"policy": "ext4", "threads": 4, "file_size": 4096, "record_size": 4096,
                 "device": "none", "machine": machine, "freq_ghz": 3.3}
        return Task(RunSettings(backend, {"guest_batch": 2}, 3.3, "emulated"), point, i, 0, 1)
    assert _isolated([task("guest")]) and _isolated([task("guest:cpus=2")])
    assert not _isolated([task("host")]) and not _isolated([task("guest:clock=host")])
    assert not _isolated([task("guest", backend="sim")])
    # consecutive points of one guest machine: groups of guest_batch; host points alone
    got = [[t.index for t in g] for g in groups(
        [task("guest", 0), task("guest", 1), task("guest", 2), task("host", 3), task("host", 4)])]
    assert got == [[0, 1], [2], [3], [4]]
