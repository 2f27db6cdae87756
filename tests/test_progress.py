"""Progress: shown from the first second with its phase named, and an ETA that does not
extrapolate a start-up (a guest's boot) over the runs after it."""
import io
import time

import pytest

from abtlab import progress as progress_mod
from abtlab.progress import Progress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(progress_mod.time, "monotonic", c)
    monkeypatch.delenv("ABTLAB_PROGRESS", raising=False)
    return c


def test_eta_leaves_the_boot_out_of_the_rate(clock):
    """6 points in one boot of 25 s, then 0.2 s a point: the old line said '1/6 25s,
    ETA 124s' for a run that ended at 26 s."""
    seen = {"k": 0}
    p = Progress(6, "iozone", stream=io.StringIO())
    try:
        with p.phase(lambda: ("boot of the guest", seen["k"]), runs=6):
            clock.t, seen["k"] = 25.0, 1
            p._poll_text()
            assert p.eta() is None                       # one finish: no rate yet, "ETA ?"
            assert "ETA ?" in p._text()[0]
            clock.t, seen["k"] = 25.2, 2
            p._poll_text()
            assert p.eta() == pytest.approx(4 * 0.2)     # not 4 x 12.6 s
    finally:
        p.close()


def test_eta_adds_each_boot_still_to_come_at_its_measured_length(clock):
    seen = {"k": 0}
    p = Progress(12, "iozone", stream=io.StringIO())
    try:
        with p.phase(lambda: ("kernel build: make", 0) if clock.t < 100 else ("boot", seen["k"]), runs=6):
            clock.t = 90.0
            p._poll_text()
            clock.t = 100.0                              # the build ends; the boot starts here
            p._poll_text()
            clock.t, seen["k"] = 125.0, 1
            p._poll_text()
            clock.t, seen["k"] = 126.0, 6
            p._poll_text()
            # 6 runs left at 0.2 s each, and one more boot of 25 s (the build not counted)
            assert p.eta() == pytest.approx(6 * 0.2 + 25.0)
    finally:
        p.close()


def test_guest_points_seen_inside_the_boot_are_counted_once(clock):
    seen = {"k": 0}
    p = Progress(3, "iozone", stream=io.StringIO())
    try:
        with p.phase(lambda: ("in the guest", seen["k"]), runs=3):
            for t, k in ((10.0, 1), (11.0, 2), (12.0, 3)):
                clock.t, seen["k"] = t, k
                p._poll_text()
        clock.t = 13.0
        p.step(n=1), p.step(n=1), p.step(n=1)            # the blocks arrive after the boot
        assert [c for _, c in p._finishes] == [1, 2, 3]
        assert p.eta() == 0.0
    finally:
        p.close()


def test_warm_up_runs_are_not_the_sweeps(clock):
    p = Progress(4, "iozone", stream=io.StringIO())
    try:
        with p.phase("warm-up", counts=False):
            with p.phase(lambda: ("boot", int(clock.t >= 20)), runs=1):
                clock.t = 20.0
                p._poll_text()
        assert p._finishes == [] and p.done == 0
        assert p._startups == [20.0]                     # but its boot is a measured boot
    finally:
        p.close()


def test_a_line_names_the_phase_before_any_run_finishes(monkeypatch):
    """No run has finished yet: the phase is on the stream while it lasts, from the redraw
    (every TICK s) alone. Event-based: the wait is a hang guard, not a target."""
    monkeypatch.delenv("ABTLAB_PROGRESS", raising=False)
    monkeypatch.setattr(progress_mod, "TICK", 0.05)
    out = io.StringIO()
    p = Progress(6, "iozone", stream=out)
    try:
        with p.phase("kernel build: make of the guest kernel and initramfs"):
            guard = time.monotonic() + 30
            while "kernel build" not in out.getvalue() and time.monotonic() < guard:
                time.sleep(0.01)
            assert "iozone 0/6 runs, kernel build: make" in out.getvalue()
            assert p.done == 0
    finally:
        p.close()


