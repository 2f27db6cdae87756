"""A few trials of benchmarks/faults: a signal at a random (seeded) moment of a real run
or sweep, or two runs at once, and nothing may be left on the machine afterwards. The
full-size run (100+ trials per kind) is `python -m benchmarks.faults`."""
from __future__ import annotations

from dataclasses import asdict

import pytest

from benchmarks import faults

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture
def dirs(tmp_path, built_native):
    work, tmpdir = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmpdir.mkdir()
    return work, tmpdir


@pytest.mark.parametrize("kind, index", [("run-int", 0), ("run-term", 1), ("run-kill", 2),
                                         ("sweep-term", 3), ("sweep-kill", 4),
                                         ("concurrent", 5)])
def test_a_fault_leaves_nothing_behind(dirs, kind, index):
    # 6 s is about one undisturbed run here: the signal lands anywhere in [0, 7.2] s
    trial = faults.run_trial(kind, index, seed=0, duration=6.0, work=dirs[0], tmpdir=dirs[1])
    assert not trial.hung
    assert trial.wrong == "" and trial.left == {}, trial


@pytest.mark.parametrize("index", [0, 1, 5, 11])
def test_a_signal_in_the_final_write_leaves_nothing_behind(dirs, index):
    """Trial 0 draws SIGKILL (then `abtlab cleanup`), 1 SIGINT, 5 SIGTERM and 11 SIGKILL,
    each then resumed (odd trials), which must keep each repetition once."""
    # 0.3 s is about the dataset's write here
    trial = faults.run_trial("final-write", index, seed=0, duration=0.3, work=dirs[0],
                             tmpdir=dirs[1])
    assert not trial.hung and trial.signal in faults.SIGNALS
    # a signal a library's finalizer swallowed is raised again later: counted apart
    assert trial.wrong == "" or faults._in_finalizer(asdict(trial)), trial
    assert trial.left == {}, trial


def test_the_check_sees_what_is_left_beside_the_outputs(dirs):
    """A torn dataset file beside an output and the out-lock of a killed writer count."""
    from abtlab.system.runlock import lock_dir
    work, tmpdir = dirs
    before = faults.snapshot(tmpdir, work)
    torn = work / ".r.nc.tmp-4242"
    torn.write_bytes(b"partial")
    lock = lock_dir() / "out-faultsprobe0000.lock"
    lock.write_text(f"pid 4242: {work / 'r.nc'}\n")
    try:
        left = faults.left_since(before, tmpdir, work)
    finally:
        lock.unlink()
    assert left["out temp"] == [str(torn)]
    assert left["lock"] == [f"{lock.name}: pid 4242: {work / 'r.nc'}"]


def test_a_killed_guest_run_leaves_no_qemu(dirs, built_guest):
    # a guest run of two points takes ~20 s here (boot included); the guest is built
    # first, so the signal lands in the run and not in the one-time build
    trial = faults.run_trial("guest-kill", 6, seed=0, duration=20.0, work=dirs[0], tmpdir=dirs[1])
    assert not trial.hung
    assert trial.wrong == "" and trial.left == {}, trial


def test_the_check_sees_what_a_run_leaves(dirs):
    """The check can fail: a loop device attached behind its back is reported; one on
    an image outside the trial's TMPDIR (another user's run meanwhile) is not."""
    import subprocess
    work, tmpdir = dirs
    before = faults.snapshot(tmpdir)
    img, other = tmpdir / "abtlab-probe.img", work / "abtlab-other.img"
    devs = []
    try:
        for f in (img, other):
            f.write_bytes(b"\0" * 2 ** 20)
            devs.append(subprocess.run(["losetup", "-f", "--show", str(f)], capture_output=True,
                                       text=True, check=True).stdout.strip())
        left = faults.left_since(before, tmpdir)
    finally:
        for dev in devs:
            subprocess.run(["losetup", "-d", dev], check=True)
    assert left["loop"] == [f"{devs[0]} on {img}"]
    assert left["temp"] == [str(img)]


def test_the_check_counts_the_trials_processes_only(dirs, monkeypatch):
    """A process started under the trial's TMPDIR is a leftover; the same program
    started by somebody else on the machine meanwhile is not."""
    import shutil
    import subprocess
    work, tmpdir = dirs
    monkeypatch.setattr(faults, "PROCESS_EXIT", 0.0)
    prog = work / "abt-probe"
    shutil.copy("/bin/sleep", prog)
    before = faults.snapshot(tmpdir)
    ours = subprocess.Popen([prog, "30"], env={"TMPDIR": str(tmpdir)})
    other = subprocess.Popen([prog, "30"], env={"TMPDIR": str(work)})
    try:
        left = faults.left_since(before, tmpdir)
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
    assert left["process"] == [f"abt-probe (pid {ours.pid})"]
