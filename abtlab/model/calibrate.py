"""Fit simulator parameters from one run's traces (real, emulated or simulated).

Estimators, chosen to be robust to the blocking the model describes:
- CPU time per op: the quiet durations (QUIET-th percentile) of opens and closes that
  overlap no commit, and of a write on the paper's write op: each thread's write op
  (first write start to last write end, Chang et al., MASCOTS 2014, eq. 4) that overlaps
  no commit, over its writes. A median would hold the waits for a core: 256 threads
  creating their files at once on a few vCPUs (a fitted open of 9.3 ms), or a guest's
  vCPUs taking turns at one instruction stream under icount. Converted to the reference
  frequency by the simulator's scaling rule c_ref = c / (nonscaling + (1 - nonscaling)
  f_ref / f). `write_kib` is the run's median write size, so that a caller can price
  the write per KiB (abtlab.sim.calibration does). When threads outnumber real cores
  and take turns at them a write at a time, even the quiet write op is mostly waits;
  then a write's CPU is the busy cores' time per write done while more threads write
  than there are cores: cores x window / writes.
- commit duration: least squares of (end - flushing) on the commit's journal blocks,
  giving commit_fixed_us + commit_us_per_block * blocks; its spread gives dev_cv. This
  is the device part (jbd2's T_FLUSH..end: ordered data, then the journal blocks).
- commit lock: median of (flushing - locking), jbd2's T_LOCKED phase, which lasts until
  every running handle has stopped (long when threads holding handles are preempted).
- journal blocks per handle: the commits' journal blocks (less the descriptor and commit
  block the simulator adds) over their member threads, pooled over the run. A thread is
  a member of the transaction running when its open or write ended or its fsync began
  (the simulator's handles: one per thread and transaction). Files share inode-table,
  bitmap and directory blocks, so this is well below one block per handle.
- data flush: median over commits of (commit start - start of the first fsync begun
  after the previous commit started): the triggering fsync's CPU part plus its own
  data write-back, the slack of Chang et al.'s (MASCOTS 2014) Fig. 6. It also holds CPU waits, so it is
  capped by the device's share per fsync: (span of the fsyncs - device time of the
  commits) / fsyncs, which in turn holds idle time. Both bound the flush from above.
"""
from __future__ import annotations

import numpy as np

from ..trace import Op
from .spans import commit_table, op_durations, thread_spans

__all__ = ["fit_sim_params", "cpu_scale", "write_op_cpu", "QUIET"]


QUIET = 10     # percentile of an op's durations read as its CPU (free of queueing)


def _quiet(d_ns) -> float:
    return float(np.percentile(d_ns, QUIET)) * 1e-3 if np.size(d_ns) else float("nan")


def _overlaps(q, r, s, e) -> np.ndarray:
    """Spans [q, r) that share time with a commit [s, e) (s sorted)."""
    if not s.size:
        return np.zeros(q.size, bool)
    k = np.searchsorted(s, r, side="left") - 1    # last commit started before r
    return (k >= 0) & (np.maximum.accumulate(e)[np.maximum(k, 0)] > q)


def _free_quiet(ops, op, s, e):
    """Quiet duration (us) of op records that overlap no commit."""
    _, q, r = op_durations(ops, op)
    free = ~_overlaps(q, r, s, e)
    return _quiet((r - q)[free])


def write_op_cpu(ops, s, e, quiet=False) -> float:
    """us of one write, from the write ops (eq. 4) that overlap no commit: the median of
    each one's duration over its writes (quiet: the QUIET-th percentile)."""
    spans = thread_spans(ops)
    w = spans.wrote
    q, r = spans.write_start[w], spans.write_end[w]
    tid, n = np.unique(ops["tid"][ops["op"] == Op.WRITE], return_counts=True)
    n = n[np.searchsorted(tid, spans.tids[w])]
    d = ((r - q) / n)[~_overlaps(q, r, s, e)]
    if quiet:
        return _quiet(d)
    return float(np.median(d)) * 1e-3 if d.size else float("nan")


def _commit_fit(commits):
    start = np.asarray(commits.get("flushing", commits["start"]), float)
    d = (np.asarray(commits["end"], float) - start) * 1e-3
    blocks = np.asarray(commits.get("blocks", np.zeros(d.size)), float)
    if d.size >= 3 and np.ptp(blocks) > 0:
        per_block, fixed = np.polyfit(blocks, d, 1)
        resid = d / (fixed + per_block * blocks)
    else:
        fixed, per_block = float(np.mean(d)), 0.0
        resid = d / fixed if fixed > 0 else d
    out = {"commit_fixed_us": float(fixed), "commit_us_per_block": float(per_block),
           "dev_cv": float(np.std(resid)) if d.size > 1 else 0.0, "commit_count": int(d.size)}
    if "locking" in commits and "flushing" in commits:
        lock = np.asarray(commits["flushing"], float) - np.asarray(commits["locking"], float)
        out["commit_lock_us"] = float(np.median(lock)) * 1e-3 if lock.size else float("nan")
    return out


