"""The host machine: one point on a fresh scratch ext4 with tracing, throttling and
frequency set -- an abtlab C workload (`run_workload`) or a third-party tool (`run_tool`).

Everything that touches the machine is entered as a context manager, so it is undone
on every exit path. abtlab.machines.dispatch decides which points come here.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import model, policies, trace
from ..data.result import RunResult
from ..errors import ConfigError, RunError
from ..model.waits import switch_measures
from ..policies.delayjc import load_batches, preload_env
from ..policies.policy import parse_duration_us
from ..system.cpufreq import FrequencyPin
from ..system.device import DeviceThrottle, parse_profile
from ..system.geometry import parse_geometry
from ..system.scratchfs import MAX_IMAGE_MB, ScratchFS, jbd2_commits, loop_devices
from ..system.sleeps import comm_of
from ..system.slowdisk import SlowDisk
from ..system.tracefs import JournalTrace
from . import programs
from .availability import Availability
from .programs import check_exit

__all__ = ["SCRATCH_OPTIONS", "check_data_fits", "real_available",
           "run_workload", "run_tool", "ToolOutput", "scratch_on_device", "check_scratch_options",
           "Prepared", "add_measures", "scratch_geometry", "image_mb", "mount_options_of",
           "drop_caches", "no_commits", "from_first_op", "deadline_us"]

START_PHASES = ("seeded", "none")

# run options every real workload driver accepts (not swept)
SCRATCH_OPTIONS = {
    "image_mb": "scratch image size in MiB (default: 3 x the data + the journal + 128)",
    "block_size": "ext4 block size in bytes: 1024, 2048 or 4096 (default 4096)",
    "journal_mb": "ext4 journal size in MiB, 4 to 1024 (default 32, mke2fs's for a 1-2 GiB disk)",
    "mount_options": "extra ext4 mount options, e.g. nodelalloc or commit=1",
    "guest_timeout": "seconds before a --machine guest boot is killed (default 600)",
    "guest_batch": "points run in one guest boot (default 32; 1: a boot per point)",
    "start_phase": "seeded | none: a guest repetition first waits a seeded 0 to 8.33 ms (one "
                   "turn of a 7200 rpm drive) so repetitions differ as a real machine's do "
                   "(default: seeded on clock=lockstep, none elsewhere)",
    "guest_trace_kb": "the guest's trace buffer per vCPU in KiB, 1024 to 262144 (default 16384; "
                      "raise it when a point's trace events were lost; it comes out of mem=)",
    "guest_deadline": "a duration of the guest's clock (e.g. 2s) after which a guest point's "
                      "workload is killed and the point fails with what its threads and CPUs "
                      "were doing then (a point that does not end is seen, not waited out)",
    "guest_failed_dir": "a directory where a guest point that fails (at its guest_deadline, a "
                        "step or a check) leaves every file it wrote: trace, records, "
                        "snapshots (default: not kept; the error summarises them)"}


def real_available(name: str) -> Availability:
    if os.geteuid() != 0:
        return Availability(False, "needs root for loop devices and tracefs (use backend 'sim')")
    if not loop_devices()[0]:
        return Availability(False, "no loop devices here (use backend 'sim')")
    if not shutil.which("mkfs.ext4"):
        return Availability(False, "mkfs.ext4 not found (Debian package e2fsprogs)")
    return programs.availability(name)


def _dilation(point, ctx):
    mode = ctx.freq_mode
    if mode == "emulated":
        return ctx.f_ref_ghz / float(point["freq_ghz"]), contextlib.nullcontext()
    if mode == "real":
        return 1.0, FrequencyPin(int(round(float(point["freq_ghz"]) * 1e6)))
    return 1.0, contextlib.nullcontext()


def mount_options_of(policy, ctx) -> str:
    """The policy's own options plus any the user passed (-o mount_options=nodelalloc)."""
    extra = str(ctx.options.get("mount_options") or "")
    return ",".join(o for o in (policy.mount_options(), extra) if o)


def scratch_geometry(options):
    """The scratch ext4's block size and journal (run options block_size, journal_mb)."""
    return parse_geometry(options.get("block_size"), options.get("journal_mb"))


