"""Fit simulator parameters from one run's traces (real, emulated or simulated).

Estimators, chosen to be robust to the blocking the model describes:
- CPU time per op: median duration of opens, writes and closes that overlap no commit
  (a blocked op measures the commit, not the CPU), converted to the reference frequency
  by the simulator's scaling rule c_ref = c / (nonscaling + (1 - nonscaling) f_ref / f).
- commit duration: least squares of (end - flushing) on the commit's journal blocks,
  giving commit_fixed_us + commit_us_per_block * blocks; its spread gives dev_cv.
- data flush: median over commits of (commit start - start of the last fsync begun
  before it): the triggering fsync's CPU part plus its data flush.
"""
from __future__ import annotations

import numpy as np

from ..trace import Op
from .spans import commit_table, op_durations

__all__ = ["fit_sim_params"]


def _free_median(ops, op, s, e):
    """Median duration (us) of op records that overlap no commit interval."""
    _, q, r = op_durations(ops, op)
    if q.size == 0:
        return float("nan")
    if s.size:
        k = np.searchsorted(s, r, side="left") - 1    # last commit started before r
        hit = (k >= 0) & (e[np.maximum(k, 0)] > q)
        q, r = q[~hit], r[~hit]
    return float(np.median(r - q)) * 1e-3 if q.size else float("nan")


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
    return {"commit_fixed_us": float(fixed), "commit_us_per_block": float(per_block),
            "dev_cv": float(np.std(resid)) if d.size > 1 else 0.0, "commit_count": int(d.size)}


def _flush(ops, s):
    _, fq, fr = op_durations(ops, Op.FSYNC)
    if fq.size == 0:
        return float("nan")
    if s.size == 0:        # no journal: fsync = data flush + inode write
        return float(np.median(fr - fq)) * 1e-3
    k = np.searchsorted(fq, s, side="left") - 1       # last fsync begun before each commit
    ok = k >= 0
    return float(np.median(s[ok] - fq[k[ok]])) * 1e-3 if ok.any() else float("nan")


def fit_sim_params(ops, commits, freq_ghz=None, f_ref_ghz=None, nonscaling=0.1) -> dict:
    """SimParams-named estimates (us) from an op trace and a commit table.
    With freq_ghz and f_ref_ghz the CPU costs are converted to f_ref."""
    s, e = commit_table(commits)
    scale = 1.0
    if freq_ghz and f_ref_ghz:
        scale = nonscaling + (1 - nonscaling) * f_ref_ghz / freq_ghz
    out = {"open_us": _free_median(ops, Op.OPEN, s, e) / scale,
           "write_fixed_us": _free_median(ops, Op.WRITE, s, e) / scale,
           "write_us_per_kib": 0.0,
           "close_us": _free_median(ops, Op.CLOSE, s, e) / scale,
           "flush_us": _flush(ops, s)}
    if s.size:
        out.update(_commit_fit(commits))
    return out
