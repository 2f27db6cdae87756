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

__all__ = ["measures", "measures_reps", "commit_waits", "WORKLOADS"]

WORKLOADS = ("iozone", "metarates")
_NS = 1e-9
_SMALL_NS = np.iinfo(np.int64).min     # spans' "no fsync" sentinel
_BIG_NS = np.iinfo(np.int64).max       # spans' "no write" sentinel
_CELLS = 1 << 22     # measures_reps: at most this many (repetition, record, commit) at once


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



# -- many repetitions of one layout at once (a simulated point's) ------------------------
def measures_reps(ops, commits: list, workload, file_size=None, fsync=True) -> list[dict]:
    """measures() of every repetition: ops (reps, records) RECORD_DTYPE, commits one
    table per repetition. Where every repetition has the same records but for their times
    (thread, op and bytes columns; grouped by thread, each thread's writes in start
    order), as a simulated point's repetitions do, iozone's measures are computed for
    all of them in one pass of numpy: the same numbers, ~10x faster than one call each."""
    ops = np.asarray(ops)
    if ops.ndim != 2 or len(commits) != ops.shape[0]:
        raise ConfigError("ops", str(ops.shape), "(repetitions, records), one commit table each")
    layout = _shared_layout(ops) if workload == "iozone" and ops.size else None
    if layout is None:
        return [measures(o, c, workload, file_size=file_size, fsync=fsync)
                for o, c in zip(ops, commits)]
    if file_size is not None and not (np.isscalar(file_size) and float(file_size) > 0):
        raise ConfigError("file_size", file_size, "a positive number of bytes, or None")
    tables = [commit_table(c) for c in commits]
    # in chunks of repetitions: the (record, commit) tables stay a few MB
    most = max(t[0].size for t in tables)
    step = max(1, _CELLS // (ops.shape[1] * (most + 1)))
    found = []
    for lo in range(0, ops.shape[0], step):
        part, tab = ops[lo:lo + step], tables[lo:lo + step]
        out = {**_common_reps(part, layout, tab), **_iozone_reps(part, layout, tab, file_size, fsync)}
        found += [{k: float(v[r]) for k, v in out.items()} for r in range(part.shape[0])]
    return found


def _shared_layout(ops):
    """(first record of each thread, is_write, is_fsync, bytes, write record index) when
    every repetition's records match the first's but for their times, records grouped by
    thread and each thread's writes in start order in every repetition; else None."""
    ref = ops[0]
    same = all(np.array_equal(ops[col], np.broadcast_to(ref[col], ops.shape))
               for col in ("tid", "op", "bytes"))
    tid = ref["tid"]
    if not same or np.any(tid[1:] < tid[:-1]):
        return None
    is_w, is_f = ref["op"] == Op.WRITE, ref["op"] == Op.FSYNC
    wi = np.flatnonzero(is_w)
    ws = ops["t_start_ns"][:, wi].astype(np.int64)
    wt = tid[wi]
    if np.any((wt[1:] == wt[:-1]) & (ws[:, 1:] < ws[:, :-1])):
        return None
    first = np.flatnonzero(np.r_[True, tid[1:] != tid[:-1]])
    return first, is_w, is_f, np.where(is_w, ref["bytes"], 0).astype(np.int64), wi


def _spans_reps(ops, layout):
    """thread_spans of every repetition: (write start, write end, fsync end) per
    (repetition, thread), bytes per thread, and whether it wrote."""
    first, is_w, is_f, nbytes, _ = layout
    start = ops["t_start_ns"].astype(np.int64)
    end = ops["t_end_ns"].astype(np.int64)
    ws = np.minimum.reduceat(np.where(is_w, start, _BIG_NS), first, axis=1)
    we = np.maximum.reduceat(np.where(is_w, end, _SMALL_NS), first, axis=1)
    fe = np.maximum.reduceat(np.where(is_f, end, _SMALL_NS), first, axis=1)
    return start, end, ws, we, fe, np.add.reduceat(nbytes, first), ws[0] != _BIG_NS


def _sum(a) -> np.ndarray:
    """np.sum of each row of a as of a 1-d array alone: numpy sums the rows of a 2-d
    array in another order (not pairwise), which can change the last bit."""
    return np.array([np.add.reduce(row, dtype=np.float64) for row in a], np.float64)


def _mean(a) -> np.ndarray:
    """np.mean of each row of a as of a 1-d array alone (its sum, then / n)."""
    return _sum(a) / a.shape[1]


def _padded(tables, k):
    """Column k (0: start, 1: end) of every commit table, padded with _BIG_NS (a commit
    that never starts: X for every write, inside no run): (reps, most commits)."""
    out = np.full((len(tables), max((t[0].size for t in tables), default=0)), _BIG_NS, np.int64)
    for r, t in enumerate(tables):
        out[r, :t[k].size] = t[k]
    return out


def _common_reps(ops, layout, tables) -> dict:
    _, _, is_f, _, _ = layout
    start, end = ops["t_start_ns"].astype(np.int64), ops["t_end_ns"].astype(np.int64)
    run_start, run_end = start.min(axis=1), end.max(axis=1)
    fi = np.flatnonzero(is_f)
    fq, fr = start[:, fi], end[:, fi]
    order = np.argsort(fq, axis=1, kind="stable")      # op_durations: in start order
    fq, fr = np.take_along_axis(fq, order, axis=1), np.take_along_axis(fr, order, axis=1)
    s, e = _padded(tables, 0), _padded(tables, 1)
    nan = np.full(ops.shape[0], np.nan)
    out = {"elapsed": (run_end - run_start) * _NS,
           "commits": np.count_nonzero((e >= run_start[:, None]) & (s <= run_end[:, None]), axis=1),
           "fsync_calls": np.full(ops.shape[0], fi.size)}
    if not fi.size:
        return {**out, "mean_fsync": nan, "mean_commit_wait": nan}
    # commit_waits: each fsync's covering commit, the last to end at or before it returned
    ends = np.sort(e, axis=1)
    n_before = np.count_nonzero(ends[:, None, :] <= fr[:, :, None], axis=2)
    cover = np.take_along_axis(ends, np.maximum(n_before - 1, 0), axis=1) if ends.shape[1] \
        else np.zeros_like(fq)
    use = (n_before > 0) & (cover >= fq)
    waits = np.where(use, cover - fq, fr - fq)
    return {**out, "mean_fsync": _mean(fr - fq) * _NS,
            "mean_commit_wait": _mean(waits) * _NS}


def _iozone_reps(ops, layout, tables, file_size, fsync) -> dict:
    start, end, ws, we, fe, nb, w = _spans_reps(ops, layout)
    reps, nan = ops.shape[0], np.full(ops.shape[0], np.nan)
    q, r_write = ws[:, w], we[:, w]
    size = nb[w].astype(float) if file_size is None else float(file_size)
    if not w.any():
        return {k: (np.zeros(reps) if k.startswith(("threads_", "blocked_")) else nan)
                for k in ("throughput", "throughput_fsync", "throughput_stonewall", "mean_write",
                          "mean_write_fsync", "threads_clear_of_commits", "blocked_full",
                          "blocked_partial", "blocked_inside")}
    t_write = (r_write - q) * _NS
    tf = (np.maximum(fe[:, w], r_write) - q) * _NS if fsync and np.all(fe[0, w] > _SMALL_NS) \
        else None
    out = {"throughput": _sum(size / t_write),       # in measures()' order
           "throughput_fsync": nan if tf is None else _sum(size / tf)}
    s, e = _padded(tables, 0)[:, None, :], _padded(tables, 1)[:, None, :]
    qq, rr = q[:, :, None], r_write[:, :, None]
    y = (qq < s) & (rr > e)
    z = (qq >= s) & (qq < e) & (rr > e)
    inside = (qq < e) & (rr > s) & (rr <= e)
    any_y = y.any(axis=2)
    any_z = z.any(axis=2) & ~any_y
    any_i = inside.any(axis=2) & ~any_y & ~any_z
    out.update(throughput_stonewall=_stonewall_reps(start, end, layout), mean_write=_mean(t_write),
               mean_write_fsync=nan if tf is None else _mean(tf),
               threads_clear_of_commits=np.count_nonzero(~(y | z | inside).any(axis=2), axis=1),
               blocked_full=np.count_nonzero(any_y, axis=1),
               blocked_partial=np.count_nonzero(any_z, axis=1),
               blocked_inside=np.count_nonzero(any_i, axis=1))
    return out


def _stonewall_reps(start, end, layout):
    """stonewall_throughput of every repetition (records in its sort order already)."""
    _, _, _, nbytes, wi = layout
    start, end, nbytes = start[:, wi], end[:, wi], nbytes[wi]
    tid = layout[0]     # first record of each thread among all records: recount among writes
    wt = np.searchsorted(tid, wi, side="right")
    first = np.flatnonzero(np.r_[True, wt[1:] != wt[:-1]])
    last = np.r_[first[1:], wt.size] - 1
    q = start[:, first]
    stop = np.maximum.reduceat(end, first, axis=1).min(axis=1)
    idx = np.arange(wt.size)
    check = np.minimum.reduceat(np.where(start >= stop[:, None], idx, wt.size), first, axis=1)
    stopped = check <= last
    cum = np.r_[0, np.cumsum(nbytes)]
    counted = cum[np.where(stopped, check, last + 1)] - cum[first]
    t_end = np.where(stopped, np.take_along_axis(start, np.minimum(check, wt.size - 1), axis=1),
                     end[:, last])
    t = (t_end - q) * _NS
    rate = np.divide(counted, t, out=np.zeros(t.shape), where=t > 0)
    return _sum(rate)
