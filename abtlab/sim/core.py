"""Repetitions of one simulated point: the op program, one compiled call for all
repetitions, and RunResults with op and commit traces and the model's measures
(simulated data, labelled so).

The simulator knows why each thread waited, so a run's evidence-based counts
(`unblocked_threads`, `journal_blocked_full/partial`: abtlab.model.waits, eqs. 4-6) come
from its own record of every wait for a commit's lock, read as model.waits reads off-CPU
intervals of cause `t_locked` (a handle waiting while the commit holds the transaction,
or with shadow_wait while it logs); the model has no other sleep inside a write op but
the wait for a core, which it does not record (write_wait_cpu is left out)."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np

from ..model.measures import measures_reps
from ..model.spans import commit_table
from ..system.sleeps import CAUSES
from ..errors import ConfigError
from ..data.result import RunResult
from ..trace import RECORD_DTYPE
from . import aot
from . import state as K
from .params import SimParams, vector

__all__ = ["program", "draws", "run_batch", "run_raw", "run_once", "run_reps"]


def program(p: SimParams) -> np.ndarray:
    """The op sequence every thread runs (op codes of abtlab.trace.Op)."""
    if p.workload == "iozone":
        writes = -(-p.file_size // p.record_size)
        ops = [K.OPEN, K.BARRIER] + [K.WRITE] * writes + ([K.FSYNC] if p.fsync else []) + [K.CLOSE]
    else:
        ops = [K.OPEN, K.FSYNC, K.CLOSE] * p.files
    return np.asarray(ops, np.int64)


def _factors(rng, dist, cv, size):
    """Multiplicative variation with mean 1 and coefficient of variation cv."""
    if dist == "fixed" or cv == 0:
        return np.ones(size)
    if dist == "gamma":
        k = 1.0 / cv**2
        return rng.gamma(k, 1.0 / k, size)
    s2 = np.log1p(cv**2)
    return np.exp(rng.standard_normal(size) * np.sqrt(s2) - s2 / 2)


def draws(p: SimParams, prog, seeds, cap):
    """Per repetition (seeded by its seed): spawn times, (thread, op) factors for CPU,
    flush and inode (device factors only where the op is an fsync), commit factors."""
    if p.cpu_dist == p.dev_dist == "lognormal" and p.cpu_cv > 0 and p.dev_cv > 0:
        return _draws_lognormal(p, prog, seeds, cap)
    n, m, fs = p.threads, prog.size, prog == K.FSYNC
    spawn, cn = np.empty((len(seeds), n)), np.empty((len(seeds), cap))
    nz = np.ones((len(seeds), n, m, 3))
    for r, seed in enumerate(seeds):
        rng = np.random.default_rng(seed)
        cost = p.spawn_us * p.scale() * _factors(rng, p.cpu_dist, p.cpu_cv, n)
        spawn[r, 0], spawn[r, 1:] = 0.0, np.cumsum(cost[:-1])
        nz[r, :, :, 0] = _factors(rng, p.cpu_dist, p.cpu_cv, (n, m))
        nz[r, :, fs, 1:] = _factors(rng, p.dev_dist, p.dev_cv, (int(fs.sum()), n, 2))
        cn[r] = _factors(rng, p.dev_dist, p.dev_cv, cap)
    _poll_phases(p, prog, seeds, nz)
    return spawn, nz, cn


def _poll_phases(p: SimParams, prog, seeds, nz) -> None:
    """start=poll: each thread's poll timer phase at the release, a fraction of poll_us,
    in the barrier op's unused device factor (its own stream per seed, so the other
    draws stay as they are)."""
    if p.start != "poll":
        return
    for b in np.flatnonzero(prog == K.BARRIER):
        for r, seed in enumerate(seeds):
            nz[r, :, b, 1] = np.random.default_rng([int(seed), 1]).random(p.threads)


def _draws_lognormal(p: SimParams, prog, seeds, cap):
    """draws() when every factor is lognormal: the same stream (a normal deviate takes
    the same bits whether drawn alone or in a block), one block per repetition and the
    transforms vectorised over all repetitions."""
    n, m, fs = p.threads, prog.size, prog == K.FSYNC
    nfs, reps = int(fs.sum()), len(seeds)
    cuts = np.cumsum([n, n * m, nfs * n * 2, cap])
    z = np.empty((reps, cuts[-1]))
    for r, seed in enumerate(seeds):
        np.random.default_rng(seed).standard_normal(out=z[r])
    cpu = _lognormal(z[:, :cuts[1]], p.cpu_cv)   # in place: views of z
    dev = _lognormal(z[:, cuts[1]:], p.dev_cv)
    cost = p.spawn_us * p.scale() * cpu[:, :n]
    spawn = np.empty((reps, n))
    spawn[:, 0] = 0.0
    np.cumsum(cost[:, :-1], axis=1, out=spawn[:, 1:])
    nz = np.ones((reps, n, m, 3))
    nz[:, :, :, 0] = cpu[:, n:].reshape(reps, n, m)
    d = cuts[2] - cuts[1]
    nz[:, :, fs, 1:] = dev[:, :d].reshape(reps, nfs, n, 2).transpose(0, 2, 1, 3)
    _poll_phases(p, prog, seeds, nz)
    return spawn, nz, dev[:, d:]


def _lognormal(z, cv):
    """_factors' lognormal transform of standard normal deviates z, in place (fresh
    arrays this size cost page faults comparable to the transform itself)."""
    s2 = np.log1p(cv**2)
    z *= np.sqrt(s2)
    z -= s2 / 2
    return np.exp(z, out=z)


def _jobs(reps: int, jobs) -> int:
    """Threads for one point's repetitions: every usable core once there are enough
    repetitions to share (the kernel and the draws release the GIL)."""
    if jobs is not None:
        if not (isinstance(jobs, int) and jobs >= 1):
            raise ConfigError("jobs", jobs, "an integer >= 1 (threads for the repetitions)")
        return min(jobs, reps)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, reps // _MIN_CHUNK))


_MIN_CHUNK = 8   # below this many repetitions per thread, a thread costs more than it saves


def run_batch():
    """The kernel's run_batch: compiled ahead of time when built for these sources (no
    numba to load: abtlab.sim.aot), else numba's JIT (plain Python without numba)."""
    fn = aot.load()
    if fn is not None:
        return partial(aot.run_batch, fn)
    from .kernel import run_batch as jitted   # imports numba: over a second in a new process
    return jitted