def busy_write_us(ops, cores) -> float:
    """us of one core per write while more threads write than there are cores (from the
    first write until at most `cores` threads have not reached fsync): the cores are
    busy with writes, so cores x that time / the writes done in it. nan when threads do
    not outnumber the cores or the window holds fewer writes than threads."""
    threads = np.unique(ops["tid"]).size
    w = ops[ops["op"] == Op.WRITE]
    fs = np.sort(ops["t_start_ns"][ops["op"] == Op.FSYNC])
    if not cores or threads <= cores or w.size == 0 or fs.size < threads:
        return float("nan")
    start, stop = int(w["t_start_ns"].min()), int(fs[threads - cores - 1])
    done = np.count_nonzero(w["t_end_ns"] <= stop)
    return cores * (stop - start) * 1e-3 / done if done >= threads else float("nan")


def _waits_for_cores(ops, free_us) -> bool:
    """A write's quiet duration on the write op (free of commits) far above the fastest
    writes: writes wait for a core, and their duration is not their CPU."""
    _, q, r = op_durations(ops, Op.WRITE)
    return q.size > 0 and free_us > WAITING * float(np.percentile(r - q, 5)) * 1e-3


WAITING = 2.0     # median / 5th percentile of writes here: 1.0-1.6 on one vCPU, 14-154 on 4


def _blocks_per_handle(ops, commits):
    if "blocks" not in commits or len(commits["blocks"]) == 0:
        return float("nan")
    start = np.asarray(commits["start"], np.int64)
    order = np.argsort(start, kind="stable")
    start = start[order]
    blocks = np.asarray(commits["blocks"], float)[order]
    meta = np.isin(ops["op"], (Op.OPEN, Op.WRITE))
    fs = ops["op"] == Op.FSYNC
    when = np.concatenate([ops["t_end_ns"][meta], ops["t_start_ns"][fs]]).astype(np.int64)
    tid = np.concatenate([ops["tid"][meta], ops["tid"][fs]])
    txn = np.searchsorted(start, when, side="right")     # the transaction running then
    inside = txn < start.size                             # its commit is in the trace
    members = np.unique(np.stack([txn[inside], tid[inside]]), axis=1).shape[1]
    return float(np.clip(blocks - 2, 0, None).sum() / members) if members else float("nan")


def _flush(ops, s, commits):
    _, fq, fr = op_durations(ops, Op.FSYNC)
    if fq.size == 0:
        return float("nan")
    if s.size == 0:        # no journal: fsync = data flush + inode write
        return float(np.median(fr - fq)) * 1e-3
    prev = np.concatenate([[np.iinfo(np.int64).min], s[:-1]])
    busy = _busy_share(fq, fr, commits)
    k = np.searchsorted(fq, prev, side="right")      # first fsync begun after the previous start
    ok = (k < fq.size) & (fq[np.minimum(k, fq.size - 1)] <= s)
    slack = float(np.median(s[ok] - fq[k[ok]])) * 1e-3 if ok.any() else float("nan")
    return min(slack, busy) if np.isfinite(slack) else busy


def _busy_share(fq, fr, commits):
    """us per fsync of the fsync span not taken by commits' device time."""
    span = float(fr.max() - fq.min())
    start = np.asarray(commits.get("flushing", commits["start"]), float)
    end = np.asarray(commits["end"], float)
    inside = (start >= fq.min()) & (end <= fr.max())
    return max(span - float(np.sum(end[inside] - start[inside])), 0.0) / fq.size * 1e-3


def cpu_scale(freq_ghz, f_ref_ghz, nonscaling) -> float:
    """A CPU cost at freq_ghz over the same cost at f_ref_ghz, by the simulator's rule
    (abtlab.sim.params); 1 when either frequency is unknown."""
    if not (freq_ghz and f_ref_ghz):
        return 1.0
    return nonscaling + (1 - nonscaling) * f_ref_ghz / freq_ghz


def fit_sim_params(ops, commits, freq_ghz=None, f_ref_ghz=None, nonscaling=0.1,
                   cores=None) -> dict:
    """SimParams-named estimates (us) from an op trace and a commit table.
    With freq_ghz and f_ref_ghz the CPU costs are converted to f_ref; with the run's
    cores (real ones, not vCPUs sharing one stream), a write's CPU comes from the busy
    cores when even the quiet write ops wait for them."""
    s, e = commit_table(commits)
    scale = cpu_scale(freq_ghz, f_ref_ghz, nonscaling)
    out = {"open_us": _free_quiet(ops, Op.OPEN, s, e) / scale,
           "write_fixed_us": write_op_cpu(ops, s, e, quiet=True) / scale,
           "write_us_per_kib": 0.0,
           "close_us": _free_quiet(ops, Op.CLOSE, s, e) / scale,
           "flush_us": _flush(ops, s, commits)}
    quiet = write_op_cpu(ops, s, e, quiet=True)
    if _waits_for_cores(ops, quiet) and np.isfinite(busy := busy_write_us(ops, cores)):
        out["write_fixed_us"] = busy / scale
    if np.any(writes := ops["bytes"][ops["op"] == Op.WRITE]):
        out["write_kib"] = float(np.median(writes)) / 1024
    if s.size:
        out.update(_commit_fit(commits))
        out["blocks_per_handle"] = _blocks_per_handle(ops, commits)
    return out
