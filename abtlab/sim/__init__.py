"""A discrete-event simulator of the ABT mechanism (simulated data, labelled so).

`simulate(...)` runs a grid of points x repetitions and returns a run dataset with
freq_mode="simulated", op and commit traces included. See `kernel` for the mechanism
and `params` for the parameters and their units.
"""
from __future__ import annotations

import itertools

import numpy as np

from .core import run_once, run_raw, run_reps
from .params import DEVICES, SimParams, load_params, make

__all__ = ["simulate", "simulate_point", "run_once", "run_raw", "run_reps", "make",
           "load_params", "SimParams", "DEVICES", "FACTORS"]

# factor dims the simulator sweeps (schema.FACTOR_DIMS names)
FACTORS = ("policy", "freq_ghz", "threads", "file_size", "record_size", "files", "device")


def simulate_point(reps=10, seed=0, **params):
    """RunResults of `reps` repetitions of one point; repetition r uses seed + r.
    `params=` (a TOML path or dict, e.g. from `abtlab calibrate`) sets defaults."""
    p = make(**params)
    return run_reps(p, seed + np.arange(reps))


def simulate(reps=10, seed=0, traces=True, **params):
    """Simulate every combination of the list-valued factors (FACTORS) x reps.

    Other keywords are SimParams fields (workload, cores, device_overrides, ...).
    Returns an xarray.Dataset in the run schema (dims: FACTORS + rep)."""
    from ..data.schema import timestamp
    from .dataset import assemble_sim_dataset
    from ..errors import ConfigError
    if not isinstance(reps, int) or reps < 1:
        raise ConfigError("reps", reps, "an integer >= 1")
    start = timestamp()
    src = params.pop("params", None)
    base = load_params(src) if src is not None else {}
    defaults = SimParams()
    levels = {}
    for f in FACTORS:
        v = params.pop(f, base.pop(f, getattr(defaults, f)))
        levels[f] = list(v) if isinstance(v, (list, tuple)) else [v]
    results = []
    for combo in itertools.product(*levels.values()):
        results += simulate_point(reps, seed, params=base, **dict(zip(FACTORS, combo)), **params)
    levels["policy"] = [make(policy=p).policy for p in levels["policy"]]
    cmd = f"abtlab.sim.simulate(reps={reps}, seed={seed}, {levels}, {params})"
    return assemble_sim_dataset(levels, reps, results, cmd, start, traces)
