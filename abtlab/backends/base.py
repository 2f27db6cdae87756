"""The backend interface: one small class per workload driver.

A backend says what it can run here (`available()` with a reason), which factors it
sweeps, and runs one point, returning a `RunResult` (abtlab.data.result). `abtlab.sweep.loop` turns many
results into one run dataset, so every backend gets repetitions, storage, traces and
plots for free.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..data.result import RunResult
from ..machines.availability import Availability

__all__ = ["Backend", "Availability", "RunContext"]


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
    # options that say where a run keeps its files, not what it measures: not part of the
    # spec a --resume must match
    place_options: tuple = ()
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

    def accepts_option(self, name: str) -> bool:
        """Is `name` a run option of this backend (beyond `options`, for a backend whose
        options come from elsewhere, as the simulator's from its parameters)?"""
        return name in self.options

    def option_names(self) -> str:
        """The accepted option names, for an error message."""
        return ", ".join(sorted(self.options)) or "none"

    def parse_factor(self, name: str, value) -> list:
        """Levels of a backend-specific factor from a string like '4k,1m' or a list."""
        if isinstance(value, (list, tuple)):
            return list(value)
        return [v.strip() for v in str(value).split(",") if v.strip()]

    def run_point(self, point: dict, ctx) -> RunResult:
        raise NotImplementedError

    def dataset_labels(self, attrs: dict) -> dict:
        """Dataset attrs that replace the sweep's (e.g. a model's kernel and cpu labels)."""
        return {}

    # -- groups: runs that share a start-up cost (a guest boot, a compiled simulator call) --
    group_limit: int = 32

    def group_size(self, task) -> int:
        """At most this many tasks in one group."""
        return self.group_limit

    def group_key(self, task):
        """Consecutive sweep tasks with the same key (not None) may run as one group
        through run_group: a guest machine's points share one boot. None: alone."""
        return None

    def run_group(self, runs: list, workdir) -> list:
        """runs: [(point, RunContext)] of one group -> a RunResult or the RunError of each,
        in order (a failed run does not stop the others)."""
        from ..errors import AbtError
        out = []
        for point, ctx in runs:
            try:
                out.append(self.run_point(point, ctx))
            except AbtError as exc:
                out.append(exc)
        return out
