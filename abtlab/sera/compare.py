"""Frequency policies compared on workloads made of phases: time, energy, EDP per policy.

A phase knows its time at each frequency (`time_at(f) -> s`, from the simulator or from
emulated-frequency runs) and the pattern of its accesses. Policies:

fixed-high, fixed-low  one frequency for everything (Ge et al., CCGrid 2012, Table IV)
ondemand               utilisation governor sampled every `sampling_s`: above
                       up_threshold -> highest, else the lowest f >= fmin + u (fmax - fmin)
                       (Linux ondemand); it starts each phase at the previous phase's f
sera                   the target-frequency table built from each pattern profiled alone
abt-aware              sera, but never a frequency where the ABT model (the simulator at the
                       phase's concurrency, its own seed) predicts that a lower frequency is
                       faster by more than `tol`; such phases take the predicted-best
                       frequency (min time for type I patterns, min EDP for type II)
time_s is wall time; io_time_s is the benchmark's own measure (work / rate, where the
slowdown of Chang et al., MASCOTS 2014, appears). Energy is always modelled: P(f) at full
utilisation, as Ge et al. (CCGrid 2012) measured nodal power during
I/O (Table III: 141-183 W); utilisation (a fit T(f) = a + b fmax/f) only drives ondemand.
Each result row carries the label of its time source and "modelled" for energy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..system.energy import PowerModel, sera_io_node_model
from .profile import DEFAULT_THRESHOLD_S, access_type, profile_pattern
from .table import build

__all__ = ["Phase", "Workload", "POLICIES", "compare", "build_table", "utilisation",
           "slowdown_freqs"]

POLICIES = ("fixed-high", "fixed-low", "ondemand", "sera", "abt-aware")


@dataclass
class Phase:
    name: str
    time_at: object                 # f GHz -> seconds of the whole phase
    mode: str                       # label of time_at: simulated | emulated | measured | modelled
    pattern: object = None          # IOPattern; None for a compute phase
    access_time_at: object = None   # f -> seconds of ONE access profiled alone (SERA's table)
    predict_at: object = None       # f -> ABT model's predicted io_time at the phase's concurrency
    count: int = 1
    io_time_at: object = None       # f -> the benchmark's own time, work / rate (IOzone
                                    # throughput, Metarates FCR): where the ABT slowdown shows


@dataclass
class Workload:
    name: str
    phases: list
    notes: dict = field(default_factory=dict)


def _memo(fn):
    cache = {}
    return lambda f: cache[f] if f in cache else cache.setdefault(f, float(fn(f)))


def utilisation(time_at, freqs) -> object:
    """u(f) from a least-squares fit T(f) = a + b * fmax / f (a, b >= 0), clipped to
    [0.02, 1]: the share of the phase that scales with the clock. A modelled quantity."""
    fmax = max(freqs)
    x = np.array([fmax / f for f in freqs])
    t = np.array([time_at(f) for f in freqs])
    (a, b), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(x), x]), t, rcond=None)
    a, b = max(a, 0.0), max(b, 0.0)
    return lambda f: float(np.clip(b * fmax / f / max(a + b * fmax / f, 1e-12), 0.02, 1.0))


def slowdown_freqs(predict_at, freqs, tol=0.02) -> set:
    """Frequencies at which some lower frequency is predicted faster by more than tol."""
    out, best = set(), float("inf")
    for f in sorted(freqs):
        t = predict_at(f)
        if t > best * (1 + tol):
            out.add(f)
        best = min(best, t)
    return out


def build_table(workloads, freqs, power: PowerModel, threshold_s=DEFAULT_THRESHOLD_S):
    """SERA-IO's table: each distinct pattern profiled alone at every frequency."""
    profiles = {}
    for w in workloads:
        for ph in w.phases:
            if ph.pattern is None or ph.pattern in profiles or ph.access_time_at is None:
                continue
            profiles[ph.pattern] = profile_pattern(
                ph.pattern.describe(), ph.access_time_at, freqs, power.power, ph.mode,
                "modelled", ph.pattern)
    table = build(list(profiles.values()), freqs, threshold_s,
                  {"energy_mode": "modelled", "power_model": power.source})
    types = {p: access_type(pr, threshold_s) for p, pr in profiles.items()}
    return table, types, profiles


@dataclass
class _Ctx:
    freqs: list
    power: PowerModel
    table: object
    types: dict
    tol: float
    sampling_s: float
    up_threshold: float
    current: float = 0.0


