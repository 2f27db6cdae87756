"""The real tools' common part: finding them, and their timed window from tracefs records."""
import numpy as np
import pytest

from abtlab.machines import tool_runner
from abtlab.machines.tool_runner import (CREATE, FSYNC, WRITE_BEGIN, WRITE_END, Window, commits_in,
                                     find_tool, fsyncs_in, trace_scalars, window)
from abtlab.errors import ConfigError, RunError, UnavailableError
from abtlab.system.tracefs import commits_table, fsyncs_table, parse_line

# tracefs text as the kernel prints it (clock mono: seconds.microseconds): IOzone's
# start-up commit (tid 4), two threads writing and fsyncing, the commit covering both
# fsyncs (tid 5), and the commit of IOzone's own sync() after the test (tid 6).
TRACE = """\
 jbd2/loop3-8-77  [000] ..... 100.000100: jbd2_start_commit: dev 7,3 transaction 4 sync 0
 jbd2/loop3-8-77  [000] ..... 100.000900: jbd2_end_commit: dev 7,3 transaction 4 sync 0 head 3
   iozone-501  [001] ..... 100.200000: ext4_allocate_inode: dev 7,3 ino 12 dir 11 mode 0100640
   iozone-502  [000] ..... 100.500000: ext4_da_write_begin: dev 7,3 ino 12 pos 0 len 4096
   iozone-503  [001] ..... 100.500010: ext4_da_write_begin: dev 7,3 ino 13 pos 0 len 4096
   iozone-502  [000] ..... 100.500020: ext4_da_write_end: dev 7,3 ino 12 pos 0 len 4096 copied 4096
   iozone-503  [001] ..... 100.500030: ext4_da_write_end: dev 7,3 ino 13 pos 0 len 4096 copied 4096
   iozone-502  [000] ..... 100.500100: ext4_sync_file_enter: dev 7,3 ino 12 parent 11 datasync 0
   iozone-503  [001] ..... 100.500200: ext4_sync_file_enter: dev 7,3 ino 13 parent 11 datasync 0
 jbd2/loop3-8-77  [000] ..... 100.500300: jbd2_start_commit: dev 7,3 transaction 5 sync 0
 jbd2/loop3-8-77  [000] ..... 100.501300: jbd2_end_commit: dev 7,3 transaction 5 sync 0 head 4
   iozone-502  [000] ..... 100.501400: ext4_sync_file_exit: dev 7,3 ino 12 ret 0
   iozone-503  [001] ..... 100.501500: ext4_sync_file_exit: dev 7,3 ino 13 ret 0
 jbd2/loop3-8-77  [000] ..... 102.600000: jbd2_start_commit: dev 7,3 transaction 6 sync 0
 jbd2/loop3-8-77  [000] ..... 102.601000: jbd2_end_commit: dev 7,3 transaction 6 sync 0 head 5
"""
S = 1_000_000_000


def _events(text=TRACE):
    return [e for e in map(parse_line, text.splitlines()) if e]


def test_window_is_first_write_to_last_fsync_not_the_process():
    win = window(_events(), WRITE_BEGIN, FSYNC)
    assert win == Window(100 * S + 500_000_000, 100 * S + 501_500_000)
    commits = commits_in(commits_table(_events()), win)
    assert commits["tid"].tolist() == [5]   # not start-up's 4, not sync()'s 6
    fs = fsyncs_in(fsyncs_table(_events()), win)
    assert fs["ino"].tolist() == [12, 13]


def test_trace_scalars_use_abtlab_definitions():
    ev = _events()
    win = window(ev, WRITE_BEGIN, FSYNC)
    out = trace_scalars(commits_in(commits_table(ev), win), fsyncs_in(fsyncs_table(ev), win), win)
    assert out["commits"] == 1 and out["fsync_calls"] == 2
    assert out["elapsed"] == pytest.approx(0.0015)
    # each fsync waited from its start to the end of commit 5
    assert out["mean_commit_wait"] == pytest.approx(((1_300 - 100) + (1_300 - 200)) / 2 * 1e-6)
    assert out["mean_fsync"] == pytest.approx(((1_400 - 100) + (1_500 - 200)) / 2 * 1e-6)


def test_a_commit_running_when_the_window_opens_is_counted():
    text = TRACE.replace("100.000900: jbd2_end_commit: dev 7,3 transaction 4",
                         "100.500005: jbd2_end_commit: dev 7,3 transaction 4")
    ev = _events(text)
    assert commits_in(commits_table(ev), window(ev, WRITE_BEGIN, FSYNC))["tid"].tolist() == [4, 5]


def test_create_window_counts_regular_files_only():
    mkdir = "   mdtest-9  [000] ..... 99.000000: ext4_allocate_inode: dev 7,3 ino 11 dir 2 mode 040755\n"
    ev = _events(mkdir + TRACE)
    win = window(ev, CREATE, (*WRITE_END, *FSYNC))
    assert win.start == 100 * S + 200_000_000 and win.end == 100 * S + 501_500_000


def test_no_event_of_the_tool_is_an_error():
    with pytest.raises(RunError, match="ext4_allocate_inode"):
        window(_events(TRACE.replace("0100640", "040750")), CREATE, FSYNC)


def test_no_journal_no_commits():
    empty = {k: np.zeros(0, np.int64) for k in ("tid", "start", "end")}
    out = commits_in(empty, Window(0, 10))
    assert all(v.size == 0 for v in out.values()) and set(out) == set(empty)


def test_find_tool_option_env_path(tmp_path, monkeypatch):
    exe = tmp_path / "mdtest"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ABTLAB_MDTEST", raising=False)
    assert find_tool("mdtest", "ABTLAB_MDTEST") == exe
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UnavailableError, match="ABTLAB_MDTEST"):
        find_tool("mdtest", "ABTLAB_MDTEST")
    monkeypatch.setenv("ABTLAB_MDTEST", str(exe))
    assert find_tool("mdtest", "ABTLAB_MDTEST") == exe
    with pytest.raises(ConfigError, match="exe"):
        find_tool("mdtest", "ABTLAB_MDTEST", str(tmp_path / "nope"))
    monkeypatch.setenv("ABTLAB_MDTEST", str(tmp_path / "gone"))
    with pytest.raises(ConfigError, match="ABTLAB_MDTEST"):
        find_tool("mdtest", "ABTLAB_MDTEST")


def test_is_regular_reads_the_octal_mode():
    assert tool_runner.is_regular({"mode": 100644}) and not tool_runner.is_regular({"mode": 40755})
    assert not tool_runner.is_regular({"mode": "x"})


def test_iozone_second_untimed_fsync_per_file_is_left_out():
    again = """\
   iozone-502  [000] ..... 100.700000: ext4_sync_file_enter: dev 7,3 ino 12 parent 11 datasync 0
   iozone-502  [000] ..... 100.700050: ext4_sync_file_exit: dev 7,3 ino 12 ret 0
"""
    ev = tool_runner.first_fsyncs(_events(TRACE + again))
    win = window(ev, WRITE_BEGIN, FSYNC)
    assert win.end == 100 * S + 501_500_000
    assert fsyncs_in(fsyncs_table(ev), win)["ino"].tolist() == [12, 13]
    # without the filter the window runs on to the second fsync
    assert window(_events(TRACE + again), WRITE_BEGIN, FSYNC).end == 100 * S + 700_050_000
