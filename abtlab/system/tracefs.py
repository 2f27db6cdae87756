"""Journal tracing: jbd2 commit events of one device, on CLOCK_MONOTONIC.

`JournalTrace(dev_t)` owns a tracefs instance (`instances/abtlab-<pid>-<n><random>`, a
name no other run has), so it never disturbs the global buffer or anyone else's
instance. It sets `trace_clock` to `mono` (CLOCK_MONOTONIC, the clock of abtlab's op
records), enables the jbd2 commit events, `jbd2_run_stats` and
`ext4_sync_file_enter/exit`, each filtered to `dev == dev_t`, and on exit disables them
and removes the instance. tracefs itself is mounted once per process if it is not
mounted yet, and unmounted when that process ends, unless another tracer's instances
are then in it; a tracefs someone else mounted is never unmounted.

Resolution: the text `trace` file prints clocks that count nanoseconds as
seconds.microseconds, so event times here are CLOCK_MONOTONIC ns truncated to 1 us
(`RESOLUTION_NS`); Linux 3.4 rounds to the nearest us instead (its ns2usecs adds 500 ns
before dividing), so there an event time is within half a microsecond either side
(`marker_between(..., printed="rounded")`); `jbd2_run_stats` durations are printed in ms
(jiffies_to_msecs), and 3.4's has no `request_delay` (-1 in the table).
`clock_check()` proves the clock: it writes trace markers between two
clock_gettime(CLOCK_MONOTONIC) calls and checks each marker's time falls between them.

Fields are parsed generically ("key value" pairs of the print format, or key=value), so
kernels that add, drop or rename a field still parse; a missing event is skipped and
listed in `missing`.
"""
from __future__ import annotations

import itertools
import os
import secrets
import re
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError, UnavailableError
from . import cleanup
from ._shell import read, sh, write

__all__ = ["JournalTrace", "clock_check", "ClockCheck", "parse_line", "commits_table",
           "fsyncs_table", "available", "RESOLUTION_NS", "EVENTS", "PRINTED", "marker_between"]

TRACEFS = Path("/sys/kernel/tracing")
RESOLUTION_NS = 1000
SCHED_SWITCH = "sched/sched_switch"
EVENTS = ("jbd2/jbd2_start_commit", "jbd2/jbd2_commit_locking", "jbd2/jbd2_commit_flushing",
          "jbd2/jbd2_commit_logging", "jbd2/jbd2_end_commit", "jbd2/jbd2_run_stats",
          "ext4/ext4_sync_file_enter", "ext4/ext4_sync_file_exit")
_PHASES = {"jbd2_start_commit": "start", "jbd2_commit_locking": "locking",
           "jbd2_commit_flushing": "flushing", "jbd2_commit_logging": "logging",
           "jbd2_end_commit": "end"}
_STATS = {"handle_count": "handles", "blocks": "blocks", "blocks_logged": "blocks_logged",
          "wait": "wait_ms", "request_delay": "request_delay_ms", "running": "running_ms",
          "locked": "locked_ms", "flushing": "flushing_ms", "logging": "logging_ms"}
_LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
                   r"(?:\S{4,6}\s+)?(?P<sec>\d+)\.(?P<frac>\d+):\s+(?P<event>\w+):\s?(?P<body>.*)$")
