"""A real third-party tool (IOzone, mdtest, fio): finding it, checking its options, and
its job -- what one point runs (`ToolJob`) and how its output is read (`read`).

Where the job runs is abtlab.machines.dispatch's choice: on the host it gets abtlab's own
workloads' set-up (host.run_tool: same device profile, geometry, mount options, `mkdir
data; sync` preparation, dropped caches and delayJC preload); in the qemu guest it is
carried by an initramfs overlay (guest_point.run_tool_batch). The tool writes no abtlab
trace, so its timed window is read from tracefs: the device's ext4 events (first write
or file create to the last write or fsync), on the same CLOCK_MONOTONIC as the commits.
Commits are counted over that window only, not the tool's whole process (IOzone's
start-up and its `sync(); sleep(2)` are outside it).
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, RunError, UnavailableError
from ..model.measures import commit_waits
from ..system.tracefs import EVENTS, commits_table, fsyncs_table
from .availability import Availability
from .host import ToolOutput, check_scratch_options

__all__ = ["find_tool", "tool_available", "tool_status", "check_tool_options", "Window",
           "window", "commits_in", "fsyncs_in", "first_fsyncs", "trace_scalars", "WINDOW_EVENTS",
           "TRACED_EVENTS", "is_regular", "ToolJob", "ToolInGuest", "ToolRun", "host_argv_for",
           "check_on_host", "check_in_guest", "read"]

S_IFMT, S_IFREG = 0o170000, 0o100000
WRITE_BEGIN = ("ext4_da_write_begin", "ext4_write_begin")
WRITE_END = ("ext4_da_write_end", "ext4_write_end", "ext4_journalled_write_end")
CREATE = ("ext4_allocate_inode",)
FSYNC = ("ext4_sync_file_exit",)
# traced on the scratch device besides the journal events (JournalTrace filters by dev)
WINDOW_EVENTS = tuple(f"ext4/{e}" for e in (*WRITE_BEGIN, *WRITE_END, *CREATE))
TRACED_EVENTS = EVENTS + WINDOW_EVENTS     # what a tool's run traces, host or guest


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


def tool_status(name: str, env: str, how: str, version=None) -> Availability:
    """Where the tool is found (-o exe=, $env, PATH) and its version, or how to get it;
    version: (args, regex) that print and match it without running a workload."""
    try:
        path = find_tool(name, env)
    except (ConfigError, UnavailableError) as exc:
        return Availability(False, f"{exc} ({how})")
    said = _tool_version(path, *version) if version else ""
    return Availability(True, f"{path} ({said})" if said else str(path))


def _tool_version(path, args, pattern) -> str:
    try:
        out = subprocess.run([str(path), *args], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(pattern, out)
    return m.group(1) if m else ""


def check_tool_options(options: dict, name: str, env: str) -> dict:
    """Scratch options as abtlab's workloads, plus `exe` (fio reaches the guest machine
    through its `machine` factor; the other tools run on the host)."""
    if options.get("exe") not in (None, ""):
        find_tool(name, env, options["exe"])
    return check_scratch_options(options)


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
    enter, exit_ = np.asarray(fsyncs["enter"]), np.asarray(fsyncs["exit"])
    waits = commit_waits(enter, exit_, commits["end"])
    return {"elapsed": win.seconds, "commits": float(len(commits["end"])),
            "fsync_calls": float(enter.size),
            "mean_fsync": float(np.mean(exit_ - enter)) * 1e-9 if enter.size else float("nan"),
            "mean_commit_wait": float(np.mean(waits)) * 1e-9 if enter.size else float("nan")}


# -- a tool's job: what one point runs, and how its output is read -------------------------
@dataclass(frozen=True)
class ToolInGuest:
    """How the guest carries a tool: its path there, the initramfs overlay beside the
    guest's initramfs that holds it, and what to say when the build made none."""
    exe: str
    overlay: str
    missing: str


@dataclass
class ToolJob:
    """One point of a tool, whatever its machine. argv_for(exe, data_dir) -> argv; the
    window spans start_kinds..end_kinds events (`window`) of the traced events, passed
    through event_filter(events) first when given."""
    name: str                     # as find_tool looks for it
    env: str                      # the variable that may name its executable
    argv_for: object
    data_bytes: int
    start_kinds: tuple
    end_kinds: tuple
    event_filter: object = None
    exe: object = None            # the exe option: the host's executable
    guest: ToolInGuest | None = None          # None: the tool runs on the host only
    host_only: dict = field(default_factory=dict)   # option -> (value, what the guest accepts)
    timeout: float = 900


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


def host_argv_for(job: ToolJob):
    """data_dir -> argv with the host's executable (the exe option, $env or PATH)."""
    exe = find_tool(job.name, job.env, job.exe)
    return lambda data_dir: job.argv_for(exe, data_dir)


def check_on_host(ctx) -> None:
    """What a tool cannot do on the host, refused before any set-up."""
    if ctx.freq_mode == "emulated":
        raise ConfigError("freq", "emulated", "native or real: a real tool cannot dilate its CPU time")


def check_in_guest(job: ToolJob, ctx) -> None:
    """What a tool cannot do in the guest, refused before a boot."""
    if job.guest is None:
        raise ConfigError("machine", "guest", f"host: {job.name} runs on the host only")
    if ctx.options.get("exe") not in (None, ""):
        raise ConfigError("exe", ctx.options["exe"], f"no exe with --machine guest (the guest runs "
                          f"its initramfs's {job.guest.exe})")
    for option, (value, accepted) in job.host_only.items():
        raise ConfigError(option, value, accepted)
    if ctx.freq_mode == "emulated":
        raise ConfigError("freq", "emulated", "virtual or native in the guest: a real tool "
                          "cannot dilate its CPU time")


def read(job: ToolJob, out: ToolOutput) -> ToolRun:
    """A machine's ToolOutput -> the ToolRun of its window (RunError when the tool left
    no event of its start kinds)."""
    events = job.event_filter(out.events) if job.event_filter else out.events
    win = window(events, job.start_kinds, job.end_kinds)
    commits = commits_in(commits_table(events), win)
    fsyncs = fsyncs_in(fsyncs_table(events), win)
    attrs = {**out.attrs, **_tool_attrs(out.argv, job.start_kinds, job.end_kinds)}
    return ToolRun(out.stdout, out.argv, win, commits, fsyncs, out.jbd2_info_commits, attrs,
                   out.batches, out.scalars)


def _tool_attrs(argv, start_kinds, end_kinds) -> dict:
    return {"tool_command": shlex.join(argv), "tool_path": argv[0],
            "tool_window": "tracefs: first ext4 " + "/".join(start_kinds) + " to last "
                           + "/".join((*start_kinds, *end_kinds)) + " on the scratch device"}
