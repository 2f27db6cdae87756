"""A point in the guest gives the host's RunResult: op records, the tracefs per-commit
table parsed from the guest's trace, commit counts, geometry and the machine's attrs
(the guest itself faked: its /out files are given)."""
import re
from pathlib import Path

import numpy as np
import pytest

from abtlab import policies, trace
from abtlab.machines import dispatch, guest_point, host
from abtlab.backends.base import RunContext
from abtlab.errors import ConfigError, RunError
from abtlab.machines.spec import parse_machine
from abtlab.machines import guest
from abtlab.system import cleanup

DATA = Path(__file__).resolve().parents[1] / "fixtures"
INFO0 = "3 transactions (1 requested), each up to 8192 blocks\n0 delayjc windows, 0 delayjc resets\n"
INFO1 = "5 transactions (3 requested), each up to 8192 blocks\n4 delayjc windows, 11 delayjc resets\n"


def _argv(data_dir, dilate, tpath):
    return ["/x/backends/iozone/abt-iozone", "--threads", 2, "--dir", data_dir,
            "--dilate", f"{dilate:.6f}", "--trace", tpath]


def _commit(tid, t0_us):
    ev = ["jbd2_start_commit", "jbd2_commit_locking", "jbd2_commit_flushing", "jbd2_commit_logging"]
    lines = [f"  jbd2/nullb1-8-60 [000] ..... 1.{t0_us + i:06d}: {e}: dev 252,1 transaction {tid} sync 0"
             for i, e in enumerate(ev)]
    lines.append(f"  jbd2/nullb1-8-60 [000] ..... 1.{t0_us + 8:06d}: jbd2_run_stats: dev 252,1 tid {tid} "
                 "wait 0 request_delay 0 running 4 locked 0 flushing 0 logging 1 handle_count 2 "
                 "blocks 7 blocks_logged 9")
    lines.append(f"  jbd2/nullb1-8-60 [000] ..... 1.{t0_us + 9:06d}: jbd2_end_commit: dev 252,1 "
                 f"transaction {tid} sync 0 head 1")
    return lines


def _files(tmp_path, marker_us=(100, 900)):
    ops = np.zeros(2, trace.RECORD_DTYPE)
    ops["op"] = int(trace.Op.FSYNC)
    ops["t_start_ns"], ops["t_end_ns"] = [1_000_200_000, 1_000_300_000], [1_000_400_000, 1_000_500_000]
    trace.write(tmp_path / "ops.trace", ops)
    # as the guest prints them: no kallsyms, the marker's caller is an address
    marks = [f"  abt-clockmark-9 [000] ..... 1.{us:06d}: 0xffffffff810a48ac: abtlab-clock-9-{i}"
             for i, us in enumerate(marker_us)]
    text = "\n".join(marks[:1] + _commit(2, 150) + _commit(3, 410) + marks[1:]) + "\n"
    return {"status": b"ok\n", "rc": b"0\n", "stdout": b"", "stderr": b"", "trace": text.encode(),
            "trace.stats": b"overrun: 0\ndropped events: 0\n",
            "clock.before": b"abtlab-clock-9-0 1000099500 1000100500\n",
            "clock.after": b"abtlab-clock-9-1 1000899500 1000900500\n",
            "info.before": INFO0.encode(), "info.after": INFO1.encode(),
            "dumpe2fs": (DATA / "dumpe2fs_4k_journal32.txt").read_bytes(),
            "knobs": b"/sys/module/jbd2/parameters/delayjc_window_us 2000\n",
            "ops.trace": (tmp_path / "ops.trace").read_bytes()}


def _fake_boot(monkeypatch, files, seen):
    def boot_batch(runs, machine, workdir, **kw):
        seen.update(runs=runs, machine=machine, **kw)
        return guest.GuestResult([guest._point(files)], "console", "", 1.0)
    monkeypatch.setattr(guest, "boot_batch", boot_batch)