def run_raw(p: SimParams, seeds, prog=None, pr=None, jobs=None):
    """Run the kernel for every seed, in one compiled call per thread (`jobs` threads;
    default: up to the usable cores, at least 8 repetitions each). Every repetition has
    its own seeded draws and fresh state, so the output does not depend on `jobs`.
    Returns (times (reps, threads*len(prog), 4) us: op start, end, lock wait start, end
    (-1: none), commits (reps, cap, 6) us, counts)."""
    prog = program(p) if prog is None else prog
    pr = vector(p) if pr is None else pr
    seeds = np.atleast_1d(np.asarray(seeds, np.int64))
    cap = p.threads * max(1, int(np.count_nonzero(prog == K.FSYNC))) + 1
    out_t = np.zeros((seeds.size, p.threads * prog.size, 4))
    out_c = np.zeros((seeds.size, cap, len(K.COMMIT_COLS)))
    counts = np.zeros(seeds.size, np.int64)

    def chunk(ix):
        lo, hi = ix[0], ix[-1] + 1
        spawn, nz, cn = draws(p, prog, seeds[lo:hi], cap)
        kernel(prog, pr, spawn, nz, cn, out_t[lo:hi], out_c[lo:hi], counts[lo:hi])

    kernel = run_batch()

    parts = [c for c in np.array_split(np.arange(seeds.size), _jobs(seeds.size, jobs)) if c.size]
    if len(parts) == 1:
        chunk(parts[0])
    else:
        with ThreadPoolExecutor(len(parts)) as ex:
            list(ex.map(chunk, parts))
    return out_t, out_c, counts


def _op_template(p: SimParams, prog) -> np.ndarray:
    ops = np.zeros(p.threads * prog.size, RECORD_DTYPE)
    ops["tid"] = np.repeat(np.arange(p.threads), prog.size)
    ops["pid"] = ops["tid"] + 1          # each thread its own task, as real records say
    ops["op"] = np.tile(prog, p.threads)
    ops["bytes"] = np.where(ops["op"] == K.WRITE, p.record_size, 0)
    return ops


def _to_ns(times, commits):
    """Kernel output (us, any leading dims) -> int64 ns; commit counts stay counts."""
    unit = np.array([1 if name in ("tid", "handles", "blocks") else 1e3 for name in K.COMMIT_COLS])
    return np.rint(times * 1e3).astype(np.int64), np.rint(commits * unit).astype(np.int64)


def _commit_dict(cns):
    c = {name: cns[:, j].copy() for j, name in enumerate(K.COMMIT_COLS)}
    c["locking"] = c["start"].copy()      # the model locks new handles from the commit's start
    c["logging"] = c["flushing"].copy()   # journal blocks are written once the device is free
    return c


def _attrs(p: SimParams) -> dict:
    fs = ("simulated ext4 (jbd2 model, data=ordered)" if p.policy != "nojc"
          else "simulated ext4 without journal")
    return {"freq_mode": "simulated", "backend": "sim", "filesystem": fs, "mount_options": "",
            **p.as_attrs()}


