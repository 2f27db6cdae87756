"""The backend interface: one small class per workload driver.

A backend says what it can run here (`available()` with a reason), which factors it
sweeps, and runs one point, returning a `RunResult` (abtlab.data.result). `abtlab.sweep.loop` turns many
results into one run dataset, so every backend gets repetitions, storage, traces and
plots for free. A driver that runs a program on the point's machine (abtlab.machines)
subclasses `ProgramBackend`, a third-party tool `ToolBackend`: the machines' dispatcher
sends each point to its machine and runs a guest machine's consecutive points in one boot.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data.result import RunResult
from ..errors import AbtError, ConfigError
from ..machines.availability import Availability

if TYPE_CHECKING:
    from ..machines.host import Prepared
    from ..machines.tool_runner import ToolJob, ToolRun

__all__ = ["Backend", "ProgramBackend", "ToolBackend", "Availability", "RunContext"]


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

    # -- where its points run: the sweep asks, the driver answers. This class's answers are
    # a driver's that runs in this process (a model: nowhere real); ProgramBackend's come
    # from abtlab.machines.placement
    def available_for(self, levels: dict) -> Availability:
        """Can these levels' points run here (with the reason when not)?"""
        return self.available()

    def check_levels(self, levels: dict) -> None:
        """Before any point runs: ConfigError for what these levels need and this machine
        cannot give (a guest kernel it cannot build)."""

    def check_virtual_freq(self, levels: dict) -> None:
        """`--freq virtual:...`: ConfigError unless every point runs on a guest clock."""
        raise ConfigError("freq", f"virtual with backend {self.name}",
                          "virtual:... only with guest machines (--machine guest...)")

    def holds_host_devices(self, levels: dict) -> bool:
        """Whether the sweep uses this machine's devices (loop devices, mounts, tracefs) and
        so must hold it (abtlab.system.runlock)."""
        return not self.simulated

    def isolated_clock(self, point: dict, ctx) -> bool:
        """Whether nothing else running on the host changes what this point measures, so
        that another run may go beside it."""
        return False

    def dataset_coords(self, levels: dict) -> dict:
        """Coordinates the dataset gains from these levels (a machine's clock and kernel)."""
        return {}

    def doctor_check(self):
        """(name, Availability) of what it needs here beyond available(), for `abtlab
        doctor` (a third-party tool: where it is found and its version); None: nothing."""
        return None

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
        out = []
        for point, ctx in runs:
            try:
                out.append(self.run_point(point, ctx))
            except AbtError as exc:
                out.append(exc)
        return out


class ProgramBackend(Backend):
    """A driver of one program per point, run on the point's machine: the host, or a
    guest, whose consecutive points share one boot (group_key, run_group). A subclass
    writes prepare(): the program's command line and what the model needs; where it runs
    is abtlab.machines.dispatch's choice, for this class and for ToolBackend alike."""

    def prepare(self, point: dict, ctx) -> Prepared:
        """The run without its machine: argv_for(data_dir, dilate, trace_path), the bytes
        it writes, the model's workload and options."""
        raise NotImplementedError

    def run_point(self, point: dict, ctx) -> RunResult:
        return _dispatch().run_program(self.prepare(point, ctx), point, ctx)

    def available_for(self, levels: dict) -> Availability:
        return _placement().available(levels, self.available())

    def check_levels(self, levels: dict) -> None:
        _placement().check(levels)

    def check_virtual_freq(self, levels: dict) -> None:
        _placement().check_virtual_freq(levels)

    def holds_host_devices(self, levels: dict) -> bool:
        return _placement().holds_host_devices(levels)

    def isolated_clock(self, point: dict, ctx) -> bool:
        return _placement().isolated_clock(point, ctx)

    def dataset_coords(self, levels: dict) -> dict:
        return _placement().coords(levels)

    def group_size(self, task) -> int:
        return int(task.options.get("guest_batch") or 32)

    def group_key(self, task):
        return _dispatch().group_key(task.point, task)

    def run_group(self, runs: list, workdir) -> list:
        """A guest machine's points in one boot, each with the model's measures."""
        preps = [self.prepare(p, c) for p, c in runs]
        return _dispatch().run_programs(preps, runs, workdir)


class ToolBackend(ProgramBackend):
    """A driver of a third-party tool (IOzone, mdtest, fio): a subclass writes tool_job(),
    what one point runs, and tool_result(), the RunResult of its ToolRun; the dispatcher
    runs the job on the point's machine, a guest machine's group in one boot. A subclass
    names its tool: the executable, the variable that points at it, how to get it, and
    how it says its version (args, regex; None: it cannot without running)."""
    tool: str = ""
    tool_env: str = ""
    tool_how: str = ""
    tool_version: tuple | None = None

    def available(self) -> Availability:
        return _tool_runner().tool_available(self.tool, self.tool_env, self.tool_how)

    def doctor_check(self):
        return (f"{self.tool} (backend {self.name})",
                _tool_runner().tool_status(self.tool, self.tool_env, self.tool_how, self.tool_version))

    def tool_job(self, point: dict, ctx) -> ToolJob:
        raise NotImplementedError

    def tool_result(self, run: ToolRun, point: dict, ctx) -> RunResult:
        raise NotImplementedError

    def check_policy(self, point: dict, name: str, guest: bool = False):
        """The point's policy, refused when the tool cannot run it where route sends it
        (abtlab.machines.dispatch.check_tool_policy); guest: the tool runs in a guest too."""
        return _dispatch().check_tool_policy(point, name, guest)

    def run_point(self, point: dict, ctx) -> RunResult:
        return self.tool_result(_dispatch().run_tool(self.tool_job(point, ctx), point, ctx), point, ctx)

    def run_group(self, runs: list, workdir) -> list:
        """[(point, ctx)] of one group: a RunResult or the AbtError of each point, in order."""
        jobs = [self.tool_job(p, c) for p, c in runs]
        out = []
        for run, (point, ctx) in zip(_dispatch().run_tools(jobs, runs, workdir), runs):
            try:
                out.append(run if isinstance(run, Exception) else self.tool_result(run, point, ctx))
            except AbtError as exc:
                out.append(exc)
        return out


def _dispatch():
    # deferred: every backend's module imports this one, and a simulated run never sends a
    # point to a machine; abtlab.machines.dispatch brings scratch fs, tracefs, qemu, tarfile,
    # uuid, ...: 0.10 CPU s more to import this module in a new process
    from ..machines import dispatch
    return dispatch


def _tool_runner():
    from ..machines import tool_runner   # deferred as _dispatch is
    return tool_runner


def _placement():
    # deferred as _dispatch is: it asks abtlab.machines.dispatch.route
    from ..machines import placement
    return placement