_counter = itertools.count()
# how a kernel prints an event's microsecond: the true time lies in [t - lo, t + hi) ns
PRINTED = {"truncated": (0, RESOLUTION_NS), "rounded": (RESOLUTION_NS // 2, RESOLUTION_NS // 2)}


def marker_between(before: int, t: int, after: int, printed: str = "truncated") -> bool:
    """Can a marker printed at t (ns) have been written between the CLOCK_MONOTONIC reads
    before and after? Its true time lies in PRINTED[printed] around t."""
    if printed not in PRINTED:
        raise ConfigError("printed", printed, " | ".join(PRINTED))
    lo, hi = PRINTED[printed]
    return t >= 0 and t - lo <= after and t + hi > before


def available(root=TRACEFS) -> tuple[bool, str]:
    """(True, reason) when tracefs and the jbd2 commit events are usable."""
    if os.geteuid() != 0:
        return False, "tracefs needs root"
    if not (Path(root) / "instances").is_dir() and not Path(root).is_dir():
        return False, f"no tracefs at {root}"
    events = Path(root) / "events"
    if not events.is_dir():
        return True, f"tracefs at {root} not mounted yet (abtlab mounts it when needed)"
    missing = [e for e in EVENTS if not (events / e).is_dir()]
    if any(e.startswith("jbd2/jbd2_end_commit") for e in missing):
        return False, "no jbd2:jbd2_end_commit event in this kernel"
    return True, "tracefs with jbd2 events" + (f" (missing: {missing})" if missing else "")


# -- parsing ---------------------------------------------------------------------------
def _value(text):
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    m = re.fullmatch(r"(\d+),(\d+)", text)  # "dev 7,0" -> the kernel's dev_t
    return (int(m.group(1)) << 20) | int(m.group(2)) if m else text


def _fields(body: str) -> dict:
    tokens, out, i = body.split(), {}, 0
    while i < len(tokens):
        key, eq, value = tokens[i].partition("=")
        if eq:
            out[key] = _value(value)
            i += 1
        else:
            out[key] = _value(tokens[i + 1]) if i + 1 < len(tokens) else None
            i += 2
    return out


def parse_line(line: str) -> dict | None:
    """One line of a tracefs `trace` file -> {ts, event, pid, cpu, comm, fields...}."""
    m = _LINE.match(line)
    if not m:
        return None
    ts = int(m["sec"]) * 1_000_000_000 + int(m["frac"].ljust(9, "0")[:9])
    event = {"ts": ts, "event": m["event"], "pid": int(m["pid"]), "cpu": int(m["cpu"]),
             "comm": m["comm"].strip()}
    if m["event"] in ("print", "tracing_mark_write"):
        event["msg"] = m["body"].strip()
    else:
        event.update({k: v for k, v in _fields(m["body"]).items() if k not in event})
    return event


def commits_table(events: list[dict]) -> dict:
    """Per-commit arrays (completed commits, sorted by tid); -1 marks a missing value.

    start/locking/flushing/logging/end: CLOCK_MONOTONIC ns of each phase event;
    handles, blocks, blocks_logged and the *_ms durations come from jbd2_run_stats.
    """
    rows = defaultdict(dict)
    for ev in events:
        tid = ev.get("transaction", ev.get("tid"))
        if tid is None:
            continue
        if ev["event"] in _PHASES:
            rows[tid][_PHASES[ev["event"]]] = ev["ts"]
        elif ev["event"] == "jbd2_run_stats":
            rows[tid].update({_STATS[k]: v for k, v in ev.items() if k in _STATS})
    tids = sorted(t for t, r in rows.items() if "end" in r)
    cols = ["start", "locking", "flushing", "logging", "end", *_STATS.values()]
    out = {"tid": np.array(tids, dtype=np.int64)}
    for c in cols:
        out[c] = np.array([rows[t].get(c, -1) for t in tids], dtype=np.int64)
    return out


def fsyncs_table(events: list[dict]) -> dict:
    """ext4_sync_file_enter/exit paired per (pid, inode): pid, ino, enter, exit, ret."""
    open_, done = {}, []
    for ev in events:
        key = (ev["pid"], ev.get("ino"))
        if ev["event"] == "ext4_sync_file_enter":
            open_[key] = ev
        elif ev["event"] == "ext4_sync_file_exit" and key in open_:
            enter = open_.pop(key)
            done.append((ev["pid"], ev.get("ino", -1), enter["ts"], ev["ts"], ev.get("ret", 0)))
    names = ("pid", "ino", "enter", "exit", "ret")
    arr = np.array(done, dtype=np.int64).reshape(-1, len(names))
    return {n: arr[:, i] for i, n in enumerate(names)}


# -- the instance ---------------------------------------------------------------------
@dataclass
class ClockCheck:
    """Trace markers vs CLOCK_MONOTONIC read just before and after each write."""
    clock: str
    ok: bool
    resolution_ns: int
    samples: list = field(default_factory=list)  # (before_ns, trace_ns, after_ns)

    def __str__(self):
        worst = max((max(b - t, t - a, 0) for b, t, a in self.samples), default=0)
        return (f"trace_clock {self.clock}: {'agrees' if self.ok else 'DISAGREES'} with "
                f"CLOCK_MONOTONIC over {len(self.samples)} markers "
                f"(worst excursion {worst} ns, resolution {self.resolution_ns} ns)")


_mounted_here: set = set()


def _mount_once(root: Path) -> None:
    """Mount tracefs at root for the rest of this process: unmounted at its end (by the
    undo stack) only if no instance is left in it, so a tracer that came meanwhile keeps
    its mount."""
    with cleanup.deferred():
        if root in _mounted_here:
            return
        token = cleanup.push(lambda: _umount_if_idle(root), f"unmount {root}")
        try:
            sh("mount", "-t", "tracefs", "nodev", root)
        except BaseException:
            if not (root / "instances").is_dir():   # not ours: never unmount it later
                cleanup.discard(token)
                raise
        _mounted_here.add(root)


def _umount_if_idle(root: Path) -> None:
    _mounted_here.discard(root)
    inst = root / "instances"
    if inst.is_dir() and not any(inst.iterdir()):
        sh("umount", root)


class JournalTrace(cleanup.Undoable):
    """A tracefs instance recording one device's journal commits; see the module doc."""

    def __init__(self, dev_t: int, instance_prefix="abtlab", buffer_size_kb=8192,
                 events=EVENTS, clock="mono", root=TRACEFS, sleeps_of: str | None = None):
        if not isinstance(dev_t, int) or isinstance(dev_t, bool) or dev_t < 0:
            raise ConfigError("dev_t", dev_t, "a non-negative int: (major << 20) | minor")
        if not re.fullmatch(r"[A-Za-z0-9_.]+", str(instance_prefix)):
            raise ConfigError("instance_prefix", instance_prefix, "letters, digits, _ and .")
        self.dev_t, self.prefix, self.clock = dev_t, instance_prefix, clock
        self.buffer_size_kb, self.root = int(buffer_size_kb), Path(root)
        self.wanted = tuple(events)
        if sleeps_of is not None and not re.fullmatch(r"[\w.+-]{1,15}", str(sleeps_of)):
            raise ConfigError("sleeps_of", sleeps_of, "a command name: up to 15 letters, digits, _ . + -")
        self.sleeps_of = sleeps_of
        self.stacks = False
        self.enabled: list[str] = []
        self.missing: list[str] = []
        self.path: Path | None = None
        self._tokens: list[int] = []

    def _setup(self):
        self._mount()
        self._create()
        write(self.path / "trace_clock", self.clock)
        write(self.path / "buffer_size_kb", self.buffer_size_kb)
        for ev in self.wanted:
            self._enable(ev)
        if self.sleeps_of:
            self._enable_sleeps()

    def _mount(self):
        if (self.root / "instances").is_dir():
            return
        if not self.root.is_dir():
            raise UnavailableError(f"no tracefs mount point at {self.root}")
        _mount_once(self.root)

    def _create(self):
        name = f"{self.prefix}-{os.getpid()}-{next(_counter)}{secrets.token_hex(3)}"
        self.path = self.root / "instances" / name
        self._undo(self._remove, f"remove tracefs instance {name}")  # before: idempotent
        self.path.mkdir()  # fails if it exists: never adopt an instance we did not create

    def _enable(self, ev):
        d = self.path / "events" / ev
        if not d.is_dir():
            self.missing.append(ev)
            return
        write(d / "filter", f"dev == {self.dev_t}")
        write(d / "enable", "1")
        self.enabled.append(ev)

    def _enable_sleeps(self):
        """The named threads' switch-outs and -ins, a kernel stack at each switch-out
        (system.sleeps reads why they slept); skipped where the kernel lacks either."""
        sw = self.path / "events" / SCHED_SWITCH
        if not (sw / "trigger").exists():
            self.missing.append(SCHED_SWITCH + " (with a stacktrace trigger)")
            return
        c = self.sleeps_of
        write(sw / "filter", f'prev_comm == "{c}" || next_comm == "{c}"')
        write(sw / "trigger", f'stacktrace if prev_comm == "{c}"')
        self.stacks = True
        write(sw / "enable", "1")
        self.enabled.append(SCHED_SWITCH)

    def _remove(self):
        if not self.path.is_dir():
            return
        write(self.path / "tracing_on", "0")
        if self.stacks:
            write(self.path / "events" / SCHED_SWITCH / "trigger", "!stacktrace")
        for ev in self.enabled:
            write(self.path / "events" / ev / "enable", "0")
        self.path.rmdir()

    # -- reading -------------------------------------------------------------------
    def lines(self) -> list[str]:
        """The instance's buffer as text lines, in the order tracefs prints them."""
        return read(self.path / "trace").splitlines()

    def read(self) -> list[dict]:
        """Every event in the instance's buffer, parsed (non-consuming), in time order."""
        events = [e for e in map(parse_line, read(self.path / "trace").splitlines()) if e]
        events.sort(key=lambda e: e["ts"])
        return events

    def lost(self) -> int:
        """Events the ring buffer overwrote or dropped (0 when the buffer was big enough)."""
        total = 0
        for stats in (self.path / "per_cpu").glob("cpu*/stats"):
            for line in read(stats).splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("overrun", "dropped events"):
                    total += int(value)
        return total

    def commits(self) -> dict:
        """Per-commit table (see `commits_table`); warns if events were lost."""
        if (n := self.lost()):
            warnings.warn(f"{n} trace events lost: raise buffer_size_kb", RuntimeWarning)
        return commits_table(self.read())

    def fsyncs(self) -> dict:
        return fsyncs_table(self.read())

    def marker(self, text: str) -> None:
        write(self.path / "trace_marker", text)

    def clock_check(self, samples=5) -> ClockCheck:
        """Write markers between CLOCK_MONOTONIC reads; ok if each falls between them."""
        tag = f"abtlab-clock-{os.getpid()}-{next(_counter)}"
        stamps = []
        for i in range(samples):
            before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            self.marker(f"{tag} {i}")
            stamps.append((before, time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
        seen = {e["msg"]: e["ts"] for e in self.read() if e.get("msg", "").startswith(tag)}
        out = [(b, seen.get(f"{tag} {i}", -1), a) for i, (b, a) in enumerate(stamps)]
        ok = len(out) == samples and all(marker_between(b, t, a) for b, t, a in out)
        return ClockCheck(self.clock, ok, RESOLUTION_NS, out)


def clock_check(samples=5, clock="mono", root=TRACEFS) -> ClockCheck:
    """Prove that tracefs `clock` and CLOCK_MONOTONIC agree, in a throw-away instance."""
    with JournalTrace(0, events=(), clock=clock, root=root) as t:
        return t.clock_check(samples)
