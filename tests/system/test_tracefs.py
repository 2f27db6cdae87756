"""Journal tracing: parsing, the per-commit table, the clock proof, /proc cross-check."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from abtlab.errors import ConfigError
from abtlab.system import cleanup
from abtlab.system.tracefs import JournalTrace, clock_check, commits_table, fsyncs_table, parse_line

LINES = """\
# tracer: nop
    jbd2/loop0-8-7993    [000] .....   421.136127: jbd2_start_commit: dev 7,0 transaction 2 sync 0
    jbd2/loop0-8-7993    [000] .....   421.136128: jbd2_commit_locking: dev 7,0 transaction 2 sync 0
    jbd2/loop0-8-7993    [000] .....   421.136131: jbd2_commit_flushing: dev 7,0 transaction 2 sync 0
    jbd2/loop0-8-7993    [000] .....   421.136134: jbd2_commit_logging: dev 7,0 transaction 2 sync 0
    jbd2/loop0-8-7993    [000] .....   421.136894: jbd2_run_stats: dev 7,0 tid 2 wait 0 request_delay 0 running 4 locked 0 flushing 0 logging 1 handle_count 4 blocks 7 blocks_logged 9
    jbd2/loop0-8-7993    [000] .....   421.136895: jbd2_end_commit: dev 7,0 transaction 2 sync 0 head 1
         python 3.11-7988    [001] ...1.   421.135806: ext4_sync_file_enter: dev 7,0 ino 12 parent 2 datasync 0
         python 3.11-7988    [001] ...1.   421.136901: ext4_sync_file_exit: dev 7,0 ino 12 ret 0
    jbd2/loop0-8-7993    [000]   421.200000: jbd2_start_commit: dev=7340032 transaction=3 sync_commit=0 newfield=1
    jbd2/loop0-8-7993    [000]   421.200001: jbd2_end_commit: dev=7340032 transaction=3 sync_commit=0
