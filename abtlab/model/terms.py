"""The timing terms that decide whether a faster clock blocks more writers (the paper's
account, section III): when the first commit starts after the lead writer began, how
far the other writers lag behind it, and how long a write op takes unblocked and
blocked. Each is measured from a run's op and commit records; at two clocks, a term
that scales with the CPU shrinks by f_high/f_low (2.06 from 1.6 to 3.3 GHz), a fixed
time (a disk, a timer, a poll) stays the same. The paper's slowdown needs the lead's
delay to the first commit to shrink faster than the others' lag: then at the fast
clock the commit starts while more of them are still writing."""
from __future__ import annotations

import numpy as np

from ..trace import Op
from .classify import X, classify_writes
from .spans import commit_table, thread_spans

__all__ = ["TERMS", "CPU_TERMS", "timing_terms", "cpu_terms", "terms_table"]

_NS = 1e-9
# name -> what it is (all in seconds but the count)
TERMS = {
    "lead_to_commit": "first write start to the first commit's start (the lead writer's delay)",
    "commit_lock": "first commit's start to its locked phase (jbd2 T_LOCKED)",
    "first_commit": "first commit's start to its end",
    "writer_lag": "median over writers of its first write start after the lead's",
    "writer_spread": "last writer's first write start after the lead's",
    "write_op_unblocked": "median write op (first write to last write) of the unblocked writers",
    "write_op_blocked": "median write op of the writers that share time with a commit",
    "writers_before_first_commit": "writers whose write op ended before the first commit started",
}


# the workload's own CPU time inside two of TERMS, from the trace's on-CPU intervals of its
# threads (system.sleeps.oncpu_table); the rest of each term is other tasks' CPU (kernel
# threads: jbd2, kworkers) and idle time (a disk, a timer). Under dilation only the
# workload's CPU time scales with the clock; under icount all CPU time does, idle does not.
CPU_TERMS = {
    "lead_to_commit_cpu": "the workload's CPU time (its threads on a CPU, summed over CPUs) "
                          "inside lead_to_commit",
    "writer_lag_cpu": "median over writers of the workload's CPU time (summed over CPUs) from "
                      "the lead's first write start to the writer's",
}


def _median(x) -> float:
    return float(np.median(x)) * _NS if np.size(x) else float("nan")


def timing_terms(ops, commits) -> dict:
    """TERMS of one run (seconds; NaN where a run has no commit or no such writer)."""
    spans = thread_spans(ops)
    w = spans.wrote
    q, r = spans.write_start[w], spans.write_end[w]
    s, e = commit_table(commits)
    out = dict.fromkeys(TERMS, float("nan"))
    if not q.size:
        return out
    lead = int(q.min())
    out["writer_lag"] = _median(q - lead)
    out["writer_spread"] = float(q.max() - lead) * _NS
    first = np.searchsorted(s, lead)          # the first commit that starts after the lead
    blocked = np.any(classify_writes(q, r, s, e) != X, axis=1) if s.size else np.zeros(q.size, bool)
    out["write_op_unblocked"] = _median((r - q)[~blocked])
    out["write_op_blocked"] = _median((r - q)[blocked])
    if first < s.size:
        out["lead_to_commit"] = float(s[first] - lead) * _NS
        out["first_commit"] = float(e[first] - s[first]) * _NS
        out["writers_before_first_commit"] = float(np.count_nonzero(r <= s[first]))
        if commits is not None and "locking" in commits:
            order = np.argsort(np.asarray(commits["start"], np.int64), kind="stable")
            locking = np.asarray(commits["locking"], np.int64)[order][first]
            if locking > 0:
                out["commit_lock"] = float(locking - s[first]) * _NS
    return out


def _busy_before(oncpu, t) -> np.ndarray:
    """ns the intervals (t_in, t_out) cover before each time in t, summed over intervals:
    sum over intervals begun before t of min(t, t_out) - t_in."""
    t = np.asarray(t, np.int64)
    t_in = np.sort(np.asarray(oncpu["t_in"], np.int64))
    t_out = np.sort(np.asarray(oncpu["t_out"], np.int64))
    cin = np.r_[0, np.cumsum(t_in)]
    cout = np.r_[0, np.cumsum(t_out)]
    n_in = np.searchsorted(t_in, t, side="left")
    n_out = np.searchsorted(t_out, t, side="right")
    return cout[n_out] - cin[n_in] + t * (n_in - n_out)


def cpu_terms(ops, oncpu, commits) -> dict:
    """CPU_TERMS of one run (seconds; NaN without on-CPU intervals, a writer or a commit
    after the lead), with lead and first commit as timing_terms takes them."""
    out = dict.fromkeys(CPU_TERMS, float("nan"))
    spans = thread_spans(ops)
    q = spans.write_start[spans.wrote]
    if not q.size or oncpu is None or not np.size(oncpu["t_in"]):
        return out
    lead = int(q.min())
    s, _ = commit_table(commits)
    first = np.searchsorted(s, lead)
    # the workload's CPU before the lead, each writer's start and the first commit's start
    busy = _busy_before(oncpu, np.r_[lead, q, s[first:first + 1]])
    busy = busy - busy[0]
    out["writer_lag_cpu"] = _median(busy[1:1 + q.size])
    if first < s.size:
        out["lead_to_commit_cpu"] = float(busy[-1]) * _NS
    return out


def terms_table(ds):
    """timing_terms of every run of a dataset, means over repetitions per point: a
    DataFrame (factor levels + TERMS, + CPU_TERMS where the dataset holds them: runs
    measured with the workload's sched_switch trace)."""
    import pandas as pd
    from ..data import runs, schema
    rid = ds[schema.RUN_ID]
    rows = []
    for idx in np.ndindex(rid.shape):
        run = int(rid.values[idx])
        if run < 0:
            continue
        lv = {d: rid[d].values[i].item() for d, i in zip(rid.dims, idx) if d != schema.REP}
        cpu = {k: float(ds[k].values[idx]) for k in CPU_TERMS if k in ds}
        rows.append({**lv, **timing_terms(runs.ops(ds, run), runs.commits(ds, run)), **cpu})
    df = pd.DataFrame(rows)
    keys = [d for d in rid.dims if d != schema.REP]
    return df.groupby(keys, sort=False).mean(numeric_only=True).reset_index()
