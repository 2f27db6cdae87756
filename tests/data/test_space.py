"""A full disk is an expected error: refused before a run that cannot fit, and ENOSPC in
a part, the resume state or the dataset gives one line (path, space needed and free),
keeps the finished runs for --resume, and leaves no temporary file."""
from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from abtlab.data import hdf5file, space, store
from abtlab.errors import DiskFullError
from abtlab.sweep import loop as sweep

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIM = ["run", "sim", "--threads", "32,64", "--file-size", "256k", "--record", "32k",
       "--policy", "ext4;nojc", "--freq", "1.6,2.0,2.6,3.3", "--reps", "50", "--quiet"]


def test_the_estimate_is_a_floor_of_the_op_records():
    point = {"threads": 64, "file_size": 256 * 1024, "record_size": 32 * 1024}
    assert space.estimate_bytes([point], 10) == 10 * (64 * 8 * space.OP_RECORD_BYTES + space.RUN_BYTES)
    assert space.estimate_bytes([{"threads": 4}], 2) == 2 * (4 * space.OP_RECORD_BYTES + space.RUN_BYTES)
    assert space.human(18_876_314) == "18.9 MB" and space.human(512) == "512 B"


def test_a_run_that_cannot_fit_is_refused_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(space, "free_bytes", lambda path: 3_000_000)
    out = tmp_path / "a.nc"
    with pytest.raises(DiskFullError, match=r"not enough space for .*a\.nc \(its dataset needs "
                                            r"at least 13\.9 MB, 3\.0 MB free\)"):
        sweep.run("sim", {"threads": [32, 64], "file_size": [262144], "record_size": [32768],
                          "policy": ["ext4", "nojc"], "freq_ghz": [1.6, 2.0, 2.6, 3.3]},
                  reps=50, out=out, quiet=True)
    assert list(tmp_path.iterdir()) == []


def _full(monkeypatch, after=0):
    """os.write in hdf5file fails with ENOSPC after `after` successful calls."""
    real, calls = os.write, []

    def write(fd, data):
        calls.append(fd)
        if len(calls) > after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)
    monkeypatch.setattr(hdf5file.os, "write", write)


def test_enospc_in_the_dataset_names_the_path_and_the_space_and_leaves_no_temp(tmp_path, monkeypatch):
    import abtlab.sim as sim
    ds = sim.simulate(reps=2, seed=0, threads=[4], freq_ghz=[1.6])
    _full(monkeypatch)
    out = tmp_path / "d.nc"
    with pytest.raises(DiskFullError, match=r"no space left on device writing .*d\.nc "
                                            r"\(the dataset needs \d+\.\d [kM]B, .* free\)"):
        store.save(ds, out)
    assert list(tmp_path.iterdir()) == []


def test_enospc_in_the_final_write_keeps_the_runs_for_resume(tmp_path, monkeypatch):
    from abtlab.sweep import parts
    out, levels = tmp_path / "r.nc", {"threads": [4, 8], "freq_ghz": [1.6, 3.3]}
    real = store.save

    def full(ds, path, hold=None):
        raise space.full_error(path, 5_000_000, "the dataset")
    monkeypatch.setattr(store, "save", full)
    with pytest.raises(DiskFullError, match=r"8 finished runs kept in .*r\.nc\.parts; free space, "
                                            r"then run the same command with --resume"):
        sweep.run("sim", levels, reps=2, out=out, quiet=True)
    assert len(store.read_parts(out)) == 4 and not out.exists()
    monkeypatch.setattr(store, "save", real)
    monkeypatch.setattr(parts, "KEEP_AFTER_S", 1e9)
    ds = sweep.run("sim", levels, reps=2, out=out, quiet=True, resume=True)
    assert ds.sizes["rep"] == 2 and sorted(set(ds.run_id.values.ravel())) == list(range(8))


def test_enospc_in_the_resume_state_is_the_same_one_line(tmp_path, monkeypatch):
    real = store._write_file_durably

    def full(path, write, *a, **k):
        if path.name == store.SPEC_FILE:
            exc = OSError(errno.ENOSPC, "No space left on device")
            exc.needed = 120
            raise space.full_error(path, 120, "the resume state")
        return real(path, write, *a, **k)
    monkeypatch.setattr(store, "_write_file_durably", full)
    with pytest.raises(DiskFullError, match=r"spec\.json \(the resume state needs 120 B"):
        store.write_spec(tmp_path / "x.nc", {"seed": 0})


@pytest.mark.root
def test_a_full_tmpfs_gives_one_line_exit_2_and_resume_finishes(tmp_path):
    """The issue's reproduction: 16 MB of tmpfs passes the estimate's floor (13.9 MB) but
    not the dataset's 18.9 MB: one line, exit 2, no segfault; grown, --resume finishes."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "D"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "abtlab-test", str(disk)], check=True)
    try:
        env = {**os.environ, "PYTHONPATH": ROOT}
        cmd = [sys.executable, "-m", "abtlab", *SIM, "--out", str(disk / "a.nc")]
        cp = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        lines = cp.stderr.strip().splitlines()
        assert cp.returncode == 2 and len(lines) == 1, cp.stderr
        assert "no space left on device writing" in lines[0] and "needs 18.9 MB" in lines[0]
        assert not [p for p in disk.rglob(".*.tmp-*")]
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        cp = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr
        ds = store.load(disk / "a.nc")
        ids = ds.run_id.values.ravel()
        assert ds.sizes["rep"] == 50 and (ids >= 0).all() and len(set(ids)) == ids.size == 800
    finally:
        subprocess.run(["umount", str(disk)], check=False)
