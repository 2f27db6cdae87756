"""Eqs. 4-6 on trace evidence (abtlab.model.waits): a write is blocked when it slept on
the journal while a commit ran, not when its span merely overlaps one."""
import numpy as np
import pytest

from abtlab.model import measures
from abtlab.model.waits import WAIT_VARS, wait_measures, write_waits
from abtlab.system.sleeps import CAUSES
from abtlab.trace import RECORD_DTYPE, Op

MS = 1_000_000


TASK = 100   # worker w ran as kernel task TASK + w (the records' pid)


def _ops(spans, task=TASK):
    """spans: worker -> (first write start, last write end) in ms; two writes each, an fsync
    after; each worker's records carry its kernel task in pid (task=None: one process id)."""
    rows = []
    for tid, (a, b) in spans.items():
        mid = (a + b) / 2
        pid = 1 if task is None else task + tid
        rows += [(pid, tid, Op.WRITE, 0, 4096, a * MS, mid * MS), (pid, tid, Op.WRITE, 0, 4096, mid * MS, b * MS),
                 (pid, tid, Op.FSYNC, 0, 0, b * MS, (b + 1) * MS)]
    return np.array(rows, RECORD_DTYPE)


def _offcpu(rows):
    """rows: (worker, out ms, in ms, cause), the worker's kernel task as the pid."""
    pid, a, b, c = zip(*rows) if rows else ((), (), (), ())
    return {"pid": np.array(pid, np.int64) + TASK, "t_out": np.array(a, np.int64) * MS,
            "t_in": np.array(b, np.int64) * MS, "cause": np.array(c, dtype=object)}


# one commit from 10 to 20 ms
COMMITS = {"start": np.array([10 * MS]), "end": np.array([20 * MS])}
# thread 1 writes 0-30 and sleeps on a locked transaction 12-18 (Y: began before the commit);
# thread 2 writes 12-25 and waits on a shadow buffer 14-19 (Z: began while it ran);
# thread 3 writes 5-25, overlapping the commit, but only waits for the CPU 15-17 (unblocked);
# thread 4 writes 0-8 and slept on the journal 2-4, before any commit (unblocked);
# thread 5 writes 30-40 and sleeps on the journal 41-45, after its write op (unblocked)
SPANS = {1: (0, 30), 2: (12, 25), 3: (5, 25), 4: (0, 8), 5: (30, 40)}
SLEEPS = [(1, 12, 18, "t_locked"), (2, 14, 19, "shadow"), (3, 15, 17, "cpu"),
          (4, 2, 4, "journal_other"), (5, 41, 45, "journal_other")]


def test_blocked_is_a_journal_sleep_while_a_commit_ran_not_an_overlap():
    got = wait_measures(_ops(SPANS), _offcpu(SLEEPS), COMMITS)
    assert got["unblocked_threads"] == 3
    assert got["journal_blocked_full"] == 1 and got["journal_blocked_partial"] == 1
    # span overlap calls threads 1, 2 and 3 blocked (X for none of them) and so misses the point
    overlap = measures(_ops(SPANS), COMMITS, "iozone")
    assert overlap["threads_clear_of_commits"] == 2
    assert set(got) == set(WAIT_VARS)


def test_each_cause_is_the_mean_per_writer_of_its_time_inside_the_write_op():
    got = wait_measures(_ops(SPANS), _offcpu(SLEEPS), COMMITS)
    assert got["write_wait_t_locked"] == pytest.approx(6e-3 / 5)
    assert got["write_wait_shadow"] == pytest.approx(5e-3 / 5)
    assert got["write_wait_cpu"] == pytest.approx(2e-3 / 5)
    # thread 4's 2 ms are inside its write op; thread 5's sleep is after it and not counted
    assert got["write_wait_journal"] == pytest.approx((6e-3 + 5e-3 + 2e-3) / 5)
    ww = write_waits(_ops(SPANS), _offcpu(SLEEPS))
    assert ww["wait"][ww["tid"].tolist().index(5)].sum() == 0
    assert ww["wait"].shape == (5, len(CAUSES))


def test_a_sleep_is_clipped_to_the_write_op():
    ww = write_waits(_ops({1: (10, 20)}), _offcpu([(1, 5, 12, "page"), (1, 19, 30, "cpu")]))
    assert ww["wait"][0, CAUSES.index("page")] == 2 * MS
    assert ww["wait"][0, CAUSES.index("cpu")] == 1 * MS


def test_no_writers_or_no_evidence():
    assert np.isnan(wait_measures(np.zeros(0, RECORD_DTYPE), _offcpu([]), COMMITS)["unblocked_threads"])
    got = wait_measures(_ops(SPANS), _offcpu([]), COMMITS)
    assert got["unblocked_threads"] == 5 and got["write_wait_journal"] == 0


def test_records_that_do_not_name_each_workers_task_give_no_evidence():
    # an older build wrote the process id in every record: which thread slept is unknown
    got = wait_measures(_ops(SPANS, task=None), _offcpu(SLEEPS), COMMITS)
    assert np.isnan(got["unblocked_threads"]) and np.isnan(got["write_wait_cpu"])
    # a sleep of a task that is no worker (another program's thread) is not counted
    other = _offcpu([(50, 12, 18, "t_locked")])
    assert wait_measures(_ops(SPANS), other, COMMITS)["unblocked_threads"] == 5


def test_switch_measures_read_the_sleeps_and_the_cpu_time_from_one_trace():
    """Worker 1 (task 101) writes 0-30 ms; the trace switches it out on a locked
    transaction 12-18 ms while the commit (10-20 ms) runs, and in and out around it."""
    from abtlab.model.terms import CPU_TERMS
    from abtlab.model.waits import switch_measures

    def switch(ms, prev, prev_pid, state, nxt, next_pid):
        return (f"      {prev}-{prev_pid}     [000] d..3.  {ms / 1e3:.6f}: sched_switch: "
                f"prev_comm={prev} prev_pid={prev_pid} prev_prio=120 prev_state={state} "
                f"==> next_comm={nxt} next_pid={next_pid} next_prio=120")
    lines = [switch(0, "swapper/0", 0, "R", "abt-iozone", 101),
             switch(12, "abt-iozone", 101, "D", "swapper/0", 0),
             "      abt-iozone-101     [000] d..3.  0.012001: <stack trace>",
             " => wait_transaction_locked",
             switch(18, "swapper/0", 0, "R", "abt-iozone", 101),
             switch(31, "abt-iozone", 101, "S", "swapper/0", 0)]
    got = switch_measures(_ops({1: (0, 30)}), lines, "abt-iozone", COMMITS)
    assert set(got) == set(WAIT_VARS) | set(CPU_TERMS)
    assert got["unblocked_threads"] == 0 and got["journal_blocked_full"] == 1
    assert got["write_wait_t_locked"] == pytest.approx(6e-3)
    # on the CPU 0-12 ms of the lead's 10 ms to the commit: all 10 of them
    assert got["lead_to_commit_cpu"] == pytest.approx(10e-3) and got["writer_lag_cpu"] == 0
