"""Workloads for the policy comparison, timed by the simulator or by emulated-frequency runs.

iozone      N threads each write a file in records and fsync it (Chang et al., MASCOTS 2014, Figs. 4-5)
metarates   N workers create, fsync and close files (Chang et al., MASCOTS 2014, Fig. 6)
fio-seq     one thread streaming large records then fsync (a fio-like sequential write)
mixed       compute bursts (modelled: time ~ 1/f) between iozone I/O phases (BT-IO-like)

For each I/O phase: time_at = the workload at its concurrency; access_time_at = one access
of the pattern profiled alone (one thread, the SERA-IO micro-benchmark); predict_at = the
simulator (the ABT model) at the phase's concurrency with a seed of its own.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .compare import Phase, Workload
from .patterns import IOPattern

__all__ = ["SHAPES", "sim_workloads", "emulated_workloads", "WORKLOADS"]

# name -> (simulator/backend workload, factors, the pattern of its dominant access)
SHAPES = {
    "iozone": ("iozone", dict(threads=64, file_size=128 << 10, record_size=32 << 10),
               IOPattern("write", 32 << 10)),
    "metarates": ("metarates", dict(threads=64, files=4), IOPattern("sync", 0)),
    "fio-seq": ("iozone", dict(threads=1, file_size=16 << 20, record_size=1 << 20),
                IOPattern("write", 1 << 20)),
}
WORKLOADS = tuple(SHAPES) + ("mixed",)
PREDICT_SEED = 10_000   # the ABT model's runs never share draws with the evaluated runs


def _work(kind, factors):
    """io_time = work / rate: all bytes over IOzone's aggregate throughput (eq. 3), or one
    worker's files over Metarates' FCR (eq. 9, a per-worker rate)."""
    if kind == "metarates":
        return factors["files"]
    return factors["threads"] * factors["file_size"]


def _stats_time(stats, key):
    return lambda f: stats(f)[key]


def _accesses(kind, factors):
    if kind == "metarates":
        return factors["files"]
    return factors["file_size"] // factors["record_size"]


def _sim_stats(kind, factors, freqs, reps, seed, device):
    """f -> {elapsed, io_time} (mean over reps) from abtlab.sim, memoized."""
    # deferred: the simulator, 48 more modules, only for simulated workloads
    from ..sim import simulate_point
    cache = {}
    rate = "fcr" if kind == "metarates" else "throughput"

    def at(f):
        if f not in cache:
            rs = simulate_point(reps, seed, workload=kind, freq_ghz=f, f_ref_ghz=max(freqs),
                                device=device, **factors)
            cache[f] = {"elapsed": float(np.mean([r.scalars["elapsed"] for r in rs])),
                        "io_time": _work(kind, factors) / float(np.mean(
                            [r.scalars[rate] for r in rs]))}
        return cache[f]
    return at


def _sim_phase(name, freqs, reps, seed, device):
    kind, factors, pattern = SHAPES[name]
    n = _accesses(kind, factors)
    whole = _sim_stats(kind, factors, freqs, reps, seed, device)
    one = _sim_stats(kind, {**factors, "threads": 1}, freqs, reps, seed, device)
    pred = _sim_stats(kind, factors, freqs, reps, seed + PREDICT_SEED, device)
    return Phase(name, _stats_time(whole, "elapsed"), "simulated", pattern,
                 lambda f: one(f)["elapsed"] / n, _stats_time(pred, "io_time"),
                 io_time_at=_stats_time(whole, "io_time"))


def _mixed(io_phase, freqs, compute_s=0.02, cycles=4):
    fmax = max(freqs)
    compute = Phase("compute", lambda f: compute_s * fmax / f, "modelled")
    phases = []
    for _ in range(cycles):
        phases += [compute, io_phase]
    return Workload("mixed", phases, {"compute_s_at_fmax": compute_s, "cycles": cycles})


def _check(names):
    for n in names:
        if n not in WORKLOADS:
            raise ConfigError("workloads", n, " | ".join(WORKLOADS))


def sim_workloads(names=WORKLOADS, freqs=(0.8, 1.3, 1.8, 2.5), reps=3, seed=0,
                  device="hdd7200"):
    """Workloads timed by abtlab.sim (every time labelled simulated); the 7200 rpm disk
    of Chang et al. (MASCOTS 2014) by default."""
    _check(names)
    phases = {n: _sim_phase(n, freqs, reps, seed, device) for n in SHAPES if n in names or
              (n == "iozone" and "mixed" in names)}
    out = [Workload(n, [phases[n]]) for n in SHAPES if n in names]
    if "mixed" in names:
        out.append(_mixed(phases["iozone"], freqs))
    return out


def _emulated_stats(backend, kind, factors, freqs, reps, seed, quiet):
    """f -> {elapsed, io_time} from one emulated-frequency sweep of a real backend."""
    # deferred: the sweep runner only for emulated-frequency runs
    from ..sweep.runner import run
    ds = run(backend, freq="emulated:" + ",".join(f"{f:g}" for f in freqs), reps=reps,
             seed=seed, quiet=quiet, warmup=1, **{k: str(v) for k, v in factors.items()})
    rate = "fcr" if kind == "metarates" else "throughput"

    def per_freq(var):
        v = ds[var].mean("rep")
        other = [d for d in v.dims if d != "freq_ghz"]
        v = v.squeeze(other, drop=True) if other else v
        return {round(float(f), 6): float(v.sel(freq_ghz=f)) for f in v["freq_ghz"].values}
    el, rt = per_freq("elapsed"), per_freq(rate)
    work = _work(kind, factors)
    return lambda f: {"elapsed": el[round(float(f), 6)], "io_time": work / rt[round(float(f), 6)]}


def emulated_workloads(names=("iozone", "metarates"), freqs=(0.8, 1.3, 1.8, 2.5), reps=2,
                       seed=0, threads=None, quiet=True):
    """Workloads timed on the real kernel (scratch ext4, jbd2) with emulated frequency:
    each frequency is a separate run; policies are then applied to those times offline.
    The ABT prediction stays the simulator (not calibrated to this machine)."""
    _check(names)
    out = []
    for n in names:
        if n == "mixed":
            continue
        kind, factors, pattern = SHAPES[n]
        factors = {**factors, **({"threads": threads} if threads and factors["threads"] > 1 else {})}
        backend = "metarates" if kind == "metarates" else "iozone"
        whole = _emulated_stats(backend, kind, factors, freqs, reps, seed, quiet)
        one = _emulated_stats(backend, kind, {**factors, "threads": 1}, freqs, reps, seed, quiet)
        acc = _accesses(kind, factors)
        pred = _sim_stats(kind, factors, freqs, 3, seed + PREDICT_SEED, "loop")
        out.append(Workload(n, [Phase(n, _stats_time(whole, "elapsed"), "emulated", pattern,
                                      lambda f, one=one, acc=acc: one(f)["elapsed"] / acc,
                                      _stats_time(pred, "io_time"),
                                      io_time_at=_stats_time(whole, "io_time"))]))
    if "mixed" in names and any(w.name == "iozone" for w in out):
        out.append(_mixed(next(w for w in out if w.name == "iozone").phases[0], freqs))
    return out
