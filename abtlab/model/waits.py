"""Blocked threads from evidence: why each thread's write op slept, and eqs. 4-6 on it.

Eq. (4) calls a write op unblocked when it "involves only the memory accesses"; eqs.
(5)-(6) call it blocked by commit p when the commit held it up. Span overlap
(`model.classify`) cannot tell the two apart: a write that overlaps a commit may never
have waited, and 3.4's waits (a handle start while the transaction is T_LOCKED, a
shadow buffer) end before the commit's end event. Here a thread's write op (first write
start to last write end) is *blocked by commit p* when, inside its write op, it slept on
the journal (`system.sleeps.JOURNAL_CAUSES`: t_locked, shadow, journal_other) at a time commit
p was running; then it is Y (fully blocked) if its write op began before p started and
Z (partially blocked) if it began while p ran. It is *unblocked* (X for every commit)
when its write op never slept on the journal. Waits for a CPU, a page or an inode lock
are reported beside (a writer waiting on an inode lock may be queued behind a holder who
waits on the journal; those are counted as what they are, not as journal waits).
"""
from __future__ import annotations

import numpy as np

from ..system.sleeps import CAUSES, JOURNAL_CAUSES
from .spans import commit_table, thread_spans

__all__ = ["write_waits", "wait_measures", "WAIT_VARS"]

_NS = 1e-9
WAIT_VARS = ("unblocked_threads", "journal_blocked_full", "journal_blocked_partial",
             "write_wait_journal", *(f"write_wait_{c}" for c in CAUSES))


def _overlap(a0, a1, b0, b1):
    return np.clip(np.minimum(a1, b1) - np.maximum(a0, b0), 0, None)


def write_waits(ops, offcpu: dict) -> dict:
    """Per writer thread: its write span and the ns it spent off the CPU inside it, by cause.

    Returns tid, write_start, write_end (ns) and wait (threads, len(CAUSES)) ns."""
    spans = thread_spans(ops)
    w = spans.wrote
    tids, q, r = spans.tids[w], spans.write_start[w], spans.write_end[w]
    wait = np.zeros((tids.size, len(CAUSES)), np.int64)
    pid = np.asarray(offcpu["pid"], np.int64)
    if pid.size and tids.size:
        row = np.searchsorted(tids, pid)
        ok = (row < tids.size) & (tids[np.minimum(row, tids.size - 1)] == pid)
        row = row[ok]
        ns = _overlap(np.asarray(offcpu["t_out"])[ok], np.asarray(offcpu["t_in"])[ok], q[row], r[row])
        col = np.array([CAUSES.index(c) for c in np.asarray(offcpu["cause"])[ok]], np.int64)
        np.add.at(wait, (row, col), ns)
    return {"tid": tids, "write_start": q, "write_end": r, "wait": wait}


def _journal_blocked_by(ops, offcpu, commits, ww):
    """(threads, commits) bool: a journal sleep inside the thread's write op while commit p ran."""
    s, e = commit_table(commits)
    tids = ww["tid"]
    out = np.zeros((tids.size, s.size), bool)
    journal = np.isin(np.asarray(offcpu["cause"], dtype=object), JOURNAL_CAUSES)
    pid = np.asarray(offcpu["pid"], np.int64)[journal]
    if not (pid.size and tids.size and s.size):
        return out, s
    row = np.searchsorted(tids, pid)
    ok = (row < tids.size) & (tids[np.minimum(row, tids.size - 1)] == pid)
    row = row[ok]
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
    n = ww["tid"].size
    if n == 0:
        return {k: float("nan") for k in WAIT_VARS}
    by, s = _journal_blocked_by(ops, offcpu, commits, ww)
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