def test_off_and_quiet_write_nothing(monkeypatch):
    monkeypatch.setenv("ABTLAB_PROGRESS", "off")
    out = io.StringIO()
    p = Progress(2, "sim", stream=out)
    with p.phase("boot"):
        p.step(n=2)
    p.close()
    assert out.getvalue() == ""


def test_a_sim_run_ends_with_its_count(capsys, monkeypatch):
    monkeypatch.delenv("ABTLAB_PROGRESS", raising=False)
    import abtlab
    abtlab.run("sim", threads="16", file_size="64k", record_size="32k", freq="1.6,3.3", reps=2)
    err = capsys.readouterr().err
    assert "sim 4/4 runs" in err and "ETA 0 s" in err


def test_boot_watch_reads_the_phase_from_the_guest_files(tmp_path):
    from abtlab.machines.guest_point import BootWatch
    w = BootWatch(tmp_path, 3, "guest:clock=virtual")
    assert w() == ("kernel build: make of the guest kernel and initramfs", 0)
    (tmp_path / "guest-initrd.gz").write_bytes(b"x")
    assert w() == ("boot of the guest (guest:clock=virtual) and point 1/3", 0)
    res = tmp_path / "guest-results.txt"
    res.write_bytes(b"abtlab-slot 1\nAAAA\nabtlab-end 1\nabtlab-slot 2\nBB")
    assert w() == ("in the guest: point 2/3", 1)
    with open(res, "ab") as f:
        f.write(b"BB\nabtlab-end 2\nabtlab-slot 3\nabtlab-end 3\nabtlab-slot 0\nabtlab-end 0\n")
    assert w() == ("in the guest: 3 points done, shutting down", 3)


def test_jupyter_draws_a_tqdm_bar_with_the_phase_and_honest_eta(monkeypatch):
    """In Jupyter the line is a tqdm.auto bar (a widget there; its text form here)."""
    monkeypatch.delenv("ABTLAB_PROGRESS", raising=False)
    monkeypatch.setattr(progress_mod, "_in_jupyter", lambda: True)
    p = Progress(6, "iozone", stream=io.StringIO())
    try:
        with p.phase("boot of the guest (guest) and point 1/6", runs=6):
            p._draw()
            bar = p._bar
            assert bar is not None and bar.total == 6
            assert "boot of the guest" in bar.desc and "ETA ?" in str(bar.postfix)
        p.step(n=6)
    finally:
        p.close()
    assert p._bar is None                                # closed with the work


def test_a_log_gets_a_line_per_phase_not_per_run(clock):
    out = io.StringIO()
    p = Progress(100, "sim", stream=out)
    try:
        with p.phase("warm-up (1 discarded run)", counts=False):
            pass
        for k in range(99):
            p.step(f"point {k}")
        assert out.getvalue().count("\n") == 1                    # the warm-up's line only
        p.step("last")
    finally:
        p.close()
    p._draw()                                                      # a tick after the end
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[-1].startswith("sim 100/100 runs, done")


def test_runs_seen_inside_a_boot_stay_counted_until_they_arrive(clock):
    """After the boot's phase ends its points are still done, not back to 0/n."""
    seen = {"k": 0}
    p = Progress(4, "iozone", stream=io.StringIO())
    try:
        with p.phase(lambda: ("in the guest", seen["k"]), runs=4):
            clock.t, seen["k"] = 30.0, 4
            p._poll_text()
        assert p._text()[0].startswith("iozone 4/4 runs")
        for _ in range(4):
            p.step(n=1)
        assert p.done == 4 and p._inner == 0
    finally:
        p.close()


def test_a_boot_inside_the_warm_up_says_so(clock):
    p = Progress(4, "iozone", stream=io.StringIO())
    try:
        with p.phase("warm-up (1 discarded run)", counts=False):
            with p.phase(lambda: ("boot of the guest (guest) and point 1/1", 0), runs=1):
                assert "runs, warm-up: boot of the guest" in p._text()[0]
    finally:
        p.close()
