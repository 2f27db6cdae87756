"""Run a real third-party tool (IOzone, mdtest, fio) on a fresh scratch ext4.

The set-up is abtlab's own workloads' (host.run_workload): same device profile,
geometry, mount options, `mkdir data; sync` preparation, dropped caches and delayJC
preload. The tool writes no abtlab trace, so its timed window is read from tracefs: the
device's ext4 events (first write or file create to the last write or fsync), on the
same CLOCK_MONOTONIC as the commits. Commits are counted over that window only, not the
tool's whole process (IOzone's start-up and its `sync(); sleep(2)` are outside it).
`run_tool_in_guest` runs a tool carried by an initramfs overlay in the qemu guest
(`--machine guest`) with the same window, read from the guest's own trace.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import policies
from ..errors import AbtError, ConfigError, RunError, UnavailableError
from .availability import Availability

__all__ = ["find_tool", "tool_available", "check_tool_options", "Window", "window",
           "commits_in", "fsyncs_in", "first_fsyncs", "trace_scalars", "run_tool", "WINDOW_EVENTS",
           "is_regular", "run_tool_in_guest", "is_guest", "GuestTool", "prepare_tool_in_guest",
           "boot_tools"]

S_IFMT, S_IFREG = 0o170000, 0o100000
WRITE_BEGIN = ("ext4_da_write_begin", "ext4_write_begin")
WRITE_END = ("ext4_da_write_end", "ext4_write_end", "ext4_journalled_write_end")
CREATE = ("ext4_allocate_inode",)
FSYNC = ("ext4_sync_file_exit",)
# traced on the scratch device besides the journal events (JournalTrace filters by dev)
WINDOW_EVENTS = tuple(f"ext4/{e}" for e in (*WRITE_BEGIN, *WRITE_END, *CREATE))


def find_tool(name: str, env: str, exe=None) -> Path:
    """The tool's executable: the `exe` option, else $env, else PATH; ConfigError for a
    given path that is not executable, UnavailableError when nothing is found."""
    given = exe if exe not in (None, "") else os.environ.get(env) or None
    if given is not None:
        path = shutil.which(str(given))
        if path is None:
            where = "exe" if exe not in (None, "") else env
            raise ConfigError(where, given, f"the path of an executable {name}")
        return Path(path)
    path = shutil.which(name)
    if path is None:
        raise UnavailableError(f"{name} not found: put it on PATH, set {env}, or pass -o exe=PATH")
    return Path(path)


def tool_available(name: str, env: str, how: str) -> Availability:
    """Root, loop devices, mkfs.ext4 and the tool; the reason says how to get what is missing."""
    if os.geteuid() != 0:
        return Availability(False, "needs root for loop devices and tracefs")
    if not os.path.exists("/dev/loop-control") or not shutil.which("mkfs.ext4"):
        return Availability(False, "no loop devices or mkfs.ext4 here")
    try:
        path = find_tool(name, env)
    except (ConfigError, UnavailableError) as exc:
        return Availability(False, f"{exc} ({how})")
    return Availability(True, str(path))


def check_tool_options(options: dict, name: str, env: str) -> dict:
    """Scratch options as abtlab's workloads, plus `exe`; no `guest` option (fio reaches
    the guest machine through its `machine` factor; the other tools run on the host)."""
    from .host import check_scratch_options
    if options.get("guest"):
        raise ConfigError("guest", options["guest"], f"false: {name} runs on the host only")
    if options.get("exe") not in (None, ""):
        find_tool(name, env, options["exe"])
    return check_scratch_options(options)


def is_guest(point: dict) -> bool:
    from .spec import parse_machine
    return parse_machine(point.get("machine") or "host").is_guest


def check_policy(point: dict, name: str, guest: bool = False):
    """The point's policy; kdelayjc only on a guest machine, for a tool that runs there."""
    pol = policies.parse(point["policy"])
    if pol.needs_patched_kernel and not (guest and is_guest(point)):
        where = "on the host; kdelayjc with --machine guest" if guest else "(runs on the host)"
        raise ConfigError("policy", point["policy"], f"ext4, nojc, delayjc or batch for {name} "
                          f"{where}: kdelayjc needs the guest kernel")
    return pol


# -- the tool's window, from tracefs events ------------------------------------------------
@dataclass(frozen=True)
class Window:
    start: int   # CLOCK_MONOTONIC ns
    end: int

    @property
    def seconds(self) -> float:
        return (self.end - self.start) * 1e-9


def is_regular(ev: dict) -> bool:
    """An ext4_allocate_inode event for a regular file. tracefs prints the mode in octal
    ("mode 0100644"); the generic field parser read those digits as a decimal int."""
    mode = ev.get("mode")
    try:
        return (int(str(mode), 8) & S_IFMT) == S_IFREG
    except ValueError:
        return False


