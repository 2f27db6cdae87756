"""A guest point stopped at its deadline: the option is checked up front, /init is told,
and the error says what the CPUs and threads were doing (from snapshots given here)."""
import importlib
import subprocess
from pathlib import Path

import pytest

from abtlab.backends import get
from abtlab.backends.base import RunContext
from abtlab.errors import ConfigError, RunError
from abtlab.machines import guest, guest_point, guest_stall, host
from abtlab.machines.spec import parse_machine

STAT0 = "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 25 0 12 250 0 0 0 0 0 0\n"
STAT1 = "cpu  100 0 850 1100 0 40 10 0 0 0\ncpu0 25 0 212 275 0 10 3 0 0 0\n"
IRQ0 = "           CPU0       CPU1\n  0:         10          0   IO-APIC   timer\nLOC:        100        100   Local timer interrupts\nRES:          1          2   Rescheduling interrupts\n"
IRQ1 = "           CPU0       CPU1\n  0:         10          0   IO-APIC   timer\nLOC:       5100       4100   Local timer interrupts\nRES:         51         2   Rescheduling interrupts\n"
TASKS = ("1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 1 0 1 0 0 wchan=0\n"
         "90 (abt-iozone) R 1 90 1 0 -1 4194560 1 0 0 0 0 700 0 0 20 0 66 0 1 0 0 wchan=0\n"
         "91 (abt-iozone) S 1 90 1 0 -1 4194560 1 0 0 0 1 90 0 0 20 0 66 0 1 0 0 wchan=0\n"
         "92 (abt-iozone) S 1 90 1 0 -1 4194560 1 0 0 0 1 9 0 0 20 0 66 0 1 0 0 wchan=0\n")


def _files():
    return {"stalled": b"3000000\n", "before.stat": STAT0.encode(), "stall.stat": STAT1.encode(),
            "before.interrupts": IRQ0.encode(), "stall.interrupts": IRQ1.encode(),
            "stall.tasks": TASKS.encode()}


def test_the_deadline_is_a_duration_of_the_guests_clock_checked_before_any_run():
    assert host.deadline_us({"guest_deadline": "2s"}) == 2_000_000
    assert host.deadline_us({}) == 0
    for bad in ("2", "soon", "0ms", "2h"):
        with pytest.raises(ConfigError) as err:
            host.check_scratch_options({"guest_deadline": bad})
        assert err.value.field == "guest_deadline"


