"""Why a workload's threads were off the CPU: sched_switch intervals and their kernel stacks.

The guest (backends/kernel/init.sh) enables `sched/sched_switch` filtered to the
workload's command name and records the kernel stack of every switch-out of its threads
(6.1: a `stacktrace` trigger; 3.4: `options/stacktrace`, which stacks every event). An
off-CPU interval runs from a thread's switch-out to its next switch-in; its cause is
read from the state it left in and from the stack:

    preempted (R, R+)   cpu          it was runnable and waited for a CPU
    D in wait_transaction_locked / _switching
                        t_locked     a handle start waited while a commit held the
                                     transaction locked (3.4: every buffered write page)
    D in do_get_write_access
                        shadow       a buffer the commit was writing to the log
    D in start_this_handle (log space), jbd2_log_wait_commit
                        journal_other  other waits on the journal
    D in balance_dirty_pages          dirty (dirty-page throttling)
    D on a page lock / writeback      page
    D on an inode rwsem or mutex      inode_lock (its holder may itself wait on the journal)
    D elsewhere, or S                 other

The first rule that matches from the top of the stack wins, so the frame nearest the
sleep decides. Times are the trace's (CLOCK_MONOTONIC ns, as the op records).
"""
from __future__ import annotations

import re

import numpy as np

from .tracefs import parse_line

__all__ = ["CAUSES", "JOURNAL_CAUSES", "cause_of", "offcpu_table", "oncpu_table", "switch_tables", "comm_of"]

CAUSES = ("cpu", "t_locked", "shadow", "journal_other", "dirty", "page", "inode_lock", "other")
JOURNAL_CAUSES = ("t_locked", "shadow", "journal_other")
# (cause, frames): the first frame from the stack's top found in a rule names the cause
_RULES = (
    ("t_locked", ("wait_transaction_locked", "wait_transaction_switching")),
    ("shadow", ("do_get_write_access",)),
    ("journal_other", ("start_this_handle", "add_transaction_credits", "jbd2_log_wait_commit",
                 "__jbd2_log_wait_for_space", "jbd2_journal_wait_updates")),
    ("dirty", ("balance_dirty_pages",)),
    ("page", ("__lock_page", "__folio_lock", "folio_wait_bit_common", "wait_on_page_bit",
              "folio_wait_writeback", "wait_on_page_writeback", "folio_wait_stable",
              "wait_for_stable_page", "__lock_page_killable", "sleep_on_page")),
    ("inode_lock", ("rwsem_down_write_slowpath", "rwsem_down_read_slowpath",
                    "rwsem_down_write_failed", "rwsem_down_read_failed", "__mutex_lock",
                    "__mutex_lock_slowpath", "__mutex_lock_common")),
)
_FRAME_CAUSE = {f: c for c, frames in _RULES for f in frames}
_STACK_HEAD = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]"
                         r".*?\d+\.\d+:\s+<stack trace>\s*$")
_FRAME = re.compile(r"^\s*=>\s+(?P<fn>[\w.]+)")


def comm_of(argv0: str) -> str:
    """The command name the kernel gives a program's threads (TASK_COMM_LEN - 1 bytes)."""
    return str(argv0).rsplit("/", 1)[-1][:15]


def cause_of(state: str, stack) -> str:
    """The cause of one off-CPU interval: `state` as sched_switch prints prev_state."""
    if state.startswith("R"):
        return "cpu"
    if not state.startswith("D"):
        return "other"
    for fn in stack or ():
        fn = fn.split("+", 1)[0]
        if fn in _FRAME_CAUSE:
            return _FRAME_CAUSE[fn]
    return "other"


def _frame(line: str):
    m = _FRAME.match(line)
    return m["fn"] if m else None


def offcpu_table(lines, comm: str) -> dict:
    """Off-CPU intervals of the threads named `comm` in a tracefs text trace.

    Returns arrays: pid, t_out, t_in (ns), state (as printed), cause (one of CAUSES) and
    `stacked`, whether a stack was seen for the switch-out (a D sleep without one is
    'other'). A switch-out with no later switch-in (the trace ended) is left out."""
    return switch_tables(lines, comm)[0]


def oncpu_table(lines, comm: str) -> dict:
    """On-CPU intervals of the threads named `comm` in a tracefs text trace: from a switch
    to one of them (next_comm) to its switch away (prev_comm) on the same CPU.

    Returns arrays pid, cpu, t_in, t_out (ns). An interval whose switch-in the trace does
    not hold (the task ran when tracing began), or whose switch-out it does not (the
    trace ended), is left out."""
    return switch_tables(lines, comm)[1]


def switch_tables(lines, comm: str) -> tuple[dict, dict]:
    """(offcpu_table, oncpu_table) of the threads named `comm`, in one pass over the trace."""
    out, opened, last_out = [], {}, {}
    on, running = [], {}    # running: cpu -> (pid, t_in) of the workload's thread it runs
    stack_for = None        # the switch-out the frames now being read belong to
    for line in lines:
        fn = _frame(line)
        if fn is not None:
            if stack_for is not None:
                stack_for[2].append(fn)
            continue
        head = _STACK_HEAD.match(line)
        if head:
            # 3.4 stacks every event: only a writer's own switch-out keeps its stack
            pid = int(head["pid"])
            cand = last_out.get(pid)
            stack_for = cand if cand is not None and not cand[3] else None
            if stack_for is not None:
                stack_for[3] = True
            continue
        stack_for = None
        ev = parse_line(line)
        if ev is None or ev["event"] != "sched_switch":
            continue
        cpu = ev["cpu"]
        if ev.get("prev_comm") == comm:
            row = [int(ev["prev_pid"]), ev["ts"], [], False, str(ev.get("prev_state", "?"))]
            opened[row[0]] = last_out[row[0]] = row
            seen = running.pop(cpu, None)
            if seen is not None and seen[0] == row[0]:
                on.append((seen[0], cpu, seen[1], ev["ts"]))
        if ev.get("next_comm") == comm:
            nxt = int(ev.get("next_pid", -1))
            running[cpu] = (nxt, ev["ts"])
            if nxt in opened:
                row = opened.pop(nxt)
                out.append((row[0], row[1], ev["ts"], row[4], cause_of(row[4], row[2]), row[3]))
    cols = list(zip(*out)) if out else [()] * 6
    offcpu = {"pid": np.array(cols[0], np.int64), "t_out": np.array(cols[1], np.int64),
              "t_in": np.array(cols[2], np.int64), "state": np.array(cols[3], dtype=object),
              "cause": np.array(cols[4], dtype=object), "stacked": np.array(cols[5], bool)}
    cols = list(zip(*on)) if on else [()] * 4
    oncpu = {k: np.array(c, np.int64) for k, c in zip(("pid", "cpu", "t_in", "t_out"), cols)}
    return offcpu, oncpu
