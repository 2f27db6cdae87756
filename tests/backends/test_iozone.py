"""End to end on the real kernel: abt-iozone on a scratch loop ext4 with jbd2 tracing."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import abtlab
from abtlab.errors import ConfigError, RunError
from abtlab.trace import Op

pytestmark = pytest.mark.root


def _leftovers(tag):
    """Loop devices, mounts and tracefs instances abtlab made (by its own naming)."""
    loops = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True,
                           text=True).stdout
    mounts = Path("/proc/mounts").read_text()
    inst = Path("/sys/kernel/tracing/instances")
    insts = [p.name for p in inst.iterdir()] if inst.exists() else []
    return ([ln for ln in loops.splitlines() if tag in ln],
            [ln for ln in mounts.splitlines() if tag in ln],
            [i for i in insts if i.startswith(f"abtlab-{os.getpid()}")])


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory, built_native):
    out = tmp_path_factory.mktemp("iozone") / "r.nc"
    abtlab.run("iozone", out=out, threads="64", file_size="128k", record_size="32k",
               policy="ext4,nojc", freq="emulated:1.6,3.3", reps=2, quiet=True)
    return abtlab.load(out)


def test_dataset_shape_and_labels(small_sweep):
    ds = small_sweep
    assert ds.attrs["freq_mode"] == "emulated"
    assert ds["throughput"].dims == ("policy", "freq_ghz", "threads", "file_size",
                                     "record_size", "device", "machine", "rep")
    assert np.isfinite(ds["throughput"]).all()
    assert set(ds.policy.values) == {"ext4", "nojc"}
    abtlab.data.schema.validate(ds)


def test_default_filesystem_has_4k_blocks(small_sweep):
    """Read back from the image by dumpe2fs: mke2fs's small profile (1 KiB) is not used."""
    assert small_sweep.attrs["fs_block_size"] == 4096
    assert "32.0" in str(small_sweep.attrs["fs_journal_mb"])   # ext4; nojc has 0


def test_commit_counts_equal_proc_jbd2(small_sweep):
    ds = small_sweep
    np.testing.assert_array_equal(ds["commits"].values, ds["jbd2_info_commits"].values)
    assert (ds["commits"].sel(policy="ext4") >= 1).all()
    assert (ds["commits"].sel(policy="nojc") == 0).all()


def test_every_fsync_returns_after_its_commit_ends(small_sweep):
    """With delalloc, a thread's blocks are allocated inside its fsync, so a commit must
    end between the fsync's start and its return (C and tracefs share CLOCK_MONOTONIC)."""
    ds = small_sweep
    checked = 0
    for rid in ds.abt.run_ids(policy="ext4"):
        ops, c = ds.abt.ops(rid), ds.abt.commits(rid)
        f = ops[ops["op"] == Op.FSYNC]
        ends = np.sort(c["end"])
        # the first commit end at or after each fsync start must not be after its return
        i = np.searchsorted(ends, f["t_start_ns"])
        assert (i < ends.size).all()
        assert (ends[i] <= f["t_end_ns"]).all()
        checked += f.size
    assert checked == 64 * 2 * 2


def test_records_cover_every_op(small_sweep):
    ds = small_sweep
    ops = ds.abt.ops(int(ds.abt.run_ids(policy="ext4")[0]))
    counts = {op: int((ops["op"] == op).sum()) for op in (Op.OPEN, Op.WRITE, Op.FSYNC, Op.CLOSE)}
    assert counts == {Op.OPEN: 64, Op.WRITE: 64 * 4, Op.FSYNC: 64, Op.CLOSE: 64}


def test_bad_arguments_name_the_field(tmp_path):
    cases = [dict(threads="0"), dict(record_size="256k"), dict(policy="ext5"),
             dict(freq="emulated:1.6,,x"), dict(device="floppy")]
    fields = ["threads", "record_size", "policy", "freq", "device"]
    for kw, field in zip(cases, fields):
        with pytest.raises(ConfigError) as e:
            abtlab.run("iozone", out=tmp_path / "x.nc", reps=1, quiet=True, **kw)
        assert e.value.field.startswith(field), (kw, e.value)
    assert not (tmp_path / "x.nc").exists()



def _workload_running(tmp_path) -> bool:
    """abt-iozone is running with its scratch filesystem under tmp_path."""
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmd.read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"abt-iozone") and str(tmp_path).encode() in b" ".join(argv):
            return True
    return False


@pytest.mark.parametrize("kw,field", [({"block_size": "3000"}, "block_size"),
                                      ({"journal_mb": "1"}, "journal_mb"),
                                      ({"image_mb": "64", "journal_mb": "32"}, "journal_mb"),
                                      ({"image_mb": "lots"}, "image_mb")])
def test_bad_geometry_is_refused_before_any_run(tmp_path, kw, field):
    with pytest.raises(ConfigError) as e:
        abtlab.run("iozone", out=tmp_path / "x.nc", threads="4", reps=1, quiet=True, **kw)
    assert e.value.field == field
    assert not (tmp_path / "x.nc").exists() and not (tmp_path / "x.nc.parts").exists()


def test_failure_mid_run_leaves_nothing(tmp_path, built_native, monkeypatch):
    """A full filesystem makes the workload fail mid-run; everything is undone."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RunError, match="abt-iozone"):
        abtlab.run("iozone", out=tmp_path / "f.nc", threads="8", file_size="8m",
                   record_size="1m", image_mb=24, journal_mb=4, reps=1, quiet=True)
    loops, mounts, insts = _leftovers(str(tmp_path))
    assert (loops, mounts, insts) == ([], [], [])


def test_sigterm_mid_run_leaves_nothing(tmp_path, built_native):
    out = tmp_path / "t.nc"
    proc = subprocess.Popen([sys.executable, "-m", "abtlab", "run", "iozone", "--threads", "64",
                             "--file-size", "1m", "--record", "4k", "--reps", "50", "--quiet",
                             "--device", "hdd7200", "--out", str(out)],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _workload_running(tmp_path):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)     # while abt-iozone writes on the scratch ext4
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    loops = subprocess.run(["losetup", "-l", "-n", "-O", "BACK-FILE"], capture_output=True,
                           text=True).stdout
    assert str(tmp_path) not in loops
    assert str(tmp_path) not in Path("/proc/mounts").read_text()
    throttles = Path("/sys/fs/cgroup/blkio/blkio.throttle.write_iops_device")
    if throttles.exists():  # no throttle left on a loop device (major 7) of ours
        assert all(not ln.startswith("7:") for ln in throttles.read_text().splitlines()), \
            throttles.read_text()
