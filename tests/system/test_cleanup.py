"""The undo stack, and nothing left behind by ScratchFS + DeviceThrottle + JournalTrace
after an exception or a SIGTERM."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from abtlab.system import cleanup
from childproc import spawn


def finish(proc, sig=signal.SIGTERM):
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return out, err


# -- the stack itself --------------------------------------------------------------------
def test_run_all_runs_newest_first_once_each():
    done = []
    for name in "abc":
        cleanup.push(lambda n=name: done.append(n), f"undo {name}")
    cleanup.run_all()
    cleanup.run_all()
    assert done == ["c", "b", "a"]
    assert cleanup.pending() == []


def test_pop_runs_only_its_own_undo_and_only_once():
    done = []
    keep = cleanup.push(lambda: done.append("keep"), "keep")
    tok = cleanup.push(lambda: done.append("mine"), "mine")
    assert cleanup.pop(tok) is True
    assert cleanup.pop(tok) is False
    assert done == ["mine"]
    cleanup.discard(keep)
    assert cleanup.pending() == []


def test_a_failing_undo_warns_and_the_others_still_run():
    done = []
    cleanup.push(lambda: done.append("first"), "first")
    cleanup.push(lambda: 1 / 0, "broken")
    cleanup.push(lambda: done.append("last"), "last")
    with pytest.warns(RuntimeWarning, match="broken failed"):
        cleanup.run_all()
    assert done == ["last", "first"]


def _child_with_undos(tmp_path, body):
    out, started = tmp_path / "undone.txt", tmp_path / "B.started"
    return out, f"""
        import time
        from pathlib import Path
        from abtlab.system import cleanup
        cleanup.installed()
        log = open({str(out)!r}, "a", buffering=1)
        cleanup.push(lambda: log.write("A\\n"), "A")
        def slow():
            Path({str(started)!r}).touch()
            time.sleep(0.5)
            log.write("B\\n")
        cleanup.push(slow, "B")
        {body}
    """


def _wait_for(path, timeout=60):
    import time
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_runs_every_undo_once_even_if_signalled_again(tmp_path, sig):
    out, code = _child_with_undos(tmp_path, "print('READY', flush=True); time.sleep(60)")
    proc, _ = spawn(code)
    proc.send_signal(sig)
    _wait_for(tmp_path / "B.started")    # the second signal lands while the slow undo runs
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    assert out.read_text().split() == ["B", "A"]


@pytest.mark.parametrize("body", ["print('READY', flush=True)",
                                  "print('READY', flush=True); raise SystemExit(3)",
                                  "print('READY', flush=True); 1 / 0"])
def test_exit_paths_run_every_undo(tmp_path, body):
    out, code = _child_with_undos(tmp_path, body)
    proc, _ = spawn(code)
    proc.communicate(timeout=120)
    assert out.read_text().split() == ["B", "A"]


def test_installed_as_context_restores_handlers():
    before = signal.getsignal(signal.SIGTERM)
    done = []
    with cleanup.installed():
        assert signal.getsignal(signal.SIGTERM) is not before
        cleanup.push(lambda: done.append(1), "x")
    assert done == [1]
    assert signal.getsignal(signal.SIGTERM) is before


# -- nothing left by the real thing ----------------------------------------------------------
def _leftovers(image, loopdev, mountpoint, instance, major_minor):
    found = []
    if image and subprocess.run(["losetup", "-j", str(image)], capture_output=True,
                                text=True).stdout.strip():
        found.append("loop device")
    if mountpoint and os.path.ismount(mountpoint):
        found.append("mount")
    if instance and os.path.exists(instance):
        found.append("tracefs instance")
    for f in Path("/sys/fs/cgroup/blkio").glob("blkio.throttle.*_device"):
        if any(line.split()[0] == major_minor for line in f.read_text().splitlines()):
            found.append(f.name)
    if image and os.path.exists(image):
        found.append("image file")
    return found


_SETUP = """
    import os
    from abtlab.system import cleanup
    from abtlab.system.scratchfs import ScratchFS
    from abtlab.system.device import DeviceThrottle
    from abtlab.system.tracefs import JournalTrace
    cleanup.installed()
    with ScratchFS(size_mb=128, workdir={workdir!r}) as fs, \\
         DeviceThrottle("hdd7200-throttle", fs.major_minor), JournalTrace(fs.dev_t) as tr:
        print("READY", fs.image, fs.loopdev, fs.mountpoint, tr.path, fs.major_minor, flush=True)
        {body}