def test_init_is_told_the_deadline_and_where_tracing_starts():
    run = guest.GuestRun(argv=["echo"], deadline_us=3_000_000, trace_at_go=True)
    env = guest.point_env(run, 1)
    out = subprocess.run(["sh", "-c", env + 'echo "$DEADLINE_US|$TRACE_AT_GO"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == "3000000|1\n"
    plain = guest.point_env(guest.GuestRun(argv=["echo"]), 1)
    assert "DEADLINE_US" not in plain and "TRACE_AT_GO" not in plain


def _prepared(backend, monkeypatch, machine="guest", **options):
    """The driver's Prepared of one point (its program's path stood in for: nothing runs)."""
    module = importlib.import_module(f"abtlab.backends.{backend}")
    monkeypatch.setattr(module, "program", lambda name: Path("/x") / name)
    point = {"policy": "ext4", "threads": 4, "file_size": 64 << 10, "record_size": 32 << 10,
             "files": 2, "machine": machine}
    ctx = RunContext(workdir=Path("/tmp"), options=options)
    return get(backend).prepare(point, ctx)


def test_the_iozone_driver_says_when_its_start_is_traced_from_the_go(monkeypatch):
    """IOzone's polling start (asked for, or the default on the lock-step clock) is traced
    from its go; the barrier start and Metarates from the program's start."""
    lockstep = "guest:kernel=3.4.2,clock=lockstep,cpus=4"
    for machine, options, go in (("guest", {"start": "poll"}, True), ("guest", {}, False),
                                 (lockstep, {}, True), (lockstep, {"start": "barrier"}, False)):
        prep = _prepared("iozone", monkeypatch, machine, **options)
        assert prep.trace_from_go is go, (machine, options)
        argv = [str(a) for a in prep.argv_for("/d", 1.0, "/t")]
        assert argv[argv.index("--start") + 1] == ("poll" if go else "barrier")
    assert _prepared("metarates", monkeypatch).trace_from_go is False


def test_a_run_traced_from_its_go_writes_the_go_file_and_tells_init(tmp_path):
    ctx = RunContext(workdir=tmp_path, seed=1, freq_mode="virtual")
    point = {"policy": "ext4", "device": "none", "freq_ghz": 1.0}
    argv = lambda d, dilate, t: ["/x/abt-iozone", "--threads", "4", "--start", "poll"]
    machine = parse_machine("guest")
    at_go, _ = guest_point.guest_run(argv, point, ctx, 1 << 20, machine, trace_from_go=True)
    assert at_go.trace_at_go and at_go.argv[-2:] == ["--go-file", guest.GO_FILE]
    plain, _ = guest_point.guest_run(argv, point, ctx, 1 << 20, machine)
    assert not plain.trace_at_go and "--go-file" not in plain.argv


def test_the_summary_splits_cpu_time_and_counts_threads_by_state():
    files = _files()
    split = guest_stall.cpu_split(files)
    assert split["system"] == pytest.approx(800 / 950) and split["irq"] == pytest.approx(40 / 950)
    assert guest_stall.interrupt_counts(files) == {"LOC": 9000, "RES": 50}
    assert guest_stall.task_table(files)[1] == (90, "abt-iozone", "R", 700)
    text = guest_stall.summary(files, "abt-iozone")
    assert "system 84%" in text and "LOC 9000" in text
    assert "3 abt-iozone threads by state: S 2, R 1" in text
    assert "busiest tasks (CPU ticks): abt-iozone[90] 700" in text


def test_a_stalled_point_fails_with_its_summary_and_keeps_its_files(tmp_path):
    pres = guest.PointResult("ok", 137, "", "", {}, {}, _files())
    ctx = RunContext(workdir=tmp_path, seed=5, rep=1,
                     options={"guest_deadline": "3s", "guest_failed_dir": str(tmp_path / "st")})
    run = guest.GuestRun(argv=["/abt/abt-iozone"])
    with pytest.raises(RunError) as err:
        guest_point._point_result(pres, run, None, None, ctx, tmp_path)
    assert "did not end within guest_deadline=3s" in str(err.value)
    kept = list((tmp_path / "st").iterdir())
    assert len(kept) == 1 and (kept[0] / "stall.tasks").read_text() == TASKS
    assert str(kept[0]) in str(err.value)


def test_the_lockstep_clock_checks_markers_to_two_rounds():
    from abtlab.machines.spec import parse_machine
    assert guest_point.clock_slack_ns(parse_machine("guest:clock=lockstep,cpus=4,mhz=1600")) == 12500
    assert guest_point.clock_slack_ns(parse_machine("guest:cpus=4")) == 0
    line = "   abt-clockmark-328   [002] ...1     1.541270: tracing_mark_write: abtlab-clock-328-0\n"
    files = {"trace": line.encode(), "clock.after": b"abtlab-clock-328-0 1541261635 1541262215\n"}
    with pytest.raises(RunError, match="disagree"):
        guest_point.guest_events(files)
    assert len(guest_point.guest_events(files, slack_ns=12500)) == 1


def test_a_commits_phases_are_put_in_order_within_the_clocks_slack_only():
    import numpy as np
    t = {"tid": np.array([7, 8]), "start": np.array([1000, 5000]), "locking": np.array([1500, 6000]),
         "flushing": np.array([2000, -1]), "logging": np.array([2500, 7000]), "end": np.array([900, 8000])}
    out = guest_point.in_phase_order({k: v.copy() for k, v in t.items()}, slack_ns=2000)
    assert out["end"].tolist() == [2500, 8000] and out["flushing"].tolist() == [2000, -1]
    with pytest.raises(RunError, match="commit 7: its end event is 1.6 us before"):
        guest_point.in_phase_order({k: v.copy() for k, v in t.items()}, slack_ns=1000)
    same = guest_point.in_phase_order({k: v.copy() for k, v in t.items() if k != "end"} | {"end": np.array([3000, 8000])}, 0)
    assert same["end"].tolist() == [3000, 8000]


def test_records_that_fail_the_models_check_fail_their_run_not_the_sweep():
    import numpy as np
    from abtlab import trace
    from abtlab.data.result import RunResult
    ops = np.zeros(0, trace.RECORD_DTYPE)
    bad = {k: np.array([v]) for k, v in dict(tid=1, start=2000, locking=-1, flushing=-1,
                                                logging=-1, end=1000).items()}
    res = RunResult(scalars={}, ops=ops, commits=bad, batches=None, attrs={})
    with pytest.raises(RunError, match="fail the model's check"):
        host.add_measures(res, host.Prepared(None, 0, "iozone"))