def image_mb(options, data_bytes: int) -> int:
    """The scratch image's size: the image_mb option, else room for the data and journal."""
    if options.get("image_mb") is not None:
        return int(options["image_mb"])
    journal = scratch_geometry(options).journal_mb
    return max(256, 4 * journal, 3 * data_bytes // 2 ** 20 + 128 + journal)


def check_data_fits(data_bytes: int, field: str, given, per: str) -> None:
    """Refuse, before any run, a point whose data cannot fit the largest scratch image."""
    if image_mb({}, data_bytes) > MAX_IMAGE_MB:
        most = (MAX_IMAGE_MB - 128 - 4 * scratch_geometry({}).journal_mb) // 3
        raise ConfigError(field, given, f"a size whose data fits the largest scratch image "
                                        f"({MAX_IMAGE_MB} MiB): at most {most} MiB {per}")


def check_scratch_options(options: dict) -> dict:
    """Check the scratch filesystem's run options before anything runs; ConfigError
    naming the option. Returns options unchanged."""
    geometry = scratch_geometry(options)
    image = options.get("image_mb")
    if image is not None:
        if isinstance(image, bool) or not str(image).strip().isdigit() or not 16 <= int(image) <= 65536:
            raise ConfigError("image_mb", image, "an integer from 16 to 65536 (MiB)")
    geometry.check_fits(image_mb(options, 0))  # the default image always fits
    if options.get("start_phase", "seeded") not in START_PHASES:
        raise ConfigError("start_phase", options["start_phase"], " | ".join(START_PHASES))
    trace_kb = options.get("guest_trace_kb")
    if trace_kb is not None and (isinstance(trace_kb, bool) or not str(trace_kb).strip().isdigit()
                                 or not 1024 <= int(trace_kb) <= 262144):
        raise ConfigError("guest_trace_kb", trace_kb, "an integer from 1024 to 262144 (KiB per vCPU)")
    deadline_us(options)
    return options


def deadline_us(options) -> int:
    """The guest_deadline run option in us of the guest's clock (0: none); ConfigError."""
    text = options.get("guest_deadline")
    if text in (None, ""):
        return 0
    try:
        us = parse_duration_us(text, "guest_deadline")
    except ConfigError:
        us = -1
    if not 1_000 <= us <= 3600e6:
        raise ConfigError("guest_deadline", text, "a duration from 1ms to 1h of the guest's clock, e.g. 2s")
    return int(us)


def run_workload(argv_for, point: dict, ctx, data_bytes: int, timeout: float = 900) -> RunResult:
    """argv_for(data_dir, dilate, trace_path) -> argv. Returns the RunResult with raw
    ops, commits, batches and attrs; the driver adds the model's scalars."""
    policy = policies.parse(point["policy"])
    dilate, freq_cm = _dilation(point, ctx)
    drop_caches()
    with contextlib.ExitStack() as stack:
        fs, thr, data_dir = _scratch(stack, point, ctx, data_bytes, policy)
        tpath = Path(ctx.workdir) / f"ops-{os.getpid()}.trace"
        argv = [str(a) for a in argv_for(data_dir, dilate, tpath)]
        # the journal's commits, and why the workload's threads slept (model.waits)
        jt = stack.enter_context(JournalTrace(fs.dev_t, sleeps_of=comm_of(argv[0]))) \
            if policy.journal else None
        stack.enter_context(freq_cm)
        env, bpath = _env(policy, ctx)
        before = jbd2_commits(fs.jbd2_name) if fs.jbd2_name else 0
        disk0 = thr.snapshot() if hasattr(thr, "snapshot") else None
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        after = jbd2_commits(fs.jbd2_name) if fs.jbd2_name else 0
        disk = _disk_delta(disk0, thr.snapshot()) if disk0 is not None else {}
        check_exit(argv, proc.returncode, proc.stderr)
        ops = trace.read(tpath, kind=trace.Kind.OPS)
        commits = from_first_op(jt.commits(), ops) if jt is not None else no_commits()
        waits = (switch_measures(ops, jt.lines(), jt.sleeps_of, commits)
                 if jt is not None and jt.stacks else {})
        batches = _batches(bpath)
        attrs = {"freq_mode": "emulated" if ctx.freq_mode == "emulated"
                 else "real", **fs.describe(), **thr.describe()}
    if ctx.freq_mode == "emulated":
        attrs["f_ref_ghz"] = ctx.f_ref_ghz
        attrs["freq_emulation"] = ("each op's thread CPU time dilated by f_ref/f with spinning "
                                   "right after the call; device and blocked time not dilated")
    tpath.unlink(missing_ok=True)
    scalars = {"jbd2_info_commits": float(after - before), **disk, **waits}
    return RunResult(scalars=scalars, ops=ops, commits=commits, batches=batches, attrs=attrs)


@dataclass
class ToolOutput:
    """What a machine gives back for one run of a tool, before its window is read
    (abtlab.machines.tool_runner.read): its output, the traced events, the journal's
    own commit count, the machine's attrs, delayJC batches, and scalars of its own."""
    stdout: str
    argv: list
    events: list
    jbd2_info_commits: float
    attrs: dict
    batches: dict | None = None
    scalars: dict = field(default_factory=dict)


def run_tool(argv_for, point: dict, ctx, data_bytes: int, events, timeout: float = 900) -> ToolOutput:
    """argv_for(".") -> argv, run in the scratch data directory as run_workload runs
    abtlab's programs, with `events` traced on the scratch device. The caller refuses an
    emulated frequency first (a real tool cannot dilate its CPU time)."""
    policy = policies.parse(point["policy"])
    drop_caches()
    with contextlib.ExitStack() as stack:
        fs, thr, data_dir = _scratch(stack, point, ctx, data_bytes, policy)
        jt = stack.enter_context(JournalTrace(fs.dev_t, events=events, buffer_size_kb=32768))
        stack.enter_context(_dilation(point, ctx)[1])
        env, bpath = _env(policy, ctx)
        # the tool runs in data_dir and is given relative paths, so its recorded
        # command line is the same for every run
        argv = [str(a) for a in argv_for(".")]
        before = jbd2_commits(fs.jbd2_name) if fs.jbd2_name else 0
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=data_dir)
        after = jbd2_commits(fs.jbd2_name) if fs.jbd2_name else 0
        if proc.returncode != 0:
            raise RunError(f"{Path(argv[0]).name} exited {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
        if (lost := jt.lost()):   # a window from a wrapped buffer would start late
            raise RunError(f"{lost} trace events lost during {Path(argv[0]).name}: fewer threads")
        traced = jt.read()
        attrs = {"freq_mode": "real", **fs.describe(), **thr.describe()}
    return ToolOutput(proc.stdout, argv, traced, float(after - before), attrs, _batches(bpath))


def _scratch(stack, point, ctx, data_bytes, policy):
    """The point's fresh scratch ext4 entered on stack: (fs, device, its empty data
    directory), synced so the run starts from a settled journal."""
    fs, thr = stack.enter_context(scratch_on_device(
        parse_profile(point.get("device", "none")), image_mb(ctx.options, data_bytes),
        policy.journal, mount_options_of(policy, ctx), ctx.workdir, scratch_geometry(ctx.options)))
    data_dir = Path(fs.mountpoint) / "data"
    data_dir.mkdir()
    os.sync()
    return fs, thr, data_dir


def _env(policy, ctx):
    """The environment, and where the delayJC preload writes its batches (or None)."""
    env = dict(os.environ)
    if not policy.needs_preload:
        return env, None
    bpath = Path(ctx.workdir) / f"batches-{os.getpid()}.trace"
    env.update(preload_env(policy, bpath))
    return env, bpath


def _disk_delta(before: dict, after: dict) -> dict:
    """What the run cost the emulated disk: requests and those that paid a seek."""
    return {f"device_{k}": float(after[k] - before[k]) for k in ("requests", "positionings")}


@contextlib.contextmanager
def scratch_on_device(profile, size_mb, journal=True, mount_options="", workdir=None, geometry=None):
    """A fresh scratch ext4 on the device profile; yields (ScratchFS, device with describe()).

    A latency profile puts the image on the emulated slow disk (FUSE); a throttle
    profile limits the loop device with blkio. Everything is undone on exit."""
    profile = parse_profile(profile) if isinstance(profile, str) else profile
    with contextlib.ExitStack() as stack:
        disk = stack.enter_context(SlowDisk(profile, workdir)) if profile.kind == "latency" else None
        fs = stack.enter_context(ScratchFS(size_mb=size_mb, journal=journal, mount_options=mount_options,
                                           workdir=workdir, image_dir=disk.mountpoint if disk else None,
                                           format_dir=disk.backing if disk else None,
                                           direct_io=disk is not None, geometry=geometry))
        dev = disk or stack.enter_context(DeviceThrottle(profile, fs.major_minor))
        yield fs, dev


@dataclass
class Prepared:
    """What a driver's run needs besides its machine: argv_for(data_dir, dilate,
    trace_path) -> argv, the bytes it writes, and the model's workload and options.
    trace_from_go: the program starts its workers itself and says when (IOzone's polling
    start, `--start poll`): a guest traces the run from that go, not from the program's
    start (abtlab.machines.guest_point)."""
    argv_for: object
    data_bytes: int
    workload: str
    measure_kw: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)     # recorded with each run (e.g. the start)
    trace_from_go: bool = False


