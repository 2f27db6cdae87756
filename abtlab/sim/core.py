"""One simulated repetition: build the op program and the random draws, run the kernel,
return a RunResult with op and commit traces and the model's measures (simulated data)."""
from __future__ import annotations

import numpy as np

from .. import model
from ..backends.base import RunResult
from ..trace import RECORD_DTYPE
from . import kernel as K
from .params import SimParams, vector

__all__ = ["program", "draws", "run_once", "run_raw"]


def program(p: SimParams) -> np.ndarray:
    """The op sequence every thread runs (op codes of abtlab.trace.Op)."""
    if p.workload == "iozone":
        writes = -(-p.file_size // p.record_size)
        ops = [K.OPEN, K.BARRIER] + [K.WRITE] * writes + ([K.FSYNC] if p.fsync else []) + [K.CLOSE]
    else:
        ops = [K.OPEN, K.FSYNC, K.CLOSE] * p.files
    return np.asarray(ops, np.int64)


def _factor(rng, dist, cv, shape):
    """Multiplicative variation with mean 1 and coefficient of variation cv."""
    if dist == "fixed" or cv == 0:
        return np.ones(shape)
    if dist == "gamma":
        k = 1.0 / cv**2
        return rng.gamma(k, 1.0 / k, shape)
    s2 = np.log1p(cv**2)
    return rng.lognormal(-s2 / 2, np.sqrt(s2), shape)


def draws(p: SimParams, nprog: int, seed: int):
    """(spawn times, per-op noise (N, nprog, 3), commit noise) for one repetition."""
    rng = np.random.default_rng(seed)
    n = p.threads
    nz = np.empty((n, nprog, 3))
    nz[:, :, 0] = _factor(rng, p.cpu_dist, p.cpu_cv, (n, nprog))
    nz[:, :, 1:] = _factor(rng, p.dev_dist, p.dev_cv, (n, nprog, 2))
    spawn_cost = p.spawn_us * p.scale() * _factor(rng, p.cpu_dist, p.cpu_cv, n)
    spawn = np.cumsum(spawn_cost) - spawn_cost[0]
    cn = _factor(rng, p.dev_dist, p.dev_cv, n * max(p.files, 1) + 1)
    return spawn, nz, cn


def run_raw(p: SimParams, seed: int, prog=None, pr=None):
    """Run the kernel; returns (out_o (N*nprog, 5) float, out_c (commits, 6) float)."""
    prog = program(p) if prog is None else prog
    pr = vector(p) if pr is None else pr
    spawn, nz, cn = draws(p, prog.size, seed)
    out_o = np.zeros((p.threads * prog.size, 5))
    out_o[:, 0] = np.repeat(np.arange(p.threads), prog.size)
    out_o[:, 1] = np.tile(prog, p.threads)
    out_o[:, 2] = np.where(out_o[:, 1] == K.WRITE, p.record_size, 0)
    out_c = np.zeros((cn.size, 6))
    nc = K.run_kernel(prog, pr, spawn, nz, cn, out_o, out_c)
    return out_o, out_c[:nc]


def to_traces(out_o, out_c):
    """Kernel output -> (ops as RECORD_DTYPE, commits dict), times in ns."""
    ops = np.zeros(out_o.shape[0], RECORD_DTYPE)
    ops["tid"] = out_o[:, 0]
    ops["op"] = out_o[:, 1]
    ops["bytes"] = out_o[:, 2]
    ops["t_start_ns"] = np.rint(out_o[:, 3] * 1e3)
    ops["t_end_ns"] = np.rint(out_o[:, 4] * 1e3)
    c = {"tid": out_c[:, 0].astype(np.int64),
         "start": np.rint(out_c[:, 1] * 1e3).astype(np.int64),
         "flushing": np.rint(out_c[:, 2] * 1e3).astype(np.int64),
         "end": np.rint(out_c[:, 3] * 1e3).astype(np.int64),
         "handles": out_c[:, 4].astype(np.int64), "blocks": out_c[:, 5].astype(np.int64)}
    c["locking"] = c["start"].copy()      # the model locks metadata from the commit's start
    c["logging"] = c["flushing"].copy()   # journal blocks are written once the device is free
    return ops, c


def run_once(p: SimParams, seed: int) -> RunResult:
    """One repetition as a RunResult (freq_mode='simulated')."""
    ops, commits = to_traces(*run_raw(p, seed))
    scalars = model.measures(ops, commits, p.workload,
                             file_size=p.file_size if p.workload == "iozone" else None,
                             fsync=p.fsync)
    attrs = {"freq_mode": "simulated", "backend": "sim",
             "filesystem": "simulated ext4 (jbd2 model, data=ordered)"
             if p.policy != "nojc" else "simulated ext4 without journal",
             "mount_options": "", **p.as_attrs()}
    return RunResult(scalars=scalars, ops=ops, commits=commits, attrs=attrs)