"""


def _events():
    return [e for e in map(parse_line, LINES.splitlines()) if e]


def test_parse_line_reads_time_event_and_fields():
    ev = _events()
    assert len(ev) == 10
    first = ev[0]
    assert first["ts"] == 421_136_127_000 and first["event"] == "jbd2_start_commit"
    assert first["dev"] == (7 << 20) and first["transaction"] == 2
    assert first["comm"] == "jbd2/loop0-8" and first["pid"] == 7993 and first["cpu"] == 0
    assert ev[6]["comm"] == "python 3.11" and ev[6]["ino"] == 12
    assert ev[8]["newfield"] == 1 and ev[8]["dev"] == 7340032  # key=value style kernels
    assert parse_line("# tracer: nop") is None


def test_commits_table_joins_phases_and_run_stats():
    c = commits_table(_events())
    assert list(c["tid"]) == [2, 3]
    assert c["start"][0] == 421_136_127_000 and c["end"][0] == 421_136_895_000
    assert c["locking"][0] < c["flushing"][0] < c["logging"][0] < c["end"][0]
    assert (c["handles"][0], c["blocks"][0], c["blocks_logged"][0]) == (4, 7, 9)
    assert (c["running_ms"][0], c["logging_ms"][0]) == (4, 1)
    assert c["locking"][1] == -1 and c["handles"][1] == -1  # missing events stay visible


def test_commit_without_end_is_left_out():
    ev = [e for e in _events() if not (e["event"] == "jbd2_end_commit" and e["transaction"] == 3)]
    assert list(commits_table(ev)["tid"]) == [2]


def test_fsyncs_table_pairs_enter_and_exit():
    f = fsyncs_table(_events())
    assert list(f["ino"]) == [12] and f["exit"][0] - f["enter"][0] == 1_095_000


def test_bad_dev_t_is_refused():
    with pytest.raises(ConfigError) as err:
        JournalTrace("7:0")
    assert err.value.field == "dev_t"


@pytest.mark.root
def test_mono_clock_agrees_with_clock_monotonic():
    check = clock_check(samples=5)
    assert check.ok, str(check)
    assert len(check.samples) == 5
    assert all(b - check.resolution_ns < t <= a for b, t, a in check.samples)


@pytest.mark.root
def test_clock_check_can_fail():
    # The raw counter clock is not in ns: the markers cannot fall between the stamps.
    assert not clock_check(samples=2, clock="counter").ok


def _fsync_files(mnt: Path, n: int):
    for i in range(n):
        fd = os.open(mnt / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o644)
        try:
            os.write(fd, b"y" * 8192)
            os.fsync(fd)
        finally:
            os.close(fd)


@pytest.mark.root
def test_commit_count_matches_proc_and_only_our_device(scratch_ext4, tmp_path):
    from abtlab.system.scratchfs import ScratchFS
    fs = scratch_ext4
    with ScratchFS(size_mb=128, workdir=tmp_path) as other, JournalTrace(fs.dev_t) as tr:
        path = tr.path
        assert path.name.startswith(f"abtlab-{os.getpid()}-")
        assert (path / "trace_clock").read_text().find("[mono]") >= 0
        before = fs.commits()
        _fsync_files(fs.mountpoint, 6)
        _fsync_files(other.mountpoint, 3)  # another journal: must not appear
        after = fs.commits()
        c, f = tr.commits(), tr.fsyncs()
        devs = {e["dev"] for e in tr.read() if "dev" in e}
        assert tr.lost() == 0
    assert not path.exists()
    assert devs == {fs.dev_t}
    assert len(c["tid"]) == after - before >= 6
    assert np.all(c["end"] >= c["start"]) and np.all(c["start"] > 0)
    assert np.all(c["handles"] >= 1) and np.all(c["blocks"] >= 1)
    assert len(f["ino"]) == 6
    # every fsync returned after the end of a commit that started after it began
    for enter, exit_ in zip(f["enter"], f["exit"]):
        assert np.any((c["start"] >= enter) & (c["end"] <= exit_))


@pytest.mark.root
def test_instance_removed_after_exception(scratch_ext4):
    with pytest.raises(RuntimeError):
        with JournalTrace(scratch_ext4.dev_t) as tr:
            path = tr.path
            raise RuntimeError("boom")
    assert not path.exists()


@pytest.mark.root
def test_mounts_tracefs_when_missing_and_unmounts_only_its_own(tmp_path):
    where = tmp_path / "tracing"
    where.mkdir()
    try:
        check = clock_check(samples=1, root=where)  # mounts a tracefs at `where`, once
        assert check.ok and os.path.ismount(where)
        assert clock_check(samples=1, root=where).ok
        assert f"unmount {where}" in cleanup.pending()
        cleanup.run_all()                           # what the end of the process does
        assert not os.path.ismount(where)
        os.system(f"mount -t tracefs nodev {where}")
        assert clock_check(samples=1, root=where).ok
        assert cleanup.pending() == []
        assert os.path.ismount(where)  # it was mounted before: left mounted
    finally:
        if os.path.ismount(where):
            os.system(f"umount {where}")


@pytest.mark.root
def test_a_programs_fsync_sleeps_on_the_commit_and_its_stack_says_so(scratch_ext4):
    import subprocess
    from abtlab.system.sleeps import offcpu_table
    mnt = Path(scratch_ext4.mountpoint)
    with JournalTrace(scratch_ext4.dev_t, sleeps_of="dd") as tr:
        # the kernel decides, read from tracefs itself: JournalTrace's own check is under test
        if not (tr.root / "events" / "sched" / "sched_switch" / "trigger").exists():
            pytest.skip("this kernel's tracefs has no sched_switch trigger (stack traces)")
        assert tr.stacks
        trigger = tr.path / "events" / "sched" / "sched_switch" / "trigger"
        assert "stacktrace" in trigger.read_text()
        # dd real-time (SCHED_FIFO): woken from its data's writeback, it asks for the
        # commit at once, while the commit (which waits for that data, then writes the log
        # and flushes) still runs. A time-shared dd could be left runnable until a commit
        # had come and gone, and then its fsync found nothing to wait for.
        for i in range(3):
            subprocess.run(["chrt", "--fifo", "1", "dd", "if=/dev/zero", f"of={mnt}/dd{i}",
                            "bs=64k", "count=4", "conv=fsync"], check=True, capture_output=True)
        t = offcpu_table(tr.lines(), "dd")
    assert not tr.path.exists()   # trigger and events off, the instance removed
    # dd's fsync waits for the commit in jbd2_log_wait_commit: D, named from its stack
    assert "journal_other" in set(t["cause"]), sorted(set(t["cause"]))
    assert t["stacked"].any() and np.all(t["t_in"] > t["t_out"])
    with pytest.raises(ConfigError, match="sleeps_of"):
        JournalTrace(scratch_ext4.dev_t, sleeps_of="no spaces")