def test_guest_point_has_ops_commits_and_machine_attrs(tmp_path, monkeypatch):
    seen = {}
    _fake_boot(monkeypatch, _files(tmp_path), seen)
    ctx = RunContext(workdir=tmp_path, seed=7, freq_mode="emulated", f_ref_ghz=3.3)
    point = {"policy": "kdelayjc:window=2ms,max_resets=8", "device": "hdd7200", "freq_ghz": 1.65,
             "machine": "guest:shift=1"}
    res = dispatch.run_in_guest(_argv, point, ctx, 1 << 20, parse_machine("guest:shift=1"))
    run = seen["runs"][0]
    assert run.argv[:3] == ["/abt/abt-iozone", "--threads", "2"] and "2.000000" in run.argv
    assert run.knobs[:2] == [(guest_point.DELAYJC_KNOBS[0], 8), (guest_point.DELAYJC_KNOBS[1], 2000)]
    # then the kernel knobs of abtlab.machines.kernel_knobs, for this point's disk nullb1
    assert run.knobs[-1] == ("/sys/block/nullb1/queue/scheduler", "none")
    assert res.attrs["kernel_preset"] == "6.1" and res.attrs["kernel_iosched"] == "none"
    assert run.disk.disk_model == "hdd7200" and "jbd2/jbd2_end_commit" in seen["events"]
    assert "sched/sched_switch" in seen["events"]   # why the writes slept (model.waits)
    assert run.mkfs_args[run.mkfs_args.index("-b") + 1] == "4096"
    assert res.commits["tid"].tolist() == [3]        # tid 2 ended before the first op began
    assert res.commits["handles"].tolist() == [2] and res.commits["end"].tolist() == [1_000_419_000]
    assert res.scalars["jbd2_info_commits"] == 2.0 and res.ops.size == 2
    assert res.attrs["clock"] == "virtual" and res.attrs["machine"] == "guest:shift=1"
    assert res.attrs["fs_block_size"] == 4096 and res.attrs["freq_mode"] == "emulated"
    assert (res.attrs["delayjc_windows"], res.attrs["delayjc_resets"]) == (4, 11)
    assert "delayjc_window_us 2000" in res.attrs["guest_knobs_read_back"]
    assert "null_blk" in res.attrs["device"] and not list(tmp_path.glob("guest-*"))


def test_same_seed_same_filesystem_identity():
    pol = policies.parse("ext4")
    ctx = RunContext(workdir=".")
    a, b = guest_point._mkfs_args(pol, ctx, 5), guest_point._mkfs_args(pol, ctx, 5)
    assert a == b and a != guest_point._mkfs_args(pol, ctx, 6)
    e = a[a.index("-E") + 1]
    assert "lazy_itable_init=0" in e and f"hash_seed={a[a.index('-U') + 1]}" in e
    assert "lazy_journal_init=1" in e    # a fresh null_blk reads zeros: nothing to zero
    assert "^has_journal" in guest_point._mkfs_args(policies.parse("nojc"), ctx, 5)


def test_trace_on_another_clock_fails_the_point(tmp_path, monkeypatch):
    files = _files(tmp_path, marker_us=(100, 990))   # a marker outside its two clock reads
    _fake_boot(monkeypatch, files, {})
    with pytest.raises(RunError, match="disagree"):
        dispatch.run_in_guest(_argv, {"policy": "ext4", "device": "none"},
                                 RunContext(workdir=tmp_path), 1, "guest")