"""


@pytest.mark.root
@pytest.mark.parametrize("how", ["exception", "sigterm", "sigint"])
def test_nothing_left_after_failure_or_signal(tmp_path, how):
    body = "raise RuntimeError('mid-run failure')" if how == "exception" else \
        "import time; time.sleep(60)"
    proc, lines = spawn(_SETUP.format(workdir=str(tmp_path), body=body))
    _, image, loopdev, mnt, instance, mm = lines[-1].split()
    try:
        if how != "exception":
            proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode != 0
        assert ("mid-run failure" in err) if how == "exception" else ("Terminated" in err)
        assert _leftovers(image, loopdev, mnt, instance, mm) == []
    finally:
        proc.kill()
        _force_cleanup(image, loopdev, mnt, instance, mm)


def _force_cleanup(image, loopdev, mnt, instance, mm):
    """Leave the machine clean even when the code under test failed to."""
    if os.path.ismount(mnt):
        subprocess.run(["umount", "-l", mnt])
    attached = subprocess.run(["losetup", "-j", image], capture_output=True, text=True).stdout
    if attached.startswith(loopdev + ":"):
        subprocess.run(["losetup", "-d", loopdev])
    if os.path.isdir(instance):
        os.rmdir(instance)
    for f in Path("/sys/fs/cgroup/blkio").glob("blkio.throttle.*_device"):
        if mm in f.read_text():
            f.write_text(f"{mm} 0")


# -- signals held across a change and its undo, and across a teardown -------------------
class _Steps(cleanup.Undoable):
    """Each setup step signals this process before registering its undo; each undo
    signals it again."""

    def __init__(self, log, n=3):
        self._tokens, self.log, self.n = [], log, n

    def _setup(self):
        for i in range(self.n):
            os.kill(os.getpid(), signal.SIGTERM)   # arrives between the change and its undo
            self.log.append(f"do {i}")
            self._undo(lambda i=i: self._undo_step(i), f"undo {i}")

    def _undo_step(self, i):
        os.kill(os.getpid(), signal.SIGINT)        # arrives in the middle of the teardown
        self.log.append(f"undo {i}")


def test_a_signal_in_setup_or_teardown_never_skips_an_undo():
    log = []
    with pytest.raises(cleanup.Terminated) as exc:
        with cleanup.installed():
            with _Steps(log):
                log.append("body")               # never reached: the signal ends the setup
    assert exc.value.signum == signal.SIGTERM
    assert log == ["do 0", "do 1", "do 2", "undo 2", "undo 1", "undo 0"]
    assert cleanup.pending() == []


def test_a_second_signal_shortens_waits_and_a_held_one_is_raised_after():
    seen = []
    with pytest.raises(cleanup.Terminated):
        with cleanup.installed():
            with cleanup.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                seen.append(cleanup.hurry())
                os.kill(os.getpid(), signal.SIGTERM)
                seen.append(cleanup.hurry())
            seen.append("not reached")
    assert seen == [False, True]
    assert cleanup.hurry() is False               # reset once the handlers are gone


class _SignalledInDel:
    def __del__(self):      # the signal lands in a finalizer, where Python swallows raises
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("checkpoint", [True, False])
def test_a_signal_swallowed_by_a_finalizer_is_raised_again(checkpoint):
    seen = []
    with pytest.raises(cleanup.Terminated) as exc:
        with cleanup.installed():
            _SignalledInDel()                    # collected at once: __del__ runs here
            seen.append("went on")               # the raise in __del__ was swallowed
            if checkpoint:
                with cleanup.deferred():         # the next change to the machine
                    seen.append("step")
                seen.append("not reached")
    assert exc.value.signum == signal.SIGTERM
    assert seen == (["went on", "step"] if checkpoint else ["went on"])


def test_a_second_signal_is_not_raised_into_the_first_ones_unwinding():
    """A Terminated going by (an except or finally running) is not cut by a second one:
    it is noted (hurry) and the first one's signal stays the one that ends."""
    seen = []
    with pytest.raises(cleanup.Terminated) as exc:
        with cleanup.installed():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                seen.append("not reached")
            finally:
                os.kill(os.getpid(), signal.SIGINT)     # inside the unwinding
                seen.append(cleanup.hurry())
    assert exc.value.signum == signal.SIGTERM and seen == [True]


def test_changed_machine_tells_a_machine_change_from_a_users_file():
    with cleanup.installed():
        token = cleanup.push(lambda: None, "a temporary dataset file", machine=False)
        cleanup.pop(token)
        assert not cleanup.changed_machine() or cleanup._machine_pid == os.getpid()
    before = cleanup._machine_pid
    try:
        cleanup._machine_pid = None
        cleanup.pop(cleanup.push(lambda: None, "a file", machine=False))
        assert not cleanup.changed_machine()
        cleanup.pop(cleanup.push(lambda: None, "a mount"))
        assert cleanup.changed_machine()
    finally:
        cleanup._machine_pid = before