def window(events: list[dict], start_kinds, end_kinds) -> Window:
    """From the first event of start_kinds (creates count only for regular files) to the
    last of start_kinds or end_kinds. RunError when the tool left no such event."""
    def kind(ev, kinds):
        return ev["event"] in kinds and (ev["event"] not in CREATE or is_regular(ev))
    starts = [ev["ts"] for ev in events if kind(ev, start_kinds)]
    if not starts:
        raise RunError(f"no {'/'.join(start_kinds)} event on the scratch device: "
                       "the tool did not write there")
    ends = [ev["ts"] for ev in events if kind(ev, (*start_kinds, *end_kinds))]
    return Window(min(starts), max(ends))


def first_fsyncs(events: list[dict]) -> list[dict]:
    """Drop each file's fsyncs after its first: IOzone without -c fsyncs every file again,
    untimed, before close ("clean up before read"); only the first is in its T_write."""
    done, out = set(), []
    for ev in events:
        if ev["event"] in ("ext4_sync_file_enter", "ext4_sync_file_exit"):
            if ev.get("ino") in done:
                continue
            if ev["event"] == "ext4_sync_file_exit":
                done.add(ev.get("ino"))
        out.append(ev)
    return out


def commits_in(commits: dict, win: Window) -> dict:
    """Commits that overlap the window: end at or after its start, start at or before its
    end (a commit running when the window opens is waited for inside it)."""
    end, start = np.asarray(commits.get("end", [])), np.asarray(commits.get("start", []))
    if end.size == 0:
        return {k: np.asarray(v)[:0] for k, v in commits.items()}
    start = np.where(start >= 0, start, end)
    keep = (end >= win.start) & (start <= win.end)
    return {k: np.asarray(v)[keep] for k, v in commits.items()}


def fsyncs_in(fsyncs: dict, win: Window) -> dict:
    keep = (np.asarray(fsyncs["enter"]) >= win.start) & (np.asarray(fsyncs["exit"]) <= win.end)
    return {k: np.asarray(v)[keep] for k, v in fsyncs.items()}


def trace_scalars(commits: dict, fsyncs: dict, win: Window) -> dict:
    """The dataset variables that tracefs gives for any tool, abtlab's definitions with
    the window in place of the op trace's first-op-to-last-op span."""
    from ..model.measures import commit_waits
    enter, exit_ = np.asarray(fsyncs["enter"]), np.asarray(fsyncs["exit"])
    waits = commit_waits(enter, exit_, commits["end"])
    return {"elapsed": win.seconds, "commits": float(len(commits["end"])),
            "fsync_calls": float(enter.size),
            "mean_fsync": float(np.mean(exit_ - enter)) * 1e-9 if enter.size else float("nan"),
            "mean_commit_wait": float(np.mean(waits)) * 1e-9 if enter.size else float("nan")}


# -- running ----------------------------------------------------------------------------
@dataclass
class ToolRun:
    """What one run of a tool left: its output, the window and what fell inside it."""
    stdout: str
    argv: list
    window: Window
    commits: dict
    fsyncs: dict
    jbd2_info_commits: float
    attrs: dict
    batches: dict | None = None
    scalars: dict = field(default_factory=dict)   # only the machine's (guest: shadow waits)


def run_tool(argv_for, point, ctx, data_bytes, start_kinds, end_kinds, timeout=900,
             event_filter=None) -> ToolRun:
    """argv_for(".") -> argv, run in the scratch data directory as host.run_workload
    runs abtlab's programs; the window spans start_kinds..end_kinds events (`window`) of
    the traced events, passed through event_filter(events) first when given."""
    from .host import drop_caches, scratch_geometry, image_mb, mount_options_of, scratch_on_device
    from ..system.device import parse_profile
    from ..system.scratchfs import jbd2_commits
    from ..system.tracefs import EVENTS, JournalTrace
    policy = policies.parse(point["policy"])
    if ctx.freq_mode == "emulated":
        raise ConfigError("freq", "emulated", "native or real: a real tool cannot dilate its CPU time")
    drop_caches()
    with contextlib.ExitStack() as stack:
        fs, thr = stack.enter_context(scratch_on_device(
            parse_profile(point.get("device", "none")), image_mb(ctx.options, data_bytes),
            policy.journal, mount_options_of(policy, ctx), ctx.workdir, scratch_geometry(ctx.options)))
        data_dir = Path(fs.mountpoint) / "data"
        data_dir.mkdir()
        os.sync()
        jt = stack.enter_context(JournalTrace(fs.dev_t, events=EVENTS + WINDOW_EVENTS,
                                              buffer_size_kb=32768))
        stack.enter_context(_frequency(point, ctx))
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
        events = event_filter(jt.read()) if event_filter else jt.read()
        win, commits, fsyncs = _in_window(events, start_kinds, end_kinds)
        attrs = {"freq_mode": "real", **fs.describe(), **thr.describe(),
                 **_tool_attrs(argv, start_kinds, end_kinds)}
    return ToolRun(proc.stdout, argv, win, commits, fsyncs, float(after - before), attrs,
                   _batches(bpath))


