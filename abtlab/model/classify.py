"""The X/Y/Z sets of eqs. (4)-(6) for every commit (the paper's L_p, generalised to many).

IOzone (Fig. 5): a thread's write op is the span of its write() calls, first write
start to last write end (what IOzone's default report times). Its own fsync is left
out: IOzone calls it after the clock stops. For commit p, a write is
    Y (fully blocked)     if it starts before the commit starts and ends after it ends,
    Z (partially blocked) if it starts in [start, end) and ends after the end,
    I (blocked inside)    if it overlaps the commit and ends at or before its end,
    X (not affected)      otherwise: it shares no time with the commit.
I is the case eqs. (5)-(6) leave out and 3.4's kernels make common: a handle stalled
while the commit holds the transaction locked (T_LOCKED), or a write waiting on a
buffer the commit is writing to the log, is released a few ms before the commit's end
event. Read literally the equations count such a write unaffected; here it is blocked,
so X means what eq. (4) says: the write involved only its own work.
Metarates (Fig. 6): an fsync is blocked when it starts while a commit is already
running (t(q_fsync) > t(q_JC) of a commit that has not ended): it must wait for that
commit and the next one.
"""
from __future__ import annotations

import numpy as np

from ..trace import Op
from .spans import commit_table, op_durations, thread_spans

__all__ = ["classify", "classify_writes", "blocked_fsyncs", "X", "Y", "Z", "I", "LABELS"]

X, Y, Z, I = 0, 1, 2, 3
LABELS = ("X", "Y", "Z", "I")


def classify_writes(q_write, r_write, c_start, c_end) -> np.ndarray:
    """Class code (X=0, Y=1, Z=2, I=3) of each write span for each commit: shape
    (threads, commits)."""
    q = np.asarray(q_write, np.int64)[:, None]
    r = np.asarray(r_write, np.int64)[:, None]
    s = np.asarray(c_start, np.int64)[None, :]
    e = np.asarray(c_end, np.int64)[None, :]
    out = np.full((q.shape[0], s.shape[1]), X, np.int8)
    out[(q < e) & (r > s) & (r <= e)] = I
    out[(q < s) & (r > e)] = Y
    out[(q >= s) & (q < e) & (r > e)] = Z
    return out


def blocked_fsyncs(q_fsync, c_start, c_end) -> np.ndarray:
    """True where an fsync starts strictly after a commit started and before it ended.
    Commits of one journal do not overlap, so the latest commit started before q is
    the only candidate."""
    q = np.asarray(q_fsync, np.int64)
    s = np.asarray(c_start, np.int64)
    e = np.asarray(c_end, np.int64)
    if s.size == 0:
        return np.zeros(q.shape, bool)
    idx = np.searchsorted(s, q, side="left") - 1   # last commit with start < q
    ok = idx >= 0
    out = np.zeros(q.shape, bool)
    out[ok] = q[ok] < e[idx[ok]]
    return out


def classify(ops, commits) -> dict:
    """Per-thread classes against every commit.

    Returns a dict: tid (threads,), write_class (threads, commits) int8 codes X=0/Y=1/Z=2/I=3
    (labels in 'labels'), commit_start/commit_end (commits,), and for the fsync view
    fsync_tid, fsync_start, fsync_blocked (one per fsync call)."""
    spans = thread_spans(ops)
    s, e = commit_table(commits)
    cls = classify_writes(spans.write_start, spans.write_end, s, e)
    cls[~spans.wrote, :] = X          # a thread that wrote nothing cannot be blocked in a write
    ftid, fq, _ = op_durations(ops, Op.FSYNC)
    return {"tid": spans.tids, "write_class": cls, "labels": LABELS,
            "commit_start": s, "commit_end": e,
            "fsync_tid": ftid, "fsync_start": fq, "fsync_blocked": blocked_fsyncs(fq, s, e)}


def as_dataarray(result: dict):
    """The write classes as an xarray.DataArray (dims thread, commit) with labels in attrs."""
    import xarray as xr
    return xr.DataArray(result["write_class"], dims=("thread", "commit"),
                        coords={"thread": result["tid"]},
                        attrs={"flag_values": [X, Y, Z, I], "flag_meanings": "X Y Z I",
                               "long_name": "write class per commit, eqs. (4)-(6) and I (ends inside)"})
