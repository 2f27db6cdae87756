"""Blocked threads from evidence: why each thread's write op slept, and eqs. 4-6 on it.

Eq. (4) calls a write op unblocked when it "involves only the memory accesses"; eqs.
(5)-(6) call it blocked by commit p when the commit held it up. Span overlap
(`model.classify`) cannot tell the two apart: a write that overlaps a commit may never
have waited, and 3.4's waits (a handle start while the transaction is T_LOCKED, a
shadow buffer) end before the commit's end event. Here a thread's write op (first write
start to last write end; its kernel task from the records' pid) is *blocked by commit p* when, inside its write op, it slept on
the journal (`system.sleeps.JOURNAL_CAUSES`: t_locked, shadow, journal_other) at a time commit
p was running; then it is Y (fully blocked) if its write op began before p started and
Z (partially blocked) if it began while p ran. It is *unblocked* (X for every commit)
when its write op never slept on the journal. Waits for a CPU, a page or an inode lock
are reported beside (a writer waiting on an inode lock may be queued behind a holder who
waits on the journal; those are counted as what they are, not as journal waits).
"""
from __future__ import annotations

import numpy as np

from ..system.sleeps import CAUSES, JOURNAL_CAUSES, switch_tables
from .spans import commit_table, thread_spans
from .terms import cpu_terms

__all__ = ["write_waits", "wait_measures", "switch_measures", "worker_tasks", "WAIT_VARS"]

_NS = 1e-9
WAIT_VARS = ("unblocked_threads", "journal_blocked_full", "journal_blocked_partial",
             "write_wait_journal", *(f"write_wait_{c}" for c in CAUSES))


def _overlap(a0, a1, b0, b1):
    return np.clip(np.minimum(a1, b1) - np.maximum(a0, b0), 0, None)


def worker_tasks(ops, tids) -> np.ndarray | None:
    """The kernel task of each worker in `tids` (the records' pid: abt_workload.h writes the
    worker's gettid there), or None when the records cannot tell them apart (records of an
    older build carry the process id, one for every thread)."""
    pid = np.asarray(ops["pid"], np.int64)
    tid = np.asarray(ops["tid"], np.int64)
    pairs = np.unique(np.stack([tid, pid], axis=1), axis=0) if pid.size else np.zeros((0, 2), np.int64)
    if pairs.shape[0] != np.unique(tid).size or np.unique(pairs[:, 1]).size != pairs.shape[0]:
        return None
    return pairs[np.searchsorted(pairs[:, 0], tids), 1]


def _rows(tasks, pid):
    """Row of each off-CPU interval's pid among the workers' tasks, and which matched."""
    order = np.argsort(tasks)
    at = np.searchsorted(tasks[order], pid)
    ok = (at < tasks.size) & (tasks[order][np.minimum(at, tasks.size - 1)] == pid)
    return order[at[ok]], ok


def write_waits(ops, offcpu: dict) -> dict | None:
    """Per writer thread: its write span and the ns it spent off the CPU inside it, by cause.

    Returns tid, write_start, write_end (ns) and wait (threads, len(CAUSES)) ns; None when
    the records do not say which kernel task ran each worker (`worker_tasks`)."""
    spans = thread_spans(ops)
    w = spans.wrote
    tids, q, r = spans.tids[w], spans.write_start[w], spans.write_end[w]
    tasks = worker_tasks(ops, tids)
    if tasks is None:
        return None
    wait = np.zeros((tids.size, len(CAUSES)), np.int64)
    pid = np.asarray(offcpu["pid"], np.int64)
    if pid.size and tids.size:
        row, ok = _rows(tasks, pid)
        ns = _overlap(np.asarray(offcpu["t_out"])[ok], np.asarray(offcpu["t_in"])[ok], q[row], r[row])
        col = np.array([CAUSES.index(c) for c in np.asarray(offcpu["cause"])[ok]], np.int64)
        np.add.at(wait, (row, col), ns)
    return {"tid": tids, "task": tasks, "write_start": q, "write_end": r, "wait": wait}


def _journal_blocked_by(offcpu, commits, ww):
    """(threads, commits) bool: a journal sleep inside the thread's write op while commit p ran."""
    s, e = commit_table(commits)
    tasks = ww["task"]
    out = np.zeros((tasks.size, s.size), bool)
    journal = np.isin(np.asarray(offcpu["cause"], dtype=object), JOURNAL_CAUSES)
    pid = np.asarray(offcpu["pid"], np.int64)[journal]
    if not (pid.size and tasks.size and s.size):
        return out, s
    row, ok = _rows(tasks, pid)
    t0 = np.maximum(np.asarray(offcpu["t_out"])[journal][ok], ww["write_start"][row])
    t1 = np.minimum(np.asarray(offcpu["t_in"])[journal][ok], ww["write_end"][row])
    live = t1 > t0
    row, t0, t1 = row[live], t0[live], t1[live]
    hit = (t0[:, None] < e[None, :]) & (t1[:, None] > s[None, :])
    for k in range(s.size):
        out[row[hit[:, k]], k] = True
    return out, s


def wait_measures(ops, offcpu: dict, commits) -> dict:
    """The evidence-based counts (eqs. 4-6) and each cause's mean wait per writer, in s."""
    ww = write_waits(ops, offcpu)
    if ww is None or ww["tid"].size == 0:
        return {k: float("nan") for k in WAIT_VARS}
    n = ww["tid"].size
    by, s = _journal_blocked_by(offcpu, commits, ww)
    began_before = ww["write_start"][:, None] < s[None, :]
    any_y = np.any(by & began_before, axis=1)
    any_z = np.any(by & ~began_before, axis=1) & ~any_y
    mean = ww["wait"].mean(axis=0) * _NS
    journal = sum(mean[CAUSES.index(c)] for c in JOURNAL_CAUSES)
    out = {"unblocked_threads": float(n - np.count_nonzero(by.any(axis=1))),
           "journal_blocked_full": float(np.count_nonzero(any_y)),
           "journal_blocked_partial": float(np.count_nonzero(any_z)),
           "write_wait_journal": float(journal)}
    out.update({f"write_wait_{c}": float(mean[i]) for i, c in enumerate(CAUSES)})
    return out


def switch_measures(ops, lines, comm: str, commits) -> dict:
    """A run's measures from its trace's switches of the workload's threads (`comm`), in
    one pass over the trace: why its writes slept (wait_measures) and its CPU time inside
    the timing terms (model.terms.cpu_terms)."""
    offcpu, oncpu = switch_tables(lines, comm)
    return {**wait_measures(ops, offcpu, commits), **cpu_terms(ops, oncpu, commits)}