def test_a_cpus_trace_stepping_back_fails_the_point(tmp_path, monkeypatch):
    """Linux 3.4's ring buffer stamped a page's events late by the gap before its first
    event; the trace file lists each CPU's events in written order, so the next page
    steps back. One CPU's events in order, or two CPUs interleaved, pass."""
    files = _files(tmp_path)
    lines = files["trace"].decode().splitlines()
    # commit 3's events on CPU 0 stamped 60 us late (its end at 479 us), then one at 430 us
    late = [re.sub(r"1\.0004(1\d):", lambda m: f"1.0004{int(m[1]) + 60}:", ln) for ln in lines]
    late.insert(-1, "  kworker/0:1-7 [000] ..... 1.000430: jbd2_checkpoint: dev 252,1 result 0")
    _fake_boot(monkeypatch, {**files, "trace": ("\n".join(late) + "\n").encode()}, {})
    with pytest.raises(RunError, match="steps back 49.0 us on CPU 0"):
        dispatch.run_in_guest(_argv, {"policy": "ext4", "device": "none"},
                              RunContext(workdir=tmp_path), 1, "guest")
    events = [{"cpu": c, "ts": t} for c, t in ((0, 10), (1, 5), (0, 12), (1, 6), (0, 11))]
    assert guest_point.cpu_step_back(events[:4]) is None           # each CPU in order
    assert "steps back 0.0 us on CPU 0" in guest_point.cpu_step_back(events)
    assert guest_point.cpu_step_back(events, slack_ns=1) is None   # within the clock's slack


def test_failed_point_names_its_step_and_lost_events_fail(tmp_path, monkeypatch):
    _fake_boot(monkeypatch, {**_files(tmp_path), "status": b"mkfs\n"}, {})
    with pytest.raises(RunError, match="failed at 'mkfs'"):
        dispatch.run_in_guest(_argv, {"policy": "ext4"}, RunContext(workdir=tmp_path), 1, "guest")
    _fake_boot(monkeypatch, {**_files(tmp_path), "trace.stats": b"overrun: 12\n"}, {})
    with pytest.raises(RunError, match="12 trace events lost.*guest_trace_kb"):
        dispatch.run_in_guest(_argv, {"policy": "ext4"}, RunContext(workdir=tmp_path), 1, "guest")


def test_trace_buffer_is_a_run_option_checked_before_the_boot(tmp_path, monkeypatch):
    seen = {}
    _fake_boot(monkeypatch, _files(tmp_path), seen)
    dispatch.run_in_guest(_argv, {"policy": "ext4"}, RunContext(workdir=tmp_path), 1, "guest")
    assert seen["trace_kb"] == guest.DEFAULT_TRACE_KB
    ctx = RunContext(workdir=tmp_path, options={"guest_trace_kb": 65536})
    dispatch.run_in_guest(_argv, {"policy": "ext4"}, ctx, 1, "guest")
    assert seen["trace_kb"] == 65536
    for bad in ("lots", 512, True):
        with pytest.raises(ConfigError) as err:
            host.check_scratch_options({"guest_trace_kb": bad})
        assert err.value.field == "guest_trace_kb"


def test_real_frequencies_are_refused_before_the_guest_boots(tmp_path, monkeypatch):
    monkeypatch.setattr(guest, "boot_batch", lambda *a, **k: pytest.fail("booted"))
    ctx = RunContext(workdir=tmp_path, freq_mode="real", f_ref_ghz=3.3)
    with pytest.raises(ConfigError) as err:
        dispatch.run_in_guest(_argv, {"policy": "ext4", "freq_ghz": 1.6}, ctx, 1, "guest")
    assert err.value.field == "freq"


def test_failure_inside_the_guest_leaves_no_qemu_or_files(tmp_path, monkeypatch):
    """A real boot_batch with qemu replaced by a script that fails: nothing is left."""
    kernel, rd = tmp_path / "bz", tmp_path / "base.gz"
    kernel.write_bytes(b"k")
    rd.write_bytes(b"r")
    monkeypatch.setattr(guest, "ensure_built", lambda **kw: (kernel, rd))
    monkeypatch.setattr(guest, "qemu_argv", lambda *a: ["sh", "-c", "echo Kernel panic; exit 1", "x"])
    work = tmp_path / "w"
    with pytest.raises(RunError, match="qemu exited 1"):
        dispatch.run_in_guest(_argv, {"policy": "ext4"}, RunContext(workdir=work), 1, "guest")
    assert not list(work.glob("guest-*")) and not any("guest" in p for p in cleanup.pending())


