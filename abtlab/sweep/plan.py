"""One sweep's plan, built once from a call's settings and read by the loop and the
executor: what runs (the backend, its levels and points), how often and in which order,
with which options, where the dataset is kept and how the runs execute. Settings travel
as this one frozen value, not as a list of arguments handed down the call chain.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError

__all__ = ["Sweep", "RunSettings", "Output", "Execution", "SETTINGS", "ORDERS", "SEEDS",
           "split_settings", "expand"]

ORDERS = ("random", "blocked", "sequential")
SEEDS = ("per_run", "common")

# a sweep's settings besides its backend, levels, reps and out, with their defaults
# (abtlab.sweep.loop.run's keywords)
SETTINGS = {"seed": 0, "resume": False, "quiet": False, "order": "random", "warmup": 0,
            "options": None, "attrs": None, "command": None, "freq_mode": None,
            "scheduler": None, "workers": 2, "force": False, "wait": True, "seeds": "per_run",
            "dataset": True, "keep_going": False}


def split_settings(kw: dict, names=SETTINGS) -> tuple[dict, dict]:
    """(the keywords that are settings, the rest: factors and backend options)."""
    return ({k: v for k, v in kw.items() if k in names},
            {k: v for k, v in kw.items() if k not in names})


def expand(levels: dict) -> list[dict]:
    """Every combination of factor levels, in a stable order."""
    keys = list(levels)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(levels[k] for k in keys))]


@dataclass(frozen=True)
class RunSettings:
    """What every run of the sweep is given besides its point: the part of the plan a task
    carries to a worker (small: no points, no levels)."""
    backend: object              # a registry name (resolved on the worker) or a Backend
    options: dict = field(default_factory=dict)   # the backend's run options
    f_ref: float | None = None   # the highest frequency of the sweep, for emulation
    freq_mode: str = "native"


@dataclass(frozen=True)
class Output:
    """Where the dataset is kept: path None keeps it in memory (nothing to resume)."""
    path: Path | None = None
    resume: bool = False
    force: bool = False
    dataset: bool = True         # False: a written dataset may come back as its RunArrays


@dataclass(frozen=True)
class Execution:
    scheduler: object = None     # None/"serial", "local", an address or a dask Client
    workers: int = 2
    keep_going: bool = False     # a failed run is left missing and the sweep goes on
    wait: bool = True            # wait for another real run holding the machine


@dataclass(frozen=True)
class Sweep:
    """Everything one sweep runs; built by abtlab.sweep.loop.run, never changed after."""
    backend: object              # the Backend instance
    levels: dict
    points: tuple                # expand(levels), each checked by the backend
    reps: object                 # an int or a Reps rule
    seed: int
    seeds: str                   # "per_run" | "common" (abtlab.sweep.loop.run_seed)
    order: str
    warmup: int
    run: RunSettings
    output: Output
    execution: Execution
    quiet: bool = False
    command: str | None = None
    attrs: dict = field(default_factory=dict)     # attrs added to the dataset's
    spec: dict = field(default_factory=dict)      # what a --resume must match

    def __post_init__(self):
        if self.order not in ORDERS:
            raise ConfigError("order", self.order, " | ".join(ORDERS))
        if self.seeds not in SEEDS:
            raise ConfigError("seeds", self.seeds, " | ".join(SEEDS))

    @property
    def simulated(self) -> bool:
        return self.backend.simulated
