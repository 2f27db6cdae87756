"""abtlab.system.runlock: one real run at a time, one writer per output, no stale lock."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from abtlab import backends
from abtlab.sweep import loop as sweep
from abtlab.errors import ConfigError, UnavailableError
from abtlab.system.runlock import MachineLock, OutputLock

backends.register("fake", "fakebackend:FakeBackend")

_HOLD = """
import sys, time
from abtlab.system.runlock import MachineLock
with MachineLock("holder run", path=sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def _holder(path):
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_real_run_waits_with_a_message_or_fails_at_once(tmp_path):
    path = tmp_path / "real.lock"
    proc = _holder(path)
    said = []
    try:
        with pytest.raises(UnavailableError, match=f"pid {proc.pid}: holder run"):
            with MachineLock("second", wait=False, path=path):
                pass
        killing = tmp_path / "killing"
        subprocess.Popen(["sh", "-c", f"sleep 0.5; touch {killing}; kill {proc.pid}"])
        with MachineLock("second", path=path, say=said.append):
            # the lock came only once the holder was being killed (its flock goes with it)
            assert killing.exists()
            assert path.read_text() == f"pid {os.getpid()}: second\n"
        assert said and f"pid {proc.pid}: holder run" in said[0]
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    path = tmp_path / "real.lock"
    proc = _holder(path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with MachineLock("next", wait=False, path=path):
        pass


def test_an_output_being_written_is_refused(tmp_path):
    out = tmp_path / "r.nc"
    with OutputLock(out, directory=tmp_path):
        with pytest.raises(ConfigError, match=f"out: .*is writing it"):
            with OutputLock(tmp_path / "." / "r.nc", directory=tmp_path):
                pass
    with OutputLock(out, directory=tmp_path):       # released: free again
        pass


def test_a_sweep_to_an_output_another_sweep_writes_is_refused_before_running(tmp_path):
    out = tmp_path / "r.nc"
    with OutputLock(out):
        with pytest.raises(ConfigError, match="is writing it"):
            sweep.run("fake", {"policy": ["ext4"], "threads": [2]}, reps=1, out=out, quiet=True)
    assert not out.exists() and not (tmp_path / "r.nc.parts").exists()


def test_only_runs_on_host_devices_take_the_machine(monkeypatch, tmp_path):
    from abtlab.machines import kernel_delayjc
    monkeypatch.setattr(kernel_delayjc, "SYSFS_KNOBS", tmp_path / "absent")   # no knobs here
    iozone, sim = backends.get("iozone"), backends.get("sim")
    kd = "kdelayjc:window=2ms"
    assert iozone.holds_host_devices({"policy": ["ext4"]}) is True
    assert iozone.holds_host_devices({"machine": ["guest"]}) is False
    assert iozone.holds_host_devices({"machine": ["host"], "policy": [kd]}) is False   # to the guest
    assert iozone.holds_host_devices({"machine": ["host"], "policy": [kd, "ext4"]}) is True
    assert sim.holds_host_devices({"policy": ["ext4"]}) is False


def test_an_output_lock_file_goes_with_its_writer(tmp_path):
    out = tmp_path / "r.nc"
    with OutputLock(out, directory=tmp_path) as held:
        assert held.path.is_file()
    assert not held.path.exists()


def test_a_waiter_on_a_removed_lock_file_takes_the_new_one(tmp_path, monkeypatch):
    """A process that opened the lock file just before its holder removed it must not
    lock the unlinked file (a third would then lock a new one beside it)."""
    out = tmp_path / "r.nc"
    first = OutputLock(out, directory=tmp_path).__enter__()
    stale = os.open(first.path, os.O_RDWR)      # opened, not yet locked, when first ends
    first.release()
    late = OutputLock(out, directory=tmp_path)
    opens = iter([stale])
    real_open = OutputLock._open
    monkeypatch.setattr(late, "_open", lambda: next(opens, None) or real_open(late))
    with late:
        assert os.fstat(late._fd).st_ino == os.stat(late.path).st_ino
        with pytest.raises(ConfigError, match="is writing it"):
            with OutputLock(out, directory=tmp_path):
                pass


_HOLD_OUT = """
import sys, time
from abtlab.system.runlock import OutputLock
with OutputLock(sys.argv[1], directory=sys.argv[2]):
    print("held", flush=True)
    time.sleep(60)
"""


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_killed_writers_lock_and_temporary_files_are_found_and_removed(tmp_path):
    """kill -9 leaves the output's lock file and, mid-write, `.r.nc.tmp-PID`: both are
    stale once the writer is gone; a live process's temporary file, a file of another
    name and a live writer's lock are not."""
    from abtlab.data import store
    from abtlab.system import runlock
    locks, out = tmp_path / "locks", tmp_path / "r.nc"
    locks.mkdir()
    killed = subprocess.Popen([sys.executable, "-c", _HOLD_OUT, str(out), str(locks)],
                              stdout=subprocess.PIPE, text=True)
    assert killed.stdout.readline().strip() == "held"
    torn = store.temp_path(out, killed.pid)
    torn.write_bytes(b"\x89HDF\r\n partial")
    live = subprocess.Popen(["sleep", "60"])
    kept = [store.temp_path(out, live.pid), tmp_path / ".r.nc.tmp-x", tmp_path / "notes.txt",
            store.temp_path(tmp_path / "other.nc", _dead_pid())]
    for f in kept:
        f.write_text("x")
    writing = OutputLock(tmp_path / "w.nc", directory=locks).__enter__()
    try:
        assert runlock.stale_outputs(locks) == []          # the killed one still runs
        killed.kill()
        killed.wait()
        stale = runlock.stale_outputs(locks)
        assert [(s.pid, s.out, s.temps) for s in stale] == [(killed.pid, str(out), [torn])]
        runlock.remove_stale(stale[0])
        assert not torn.exists() and not stale[0].lock.exists()
        assert all(f.exists() for f in kept) and writing.path.exists()
        assert runlock.stale_outputs(locks) == []
    finally:
        writing.release()
        live.kill()
        live.wait()


def test_a_lock_file_of_a_live_pid_is_not_stale(tmp_path):
    """Unheld but naming a live process: a writer ending (it removes the file itself)."""
    from abtlab.system import runlock
    lock = tmp_path / "out-0123456789abcdef.lock"
    lock.write_text(f"pid {os.getpid()}: {tmp_path / 'r.nc'}\n")
    assert runlock.stale_outputs(tmp_path) == []
    lock.write_text(f"pid {_dead_pid()}: {tmp_path / 'r.nc'}\n")
    assert len(runlock.stale_outputs(tmp_path)) == 1
