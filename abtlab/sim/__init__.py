"""A discrete-event simulator of the ABT mechanism (simulated data, labelled so).

`simulate(...)` runs a grid of points x repetitions and returns a run dataset with
freq_mode="simulated", op and commit traces included. See `kernel` for the mechanism
and `params` for the parameters and their units.
"""
from __future__ import annotations

import numpy as np

from .core import run_once, run_raw, run_reps
from .params import DEVICES, SimParams, load_params, make
from ..errors import ConfigError

__all__ = ["simulate", "simulate_point", "run_once", "run_raw", "run_reps", "make",
           "load_params", "SimParams", "DEVICES", "FACTORS"]

# factor dims the simulator sweeps (schema.FACTOR_DIMS names)
FACTORS = ("policy", "freq_ghz", "threads", "file_size", "record_size", "files", "device")


def simulate_point(reps=10, seed=0, **params):
    """RunResults of `reps` repetitions of one point; repetition r uses seed + r.
    `params=` (a TOML path or dict, e.g. from `abtlab calibrate`) sets defaults."""
    p = make(**params)
    return run_reps(p, seed + np.arange(reps))


def simulate(reps=10, seed=0, traces=True, out=None, resume=False, quiet=True, **params):
    """Simulate every combination of the list-valued factors (FACTORS) x reps.

    Other keywords are SimParams fields (workload, cores, device_overrides, ...).
    It runs as a sweep (abtlab.sweep.loop, backend `sim`): with out= every finished
    repetition is kept and resume=True continues a stopped one. Repetition r of every
    point uses seed + r (common random numbers, as simulate_point).
    Returns an xarray.Dataset in the run schema (dims: FACTORS + rep)."""
    # deferred: the sweep machinery, 27 more modules, which `import abtlab.sim` does without
    from .backend import SimBackend
    from ..sweep.loop import run
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ConfigError("reps", reps, "an integer >= 1")
    src = params.pop("params", None)
    base = load_params(src) if src is not None else {}
    defaults = SimParams()
    levels = {}
    for f in FACTORS:
        v = params.pop(f, base.pop(f, getattr(defaults, f)))
        levels[f] = list(v) if isinstance(v, (list, tuple)) else [v]
    levels["policy"] = [make(policy=p).policy for p in levels["policy"]]
    cmd = f"abtlab.sim.simulate(reps={reps}, seed={seed}, {levels}, {params})"
    # the file's fields under the keywords, as simulate_point(params=...) takes them
    options = {**({"params": base} if base else {}), **params, "traces": traces}
    return run(SimBackend(), levels, reps=reps, out=out, seed=seed, resume=resume,
               quiet=quiet, order="sequential", seeds="common", options=options, command=cmd)