def _tool_attrs(argv, start_kinds, end_kinds) -> dict:
    return {"tool_command": shlex.join(argv), "tool_path": argv[0],
            "tool_window": "tracefs: first ext4 " + "/".join(start_kinds) + " to last "
                           + "/".join((*start_kinds, *end_kinds)) + " on the scratch device"}


@dataclass
class GuestTool:
    """One tool point made ready for a guest boot: its GuestRun and what reading its
    result needs."""
    run: object
    pol: object
    machine: object
    ctx: object
    archive: Path
    start_kinds: tuple
    end_kinds: tuple


def prepare_tool_in_guest(argv_for, point, ctx, data_bytes, start_kinds, end_kinds, exe: str,
                          overlay: str, missing: str, index: int = 1) -> GuestTool:
    """argv_for(data_dir) -> argv, to run as the guest's `exe` on the guest machine's fresh
    ext4 (abtlab.machines.guest_point) as point `index` of a boot. overlay: the archive
    beside the initramfs that carries the tool; UnavailableError(missing) when the build
    made none."""
    from . import guest
    from .guest_point import guest_run, machine_for
    if ctx.freq_mode == "emulated":
        raise ConfigError("freq", "emulated", "virtual or native in the guest: a real tool "
                          "cannot dilate its CPU time")
    machine = machine_for(point, ctx)
    archive = guest.ensure_built()[1].with_name(overlay)
    if not archive.exists():
        raise UnavailableError(missing)
    run, pol = guest_run(lambda d, _dilate, _trace: argv_for(d), point, ctx, data_bytes,
                         machine, index, exe=exe)
    return GuestTool(run, pol, machine, ctx, archive, tuple(start_kinds), tuple(end_kinds))


def boot_tools(items: list, workdir, timeout=None) -> list:
    """One guest boot for the prepared tool points (one machine, one overlay): a ToolRun
    or the RunError of each point, in order."""
    from . import guest
    from ..system.tracefs import EVENTS
    first = items[0]
    res = guest.boot_batch([i.run for i in items], first.machine, workdir,
                           events=EVENTS + WINDOW_EVENTS, overlays=[first.archive],
                           timeout=float(timeout or first.ctx.options.get("guest_timeout") or 600))
    out = []
    for item, pres in zip(items, res.points):
        try:
            out.append(_tool_run(item, pres, workdir))
        except AbtError as exc:
            out.append(exc)
    return out


def _tool_run(item: GuestTool, pres, workdir) -> ToolRun:
    from .guest_point import guest_events, to_result
    base = to_result(pres, item.pol, item.machine, item.ctx, workdir, item.run.argv)  # raises for a failed point
    events = guest_events(pres.files, item.machine.guest_kernel.printed)
    win, commits, fsyncs = _in_window(events, item.start_kinds, item.end_kinds)
    run = item.run
    attrs = {**base.attrs, **run.disk.describe(), "mount_options": run.mount_options or "defaults",
             **_tool_attrs(run.argv, item.start_kinds, item.end_kinds)}
    extra = {k: v for k, v in base.scalars.items() if k != "jbd2_info_commits"}
    return ToolRun(pres.stdout, run.argv, win, commits, fsyncs,
                   base.scalars["jbd2_info_commits"], attrs, base.batches, extra)


def run_tool_in_guest(argv_for, point, ctx, data_bytes, start_kinds, end_kinds, exe: str,
                      overlay: str, missing: str) -> ToolRun:
    """One tool point, one boot (prepare_tool_in_guest, boot_tools)."""
    item = prepare_tool_in_guest(argv_for, point, ctx, data_bytes, start_kinds, end_kinds,
                                 exe, overlay, missing)
    out = boot_tools([item], ctx.workdir)[0]
    if isinstance(out, Exception):
        raise out
    return out


def _in_window(events, start_kinds, end_kinds):
    """The window of the traced events, and the commits and fsyncs inside it."""
    from ..system.tracefs import commits_table, fsyncs_table
    win = window(events, start_kinds, end_kinds)
    return win, commits_in(commits_table(events), win), fsyncs_in(fsyncs_table(events), win)


def _frequency(point, ctx):
    if ctx.freq_mode == "real":
        from ..system.cpufreq import FrequencyPin
        return FrequencyPin(int(round(float(point["freq_ghz"]) * 1e6)))
    return contextlib.nullcontext()


def _env(policy, ctx):
    """The environment, and where the delayJC preload writes its batches (or None)."""
    env = dict(os.environ)
    if not policy.needs_preload:
        return env, None
    from ..policies.delayjc import preload_env
    bpath = Path(ctx.workdir) / f"batches-{os.getpid()}.trace"
    env.update(preload_env(policy, bpath))
    return env, bpath


def _batches(bpath):
    """delayJC batches of every process of the tool (one stats file each), then removed."""
    if bpath is None or not bpath.exists():
        return None
    from ..policies.delayjc import load_batches
    try:
        return load_batches(bpath)
    finally:
        for p in bpath.parent.glob(bpath.name + "*"):
            p.unlink(missing_ok=True)
