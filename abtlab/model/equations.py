"""The equations of the ABT model (Chang et al., MASCOTS 2014, section III), as small array functions.

Times may be scalars or numpy arrays, in any one unit. Eqs. (5) and (6) are
decompositions of the same elapsed write time as eq. (4): the terms name where the
time went (own work before the commit, time blocked by the commit, own work after).
`blocked_time` returns the middle term, which is what the slowdown is made of.
"""
from __future__ import annotations

import numpy as np

__all__ = ["t_op", "t_write_x", "t_write_y", "t_write_z", "blocked_time",
           "iozone_throughput", "throughput_by_class", "fcr", "fcr_approx"]


def t_op(q, r):
    """Eqs. (1)/(2): time to complete an op that begins at q and ends at r."""
    return np.asarray(r) - np.asarray(q)


def t_write_x(q_write, r_write):
    """Eq. (4): a write not affected by the commit."""
    return t_op(q_write, r_write)


def t_write_y(q_write, r_write, q_jc, r_jc):
    """Eq. (5): a write that starts before the commit and ends after it (fully blocked)."""
    return (np.asarray(q_jc) - q_write) + t_op(q_jc, r_jc) + (np.asarray(r_write) - r_jc)


def t_write_z(q_write, r_write, q_jc, r_jc):
    """Eq. (6): a write that starts during the commit and ends after it (partially blocked)."""
    return (np.asarray(r_jc) - q_write) + (np.asarray(r_write) - r_jc)


def blocked_time(q_write, q_jc, r_jc, cls):
    """Time of the commit that a write of class cls ('X', 'Y', 'Z') spends blocked:
    0 for X, T_JC(L_p) for Y (eq. 5's middle term), r_JC - q_write for Z (eq. 6)."""
    if cls == "X":
        return np.zeros_like(np.asarray(q_write, dtype=float))
    if cls == "Y":
        return t_op(q_jc, r_jc) * np.ones_like(np.asarray(q_write, dtype=float))
    if cls == "Z":
        return np.asarray(r_jc) - q_write
    raise ValueError(f"class must be 'X', 'Y' or 'Z', not {cls!r}")


def iozone_throughput(size, t_write):
    """Eq. (3): sum over threads of S / T_write(K_i). size: scalar or per thread."""
    t_write = np.asarray(t_write, dtype=float)
    return float(np.sum(np.asarray(size, dtype=float) / t_write))


def throughput_by_class(size, t_write, classes):
    """Eqs. (7)/(8): eq. (3) split into the X, Y and Z sums; returns {'X','Y','Z','total'}.
    classes: one of 'X','Y','Z' per thread (its class for the commit of interest)."""
    t_write = np.asarray(t_write, dtype=float)
    size = np.broadcast_to(np.asarray(size, dtype=float), t_write.shape)
    classes = np.asarray(classes)
    out = {c: float(np.sum(size[classes == c] / t_write[classes == c])) for c in "XYZ"}
    out["total"] = out["X"] + out["Y"] + out["Z"]
    return out


def fcr(files, t_open, t_fsync, t_close, t_write=()):
    """Eq. (9) for F files per worker: (N x F) / sum over every create of
    (T_open + T_fsync + T_close). With F = 1 it is the paper's N / sum_m(...). The
    arrays hold one entry per file creation (N x F entries); files = N x F.
    t_write: the time of data written into each file before its fsync (mdtest -w; the
    paper's test writes none), part of the create path when present.
    Note: like the paper's metric this is the mean rate of one worker's create path
    (files per second of create time), not the aggregate rate of all workers."""
    total = (np.sum(t_open, dtype=float) + np.sum(t_fsync, dtype=float)
             + np.sum(t_close, dtype=float) + np.sum(t_write, dtype=float))
    return float(files) / total if total > 0 else float("nan")


def fcr_approx(files, t_fsync):
    """Eq. (10): eq. (9) with T_open and T_close dropped (fsync dominates)."""
    total = np.sum(t_fsync, dtype=float)
    return float(files) / total if total > 0 else float("nan")