def _lock_waits(prog, ops, locks_ns, commits) -> list[dict]:
    """The evidence counts of every repetition from its lock waits (module doc): what
    model.waits.wait_measures gives for these waits as cause t_locked (tests/sim check
    that), computed on the simulator's fixed record layout (thread-major, one row per op
    of prog) for all repetitions at once, without the general path's joins.
    ops (reps, records); locks_ns (reps, threads, writes, 2); commits one dict each."""
    m, reps = prog.size, ops.shape[0]
    w = np.flatnonzero(prog == K.WRITE)
    q = ops["t_start_ns"].reshape(reps, -1, m)[:, :, w[0]].astype(np.int64)  # write op
    r = ops["t_end_ns"].reshape(reps, -1, m)[:, :, w[-1]].astype(np.int64)
    a, b = locks_ns[..., 0], locks_ns[..., 1]              # its writes' lock waits
    t0 = np.maximum(a, q[..., None])
    t1 = np.minimum(b, r[..., None])
    live = (a >= 0) & (t1 > t0)
    # commits padded to the most of any repetition by one that never starts (overlaps nothing)
    tables = [commit_table(c) for c in commits]
    s, e = (_padded([t[k] for t in tables]) for k in (0, 1))
    s4, e4 = s[:, None, None, :], e[:, None, None, :]
    by = (live[..., None] & (t0[..., None] < e4) & (t1[..., None] > s4)).any(axis=2)
    began_before = q[..., None] < s[:, None, :]
    any_y = np.any(by & began_before, axis=2)
    any_z = np.any(by & ~began_before, axis=2) & ~any_y
    # each thread's ns (exact integers), their mean per repetition as np.mean of that row
    per_thread = np.where(live, t1 - t0, 0).sum(axis=2)
    locked = [float(np.add.reduce(row, dtype=np.float64) / row.size) * 1e-9 for row in per_thread]
    unblocked = q.shape[1] - np.count_nonzero(by.any(axis=2), axis=1)
    full, partial = np.count_nonzero(any_y, axis=1), np.count_nonzero(any_z, axis=1)
    # the model has no other sleep inside a write op but the wait for a core, which it
    # does not record (so write_wait_cpu is left out)
    return [{"unblocked_threads": float(unblocked[k]), "journal_blocked_full": float(full[k]),
             "journal_blocked_partial": float(partial[k]), "write_wait_journal": locked[k],
             **{f"write_wait_{c}": (locked[k] if c == "t_locked" else 0.0)
                for c in CAUSES if c != "cpu"}}
            for k in range(reps)]


def _padded(columns) -> np.ndarray:
    """Ragged int64 columns as rows of one array, padded with int64's maximum."""
    out = np.full((len(columns), max((c.size for c in columns), default=0)),
                  np.iinfo(np.int64).max, np.int64)
    for k, c in enumerate(columns):
        out[k, :c.size] = c
    return out


# at most this many (repetition, thread, write, commit) cells in one pass of _lock_waits
_CELLS = 1 << 22


def run_reps(p: SimParams, seeds, jobs=None) -> list[RunResult]:
    """RunResults of one point, one per seed (repetitions share the kernel calls, and
    their measures are computed together: model.measures_reps)."""
    prog = program(p)
    times, commits, counts = run_raw(p, seeds, prog, jobs=jobs)
    ns, cns = _to_ns(times[..., :2], commits)  # one conversion for every repetition
    # lock waits (for the evidence counts) of the writes only: one row per thread
    writes = np.flatnonzero(prog == K.WRITE)
    locks = times.reshape(counts.size, p.threads, prog.size, 4)[:, :, writes, 2:]
    locks_ns = np.where(locks >= 0, np.rint(locks * 1e3), -1).astype(np.int64)
    ops = np.empty(ns.shape[:2], RECORD_DTYPE)  # every repetition's records in one array
    ops[...] = _op_template(p, prog)
    ops["t_start_ns"], ops["t_end_ns"] = ns[..., 0], ns[..., 1]
    attrs = _attrs(p)
    size = p.file_size if p.workload == "iozone" else None
    coms = [_commit_dict(cns[r, :counts[r]]) for r in range(counts.size)]
    scalars = []
    # in chunks of repetitions, so the (thread, commit) tables stay a few MB
    step = max(1, _CELLS // max(1, p.threads * max(1, writes.size) * (int(counts.max(initial=0)) + 1)))
    for lo in range(0, counts.size, step):
        hi = lo + step
        chunk = measures_reps(ops[lo:hi], coms[lo:hi], p.workload, file_size=size, fsync=p.fsync)
        if p.workload == "iozone":
            for sc, lw in zip(chunk, _lock_waits(prog, ops[lo:hi], locks_ns[lo:hi], coms[lo:hi])):
                sc.update(lw)
        scalars += chunk
    return [RunResult(scalars=sc, ops=ops[r], commits=coms[r], attrs=attrs)
            for r, sc in enumerate(scalars)]


def run_once(p: SimParams, seed: int) -> RunResult:
    """One repetition as a RunResult (freq_mode='simulated')."""
    return run_reps(p, [seed])[0]
