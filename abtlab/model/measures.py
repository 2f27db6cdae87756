"""The paper's measures of one run, from its op trace and its commit table.

Names and units are schema.VARIABLES. Times in the traces are ns; results are SI.

T_write (eq. 3, eq. 4): a thread's write op, from the start of its first write to the
end of its last: IOzone's default report, which stops a child's clock after its write
loop and only then calls fsync and close. That is `throughput`, the paper's quantity:
the early threads' untimed fsyncs start commits that stall the latecomers' timed
writes. `throughput_fsync` is the same sum with T_write running on to the end of the
thread's fsync (IOzone -e): NaN when the run issued no fsync. Both come from one run:
the workload does the same thing either way, only the clock's end differs.

Commit wait (the paper's reliability measure): for each fsync, the time from its start
to the end of the commit that covered it. The covering commit is the last commit that
ended at or before the fsync returned (fsync returns only after it). If that commit
ended before the fsync started, no commit was waited for (the changes were already
durable, or there is no journal): the wait is then the fsync's own duration, which is
when the data is known durable.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..trace import Op
from . import equations as eq
from .classify import I, X, Y, Z, blocked_fsyncs, classify_writes
from .spans import commit_table, op_durations, thread_spans
from .stonewall import stonewall_throughput

__all__ = ["measures", "commit_waits", "WORKLOADS"]

WORKLOADS = ("iozone", "metarates")
_NS = 1e-9
_SMALL_NS = np.iinfo(np.int64).min     # spans' "no fsync" sentinel


def commit_waits(fsync_start, fsync_end, c_end) -> np.ndarray:
    """Per fsync: ns from its start to the end of its covering commit (see module doc)."""
    q = np.asarray(fsync_start, np.int64)
    r = np.asarray(fsync_end, np.int64)
    ends = np.sort(np.asarray(c_end, np.int64))
    wait = (r - q).astype(np.int64)
    if ends.size:
        idx = np.searchsorted(ends, r, side="right") - 1
        ok = idx >= 0
        cover = np.where(ok, ends[np.maximum(idx, 0)], 0)
        use = ok & (cover >= q)
        wait[use] = cover[use] - q[use]
    return wait


def _common(ops, s, e, spans) -> dict:
    _, fq, fr = op_durations(ops, Op.FSYNC)
    inside = (e >= spans.run_start) & (s <= spans.run_end)
    waits = commit_waits(fq, fr, e)
    return {
        "elapsed": (spans.run_end - spans.run_start) * _NS,
        "commits": float(np.count_nonzero(inside)),
        "fsync_calls": float(fq.size),
        "mean_fsync": float(np.mean(fr - fq)) * _NS if fq.size else float("nan"),
        "mean_commit_wait": float(np.mean(waits)) * _NS if fq.size else float("nan"),
    }


def _eq3(size, t_write) -> tuple[float, float]:
    """(eq. 3 throughput, mean T_write), NaN for no threads."""
    if not t_write.size:
        return float("nan"), float("nan")
    return eq.iozone_throughput(size, t_write), float(np.mean(t_write))


def _iozone(ops, s, e, spans, file_size, fsync) -> dict:
    w = spans.wrote
    q, r_write = spans.write_start[w], spans.write_end[w]
    size = spans.bytes_written[w] if file_size is None else float(file_size)
    throughput, mean_write = _eq3(size, (r_write - q) * _NS)
    # -e's quantity needs every writer's fsync: a run without one has none to time
    if fsync and w.any() and np.all(spans.fsync_end[w] > _SMALL_NS):
        tf, mean_wf = _eq3(size, (np.maximum(spans.fsync_end[w], r_write) - q) * _NS)
    else:
        tf = mean_wf = float("nan")
    cls = classify_writes(q, r_write, s, e)
    any_y = np.any(cls == Y, axis=1)
    any_z = np.any(cls == Z, axis=1) & ~any_y
    any_i = np.any(cls == I, axis=1) & ~any_y & ~any_z
    return {
        "throughput": throughput,
        "throughput_fsync": tf,
        "throughput_stonewall": stonewall_throughput(ops) if w.any() else float("nan"),
        "mean_write": mean_write,
        "mean_write_fsync": mean_wf,
        "threads_clear_of_commits": float(np.count_nonzero(np.all(cls == X, axis=1))),
        "blocked_full": float(np.count_nonzero(any_y)),
        "blocked_partial": float(np.count_nonzero(any_z)),
        "blocked_inside": float(np.count_nonzero(any_i)),
    }


def _metarates(ops, s, e, spans) -> dict:
    _, oq, orr = op_durations(ops, Op.OPEN)
    ftid, fq, fr = op_durations(ops, Op.FSYNC)
    _, cq, cr = op_durations(ops, Op.CLOSE)
    _, wq, wr = op_durations(ops, Op.WRITE)
    files = oq.size
    blocked = blocked_fsyncs(fq, s, e)
    blocked_workers = np.unique(ftid[blocked])
    window = (cr.max() - oq.min()) * _NS if files and cr.size else 0.0
    return {
        "fcr": eq.fcr(files, (orr - oq) * _NS, (fr - fq) * _NS, (cr - cq) * _NS, (wr - wq) * _NS),
        "fcr_aggregate": files / window if window > 0 else float("nan"),
        "fcr_approx": eq.fcr_approx(files, (fr - fq) * _NS),
        "threads_clear_of_commits": float(spans.tids.size - blocked_workers.size),
        "blocked_full": float(blocked_workers.size),
        # Fig. 6 has no partially blocked case: an fsync waits for one commit or two.
        "blocked_partial": float("nan"),
        "blocked_inside": float("nan"),
    }


def measures(ops, commits, workload, file_size=None, fsync=True) -> dict:
    """The paper's measures of one run (dict name -> float, names from schema.VARIABLES).

    ops: RECORD_DTYPE records (tid = thread index); commits: dict of arrays with at
    least start and end (ns, same clock), empty or None without a journal.
    workload: 'iozone' (throughput by eq. 3 on the write op, and with fsync timed too;
    X/Y/Z/I by eqs. 4-6) or 'metarates' (FCR by eq. 9 for F files per worker, eq. 10,
    blocked fsyncs by Fig. 6). file_size: S of eq. (3) in bytes; default: the bytes each
    thread wrote. fsync: whether the run called fsync after its writes (else
    throughput_fsync is NaN)."""
    if workload not in WORKLOADS:
        raise ConfigError("workload", workload, " | ".join(WORKLOADS))
    if file_size is not None and not (np.isscalar(file_size) and float(file_size) > 0):
        raise ConfigError("file_size", file_size, "a positive number of bytes, or None")
    spans = thread_spans(ops)
    s, e = commit_table(commits)
    out = _common(ops, s, e, spans)
    if workload == "iozone":
        out.update(_iozone(ops, s, e, spans, file_size, fsync))
    else:
        out.update(_metarates(ops, s, e, spans))
    return {k: float(v) for k, v in out.items()}