def test_a_workload_exit_in_the_guest_follows_the_host_convention(tmp_path, monkeypatch):
    """Exit 2 (bad argument) in the guest is the ConfigError it is on the host, naming the
    option; another exit is a RunError with the program's message."""
    from abtlab.errors import ConfigError
    ctx = RunContext(workdir=tmp_path, seed=7, freq_mode="emulated", f_ref_ghz=3.3)
    point = {"policy": "ext4", "device": "none", "freq_ghz": 3.3, "machine": "guest"}
    for rc, err, raised in ((2, b"abt-iozone: --threads: given 0; accepted 1..4096\n", ConfigError),
                            (1, b"abt-iozone: write: No space left on device\n", RunError)):
        files = {**_files(tmp_path), "rc": f"{rc}\n".encode(), "stderr": err}
        _fake_boot(monkeypatch, files, {})
        with pytest.raises(raised) as e:
            dispatch.run_in_guest(_argv, point, ctx, 1 << 20, parse_machine("guest"))
        assert ("threads" == e.value.field) if rc == 2 else "No space left" in str(e.value)


def test_the_legacy_preset_mounts_with_dioread_lock(tmp_path):
    """legacy=dioread_lock reaches the guest's mount options beside the policy's own."""
    ctx = RunContext(workdir=tmp_path, seed=1, freq_mode="emulated", f_ref_ghz=3.3,
                     options={"mount_options": "commit=1"})
    point = {"policy": "ext4", "device": "none", "freq_ghz": 3.3}
    legacy, _ = guest_point.guest_run(_argv, point, ctx, 1 << 20, parse_machine("guest:kernel=6.1-legacy"))
    stock, _ = guest_point.guest_run(_argv, point, ctx, 1 << 20, parse_machine("guest"))
    assert legacy.mount_options.split(",")[-2:] == ["commit=1", "dioread_lock"]
    assert "dioread_lock" not in stock.mount_options


def test_lockstep_repetitions_start_at_their_own_seeded_phase():
    """Virtual time repeats exactly: on the lock-step clock each repetition waits its own
    seeded phase of a drive turn first; the same seed and rep give the same wait; the icount
    clock keeps none unless asked; a bad value is refused naming the option."""
    ls, vc = parse_machine("guest:clock=lockstep,cpus=4"), parse_machine("guest")
    waits = [guest_point.start_phase_us(RunContext(workdir=".", rep=r, seed=7), ls) for r in range(6)]
    assert len(set(waits)) == 6 and all(0 <= w < guest_point.TURN_US for w in waits)
    assert waits[2] == guest_point.start_phase_us(RunContext(workdir=".", rep=2, seed=7), ls)
    assert guest_point.start_phase_us(RunContext(workdir=".", rep=-1, seed=7), ls) >= 0  # warm-up
    assert guest_point.start_phase_us(RunContext(workdir=".", rep=1, seed=7), vc) == 0
    on = RunContext(workdir=".", rep=1, seed=7, options={"start_phase": "seeded"})
    assert guest_point.start_phase_us(on, vc) > 0
    off = RunContext(workdir=".", rep=1, seed=7, options={"start_phase": "none"})
    assert guest_point.start_phase_us(off, ls) == 0
    with pytest.raises(ConfigError) as err:
        host.check_scratch_options({"start_phase": "random"})
    assert err.value.field == "start_phase"


def test_the_start_phase_is_waited_before_the_workload_in_the_guest():
    import subprocess
    run = guest.GuestRun(argv=["echo", "go"], pre_sleep_us=1500)
    env = guest.point_env(run, 1)
    assert "run_workload() { usleep 1500; env" in env
    out = subprocess.run(["sh", "-c", env.replace("usleep", "echo slept") + "run_workload\n"],
                         capture_output=True, text=True, check=True).stdout
    assert out == "slept 1500\ngo\n"
    assert "usleep" not in guest.point_env(guest.GuestRun(argv=["echo"]), 1)
