"""Per-thread spans from an op trace: the quantities t_K(q_op), t_K(r_op) of eq. (1).

Everything is vectorised over records (no Python loop per op). Times stay in integer
nanoseconds on the trace's clock; callers convert to seconds at the end.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..trace import RECORD_DTYPE, Op

__all__ = ["ThreadSpans", "thread_spans", "commit_table", "op_durations"]

_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


@dataclass
class ThreadSpans:
    """One entry per thread (sorted by tid); NaN-free: missing spans use +-inf sentinels."""
    tids: np.ndarray          # thread indices present in the trace
    write_start: np.ndarray   # first write start, ns (_BIG when the thread wrote nothing)
    write_end: np.ndarray     # last write end, ns (_SMALL when none)
    fsync_end: np.ndarray     # last fsync end, ns (_SMALL when none)
    bytes_written: np.ndarray
    run_start: int            # first op start of the whole trace, ns
    run_end: int              # last op end, ns

    @property
    def wrote(self) -> np.ndarray:
        return self.write_start != _BIG


def _check_ops(ops) -> np.ndarray:
    ops = np.asarray(ops)
    if ops.dtype != RECORD_DTYPE:
        raise ConfigError("ops", str(ops.dtype), "a structured array of abtlab.trace.RECORD_DTYPE")
    return ops


def thread_spans(ops) -> ThreadSpans:
    """Group the records by tid into write spans and fsync ends."""
    ops = _check_ops(ops)
    tid = ops["tid"]
    start = ops["t_start_ns"].astype(np.int64)
    end = ops["t_end_ns"].astype(np.int64)
    kind = ops["op"]
    is_w, is_f = kind == Op.WRITE, kind == Op.FSYNC
    nbytes = np.where(is_w, ops["bytes"], 0).astype(np.int64)
    if tid.size and np.all(tid[1:] >= tid[:-1]):
        # records grouped by thread (as the recorders and the simulator write them):
        # one reduceat per quantity instead of a sort and scattered ufunc.at
        first = np.flatnonzero(np.r_[True, tid[1:] != tid[:-1]])
        tids = tid[first]
        ws = np.minimum.reduceat(np.where(is_w, start, _BIG), first)
        we = np.maximum.reduceat(np.where(is_w, end, _SMALL), first)
        fe = np.maximum.reduceat(np.where(is_f, end, _SMALL), first)
        nb = np.add.reduceat(nbytes, first)
    else:
        tids, inv = np.unique(tid, return_inverse=True)
        n = tids.size
        ws, we = np.full(n, _BIG, np.int64), np.full(n, _SMALL, np.int64)
        fe, nb = np.full(n, _SMALL, np.int64), np.zeros(n, np.int64)
        np.minimum.at(ws, inv[is_w], start[is_w])
        np.maximum.at(we, inv[is_w], end[is_w])
        np.maximum.at(fe, inv[is_f], end[is_f])
        np.add.at(nb, inv, nbytes)
    run_start = int(start.min()) if ops.size else 0
    run_end = int(end.max()) if ops.size else 0
    return ThreadSpans(tids, ws, we, fe, nb, run_start, run_end)


def op_durations(ops, op: int):
    """(tid, start_ns, end_ns) arrays of every record of kind op, in start order."""
    ops = _check_ops(ops)
    idx = np.flatnonzero(ops["op"] == op)
    start = ops["t_start_ns"][idx].astype(np.int64)
    order = np.argsort(start, kind="stable")
    idx = idx[order]
    return (ops["tid"][idx].astype(np.int64), start[order], ops["t_end_ns"][idx].astype(np.int64))


def commit_table(commits) -> tuple[np.ndarray, np.ndarray]:
    """(start_ns, end_ns) of the commits sorted by start; empty arrays for None/no journal."""
    if commits is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    for key in ("start", "end"):
        if key not in commits:
            raise ConfigError(f"commits.{key}", None, "a dict with arrays start and end (ns)")
    s = np.asarray(commits["start"], dtype=np.int64)
    e = np.asarray(commits["end"], dtype=np.int64)
    if s.shape != e.shape:
        raise ConfigError("commits.end", e.shape, f"the same length as commits.start {s.shape}")
    if np.any(e < s):
        raise ConfigError("commits.end", "end < start", "every commit ends at or after it starts")
    order = np.argsort(s, kind="stable")
    return s[order], e[order]