def _choose(policy, ph, ctx, u):
    fmin, fmax = ctx.freqs[0], ctx.freqs[-1]
    if policy == "fixed-high":
        return fmax
    if policy == "fixed-low":
        return fmin
    f = fmax if ph.pattern is None else ctx.table.lookup(ph.pattern)[0]
    if policy == "sera" or ph.predict_at is None:
        return f
    bad = slowdown_freqs(ph.predict_at, ctx.freqs, ctx.tol)
    if f not in bad:
        return f
    ok = [g for g in ctx.freqs if g not in bad]
    if ctx.types.get(ph.pattern) == "I":
        return min(ok, key=lambda g: (ph.predict_at(g), g))
    return min(ok, key=lambda g: ctx.power.power(g) * ph.predict_at(g) ** 2)


def _governor(u, ctx):
    fmin, fmax = ctx.freqs[0], ctx.freqs[-1]
    if u > ctx.up_threshold:
        return fmax
    want = fmin + u * (fmax - fmin)
    return min(f for f in ctx.freqs if f >= want - 1e-9)


def _ondemand_segments(ph, ctx, u):
    """[(f, seconds)]: the governor re-decides every sampling_s from the load it sees."""
    segs, done, f = [], 0.0, ctx.current or ctx.freqs[-1]
    for _ in range(1000):
        nxt = _governor(u(f), ctx)
        left = (1 - done) * ph.time_at(f)
        if nxt == f or left <= ctx.sampling_s:
            segs.append((f, left))
            return segs
        segs.append((f, ctx.sampling_s))
        done += ctx.sampling_s / ph.time_at(f)
        f = nxt
    segs.append((f, (1 - done) * ph.time_at(f)))
    return segs


def _run_policy(policy, workload, ctx, switch_s):
    time = energy = io_time = 0.0
    switches, chosen = 0, []
    ctx.current = ctx.freqs[-1]
    for ph in workload.phases:
        u = utilisation(ph.time_at, ctx.freqs) if ph.pattern is not None else (lambda f: 1.0)
        for _ in range(ph.count):
            segs = _ondemand_segments(ph, ctx, u) if policy == "ondemand" else \
                [(_choose(policy, ph, ctx, u), None)]
            for f, secs in segs:
                secs = ph.time_at(f) if secs is None else secs
                if f != ctx.current:
                    switches += 1
                    time += switch_s
                    energy += switch_s * ctx.power.power(max(f, ctx.current))
                time += secs
                energy += secs * ctx.power.power(f)
                io = ph.io_time_at or ph.time_at
                io_time += secs / ph.time_at(f) * io(f)
                ctx.current = f
                chosen.append(f)
    return time, energy, io_time, switches, chosen


def compare(workloads, freqs=(0.8, 1.3, 1.8, 2.5), power=None, policies=POLICIES, tol=0.02, sampling_s=0.01,
            up_threshold=0.8, switch_s=50e-6, threshold_s=DEFAULT_THRESHOLD_S):
    """One row per (workload, policy): time_s, energy_j, edp, their ratios to fixed-high,
    frequencies used, and the labels time_mode / energy_mode ("modelled")."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    for p in policies:
        if p not in POLICIES:
            raise ConfigError("policies", p, " | ".join(POLICIES))
    freqs = sorted(float(f) for f in freqs)
    if len(freqs) < 2:
        raise ConfigError("freqs", freqs, "at least two frequencies in GHz")
    power = power or sera_io_node_model()
    for w in workloads:
        for ph in w.phases:
            ph.time_at = _memo(ph.time_at)
            ph.predict_at = _memo(ph.predict_at) if ph.predict_at else None
            ph.access_time_at = _memo(ph.access_time_at) if ph.access_time_at else None
            ph.io_time_at = _memo(ph.io_time_at) if ph.io_time_at else None
    table, types, _ = build_table(workloads, freqs, power, threshold_s)
    ctx = _Ctx(freqs, power, table, types, tol, sampling_s, up_threshold)
    rows = []
    for w in workloads:
        modes = sorted({ph.mode for ph in w.phases})
        for p in policies:
            t, e, io, n, chosen = _run_policy(p, w, ctx, switch_s)
            rows.append({"workload": w.name, "policy": p, "time_s": t, "io_time_s": io,
                         "energy_j": e,
                         "edp": e * t, "switches": n,
                         "freqs_ghz": ",".join(f"{f:g}" for f in sorted(set(chosen))),
                         "time_mode": "+".join(modes), "energy_mode": "modelled"})
    df = pd.DataFrame(rows)
    base = df[df.policy == policies[0]].set_index("workload")
    for col in ("time_s", "io_time_s", "energy_j", "edp"):
        df[f"{col}_vs_{policies[0]}"] = df[col] / df.workload.map(base[col])
    df.attrs.update({"table": table, "types": types, **power.attrs()})
    return df