def add_measures(res: RunResult, prep: Prepared) -> RunResult:
    """The model's measures of a run; records that fail the model's checks (a commit that
    ends before it starts) fail this run, a RunError, not the sweep."""
    res.attrs.update(prep.attrs)
    try:
        res.scalars.update(model.measures(res.ops, res.commits, prep.workload, **prep.measure_kw))
    except ConfigError as exc:
        raise RunError(f"the run's records fail the model's check: {exc}") from None
    if res.batches is not None:
        res.scalars["batches"] = float(len(res.batches["open"]))
    return res


def drop_caches():
    """Start a run from cold caches (a best effort: needs root)."""
    with contextlib.suppress(OSError):
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")


def no_commits():
    """The commit table of a run without a journal."""
    z = np.zeros(0, np.int64)
    return {k: z for k in ("tid", "start", "locking", "flushing", "logging", "end", "handles", "blocks")}


def from_first_op(commits: dict, ops) -> dict:
    """Commits that end after the workload's first op began (earlier ones are set-up)."""
    if ops.size == 0 or len(commits.get("end", [])) == 0:
        return commits if len(commits.get("end", [])) else no_commits()
    keep = np.asarray(commits["end"]) >= int(ops["t_start_ns"].min())
    return {k: np.asarray(v)[keep] for k, v in commits.items()}


def _batches(bpath):
    """delayJC batches of every process of the run (one stats file each), then removed."""
    if bpath is None or not bpath.exists():
        return None
    try:
        return load_batches(bpath)
    finally:
        for p in bpath.parent.glob(bpath.name + "*"):
            p.unlink(missing_ok=True)
