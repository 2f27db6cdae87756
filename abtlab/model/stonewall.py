"""IOzone's stonewalling (on by default; -x turns it off), from a run's op records.

In IOzone's throughput test the first child to finish its write loop raises a shared
stop flag; every other child checks it before each record, and at the first check
after it was raised stops its clock and counts only the bytes written so far (it goes
on writing, uncounted). Its reported rate is those bytes over that time; a child that
had not written yet reports 0. The records hold every write's start and end, so the
stonewalled eq. (3) is a reading of the same run: no second run is needed."""
from __future__ import annotations

import numpy as np

from ..trace import Op

__all__ = ["stonewall_throughput"]

_NS = 1e-9


def stonewall_throughput(ops) -> float:
    """Eq. (3) as IOzone reports it with stonewalling (write op timed, bytes/s); NaN
    for a run without writes."""
    ops = np.asarray(ops)
    w = ops[ops["op"] == Op.WRITE]
    if not w.size:
        return float("nan")
    order = np.lexsort((w["t_start_ns"], w["tid"]))
    tid = w["tid"][order]
    start = w["t_start_ns"][order].astype(np.int64)
    end = w["t_end_ns"][order].astype(np.int64)
    nbytes = w["bytes"][order].astype(np.int64)
    first = np.flatnonzero(np.r_[True, tid[1:] != tid[:-1]])
    last = np.r_[first[1:], tid.size] - 1
    q = start[first]
    stop = np.maximum.reduceat(end, first).min()   # the first child done raises the flag
    # each child's first check after the flag: the first record it starts at or after it
    idx = np.arange(tid.size)
    check = np.minimum.reduceat(np.where(start >= stop, idx, tid.size), first)
    stopped = check <= last
    cum = np.r_[0, np.cumsum(nbytes)]
    done = np.where(stopped, check, last + 1)               # records counted: first..done-1
    counted = cum[done] - cum[first]
    t_end = np.where(stopped, start[np.minimum(check, tid.size - 1)], end[last])
    t = (t_end - q) * _NS
    rate = np.divide(counted, t, out=np.zeros(t.shape), where=t > 0)
    return float(rate.sum())
