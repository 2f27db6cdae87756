"""The backend interface: one small class per workload driver.

A backend says what it can run here (`available()` with a reason), which factors it
sweeps, and runs one point, returning a `RunResult` (abtlab.data.result). `abtlab.sweep.loop` turns many
results into one run dataset, so every backend gets repetitions, storage, traces and
plots for free.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..data.result import RunResult

__all__ = ["Backend", "Availability", "RunContext"]


@dataclass
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self):
        return self.ok


@dataclass
class RunContext:
    """What the sweep gives a backend for one repetition of one point."""
    workdir: object            # pathlib.Path: scratch space for this run
    rep: int = 0               # repetition index
    seed: int = 0              # reproducible per (point, rep): use it for any randomness
    quiet: bool = False        # no progress output
    f_ref_ghz: float | None = None   # reference (highest) frequency of the sweep, for emulation
    freq_mode: str = "native"        # real | emulated | simulated | native (no pinning)
    options: dict = field(default_factory=dict)  # backend-specific run options


class Backend:
    """Subclass and set name, description, factors; implement available() and run_point()."""
    name: str = ""
    description: str = ""
    # factor name -> default level; a point is a dict with every key set
    factors: dict = {}
    # option name -> help text; options are per-run settings that are not swept
    options: dict = {}
    # True for a model of the machine (runs anywhere, freq_mode "simulated", no real I/O)
    simulated: bool = False
    # factor -> parser(value) -> levels, overriding the runner's (e.g. simulator device presets)
    factor_parsers: dict = {}

    def available(self) -> Availability:
        return Availability(True)

    def validate_point(self, point: dict) -> dict:
        """Return the point with types checked; raise ConfigError naming the field."""
        return point

    def validate_options(self, options: dict) -> dict:
        """Return the run options checked; raise ConfigError naming the option."""
        return options

    def parse_factor(self, name: str, value) -> list:
        """Levels of a backend-specific factor from a string like '4k,1m' or a list."""
        if isinstance(value, (list, tuple)):
            return list(value)
        return [v.strip() for v in str(value).split(",") if v.strip()]

    def run_point(self, point: dict, ctx) -> RunResult:
        raise NotImplementedError
