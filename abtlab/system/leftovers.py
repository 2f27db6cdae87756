"""What a killed abtlab process left on the machine: found, and undone.

`cleanup` undoes every change on any exit a process sees, but `kill -9` (or a crash of
the interpreter) gives it none: the scratch ext4 stays mounted on its loop device, the
emulated disk's daemon keeps serving, a tracefs instance keeps its buffer. So each of
these carries its owner:

* the temporary directories of a run, of `ScratchFS` and of `SlowDisk` hold an `owner`
  file with the pid and the kernel's start time of that process (a pid the kernel has
  reused is not taken for the owner); the image, the mounts and the daemon's argv all
  lie under them;
* a `FrequencyPin` keeps what it changed (governor and limits per CPU) in its own such
  directory, written before each change;
* tracefs instances and v2 cgroups are named `abtlab-<pid>-<n>`.

`find()` lists what belongs to processes that are gone; `reclaim()` undoes it in the
order the pieces depend on each other: unmount the scratch filesystems, lift throttle
rules and detach the loop devices whose images lie in those directories, unmount the
emulated disks and stop their daemons, put back CPU frequency settings, then remove the
directories (never across a mount), the tracefs instances and the cgroups. Live
processes' resources are never touched. Real backends reclaim before each run (a scan of
two directories, ~2 ms); `abtlab cleanup` does it on demand.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ._shell import read, sh, write
from .device import _V1_FILES, V1_ROOT, V2_ROOT
from .tracefs import TRACEFS

__all__ = ["mark", "remove_dir", "find", "reclaim", "Leftovers", "OWNER", "PIN_STATE",
           "default_roots"]

OWNER = "owner"
PIN_STATE = "cpufreq.json"      # a FrequencyPin's saved settings, in its owned directory
TRACEFS_INSTANCES = TRACEFS / "instances"
_OWNED = re.compile(r"abtlab-(\d+)-\d+")      # tracefs instances and v2 cgroups


def default_roots() -> tuple[str, ...]:
    """Where abtlab makes its directories: /var/tmp (images) and the temporary directory
    (each run's work directory, with everything of that run inside)."""
    return ("/var/tmp", tempfile.gettempdir())


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: [0] the state, [19] the start time in
    clock ticks since boot (fields 3 and 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()


def _start_time(pid: int) -> str | None:
    f = _stat(pid)
    return f[19] if f else None


def mark(directory) -> None:
    """Record this process as the owner of a directory it just made."""
    pid = os.getpid()
    (Path(directory) / OWNER).write_text(f"{pid} {_start_time(pid)}\n")


def remove_dir(directory) -> None:
    """The undo of a marked directory: its owner file, then the (now empty) directory."""
    d = Path(directory)
    (d / OWNER).unlink(missing_ok=True)
    if d.is_dir() and not os.path.ismount(d):
        d.rmdir()


def _owner_alive(directory: Path) -> tuple[bool, int | None]:
    try:
        pid_text, start = (directory / OWNER).read_text().split()
    except (OSError, ValueError):
        return True, None                  # not marked, or unreadable: not ours to judge
    pid = int(pid_text)
    f = _stat(pid)
    return f is not None and f[19] == start and f[0] != "Z", pid


def _pid_alive(pid: int) -> bool:
    f = _stat(pid)
    return f is not None and f[0] != "Z"      # a zombie has run its last instruction


def _mounts() -> list[tuple[str, str]]:
    """(mount point, fstype) of every mount, from /proc/self/mountinfo."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        out.append((left.split()[4].replace("\\040", " "), (right.split() or [""])[0]))
    return out


def _under(path: str, d: Path) -> bool:
    p, root = os.path.realpath(path), os.path.realpath(d)
    return p == root or p.startswith(root + os.sep)


def _loops() -> dict[str, str]:
    """Attached loop device -> its backing file (without ' (deleted)')."""
    out = {}
    for dev in Path("/sys/block").glob("loop*"):
        try:
            back = (dev / "loop" / "backing_file").read_text().strip()
        except OSError:
            continue
        out[f"/dev/{dev.name}"] = back.removesuffix(" (deleted)")
    return out


def _daemons(d: Path) -> list[int]:
    """Processes whose argv names a path under d (the emulated disk's daemon)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a and _under(a.decode(errors="replace"), d) for a in argv[1:]):
            found.append(int(p.name))
    return found


@dataclass
class Leftovers:
    """What processes that are gone left behind."""
    dirs: dict[Path, int] = field(default_factory=dict)        # directory -> dead owner pid
    mounts: list[tuple[str, str]] = field(default_factory=list)  # (point, fstype), deepest first
    loops: list[tuple[str, str]] = field(default_factory=list)   # (device, backing file)
    daemons: list[int] = field(default_factory=list)            # workloads, emulated disks
    instances: list[Path] = field(default_factory=list)
    cgroups: list[Path] = field(default_factory=list)
    pins: list[Path] = field(default_factory=list)               # cpufreq state files

    def __bool__(self):
        return any((self.dirs, self.mounts, self.loops, self.daemons, self.instances,
                    self.cgroups, self.pins))

    def describe(self) -> list[str]:
        lines = [f"directory {d} (pid {pid})" for d, pid in self.dirs.items()]
        lines += [f"{fs} mount {m}" for m, fs in self.mounts]
        lines += [f"loop device {dev} on {back}" for dev, back in self.loops]
        lines += [f"process {pid} ({_comm(pid) or 'gone'})" for pid in self.daemons]
        lines += [f"tracefs instance {p.name}" for p in self.instances]
        lines += [f"cgroup {p}" for p in self.cgroups]
        lines += [f"CPU frequency pin (saved settings in {p})" for p in self.pins]
        return lines


def _owned_dead(parent: Path) -> list[Path]:
    """Entries of parent named abtlab-<pid>-<n> whose pid is gone."""
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir()
                  if (m := _OWNED.fullmatch(p.name)) and not _pid_alive(int(m.group(1))))


def find(roots=None, instances=TRACEFS_INSTANCES, v2_root=V2_ROOT) -> Leftovers:
    """Everything abtlab processes that are gone left under `roots` and in tracefs."""
    left = Leftovers()
    for root in dict.fromkeys(Path(r) for r in (default_roots() if roots is None else roots)):
        if not root.is_dir():
            continue
        for d in sorted(root.glob("abtlab-*")):
            alive, pid = _owner_alive(d) if d.is_dir() else (True, None)
            if not alive:
                left.dirs[d] = pid
    if left.dirs:
        mounts = [(m, fs) for m, fs in _mounts() if any(_under(m, d) for d in left.dirs)]
        left.mounts = sorted(mounts, key=lambda m: -m[0].count("/"))
        left.loops = sorted((dev, back) for dev, back in _loops().items()
                            if any(_under(back, d) for d in left.dirs))
        left.daemons = sorted({pid for d in left.dirs for pid in _daemons(d)})
    left.pins = sorted(d / PIN_STATE for d in left.dirs if (d / PIN_STATE).is_file())
    left.instances = _owned_dead(Path(instances))
    left.cgroups = _owned_dead(Path(v2_root))
    return left


def _umount(point: str, fstype: str) -> None:
    fuse = fstype.startswith("fuse")
    cmd = ["fusermount3", "-u"] if fuse and shutil.which("fusermount3") else ["umount"]
    for delay in (0, 0.1, 0.5):
        time.sleep(delay)
        if not sh(*cmd, point, check=False) and not os.path.ismount(point):
            return
    sh(*cmd[:-1], "-z" if fuse and cmd[0] == "fusermount3" else "-l", point, check=False)


def _lift_throttle(dev: str, v1_root=V1_ROOT) -> None:
    """Remove v1 blkio throttle rules a killed run set on this loop device."""
    try:
        rdev = os.stat(dev).st_rdev
    except OSError:
        return
    mm = f"{os.major(rdev)}:{os.minor(rdev)}"
    for name in _V1_FILES.values():
        path = Path(v1_root) / name
        try:
            if any(line.split()[0] == mm for line in read(path).splitlines() if line.strip()):
                write(path, f"{mm} 0")
        except OSError:
            continue


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _stop(pid: int) -> None:
    """SIGTERM, then SIGKILL; done when the process is gone or a zombie (its parent, if
    not init, reaps it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                return
            time.sleep(0.02)


def _remove_tree(d: Path) -> None:
    """Remove d unless a mount is still inside it (never delete across a mount)."""
    if any(_under(m, d) for m, _ in _mounts()):
        warnings.warn(f"abtlab: {d} still has a mount inside; left in place", RuntimeWarning)
        return
    shutil.rmtree(d, ignore_errors=True)


def reclaim(roots=None, instances=TRACEFS_INSTANCES, v2_root=V2_ROOT,
            v1_root=V1_ROOT, quiet=False) -> list[str]:
    """Undo what abtlab processes that are gone left; return what was undone (and warn
    with it unless quiet)."""
    left = find(roots, instances, v2_root)
    if not left:
        return []
    done = left.describe()
    disks = [pid for pid in left.daemons if _comm(pid) == "abt-slowdisk"]
    for pid in left.daemons:                # a workload still writing keeps its mount busy
        if pid not in disks:
            _stop(pid)
    for point, fstype in left.mounts:       # deepest first: the scratch fs, then the disk
        if not fstype.startswith("fuse"):
            _umount(point, fstype)
    for dev, _ in left.loops:
        _lift_throttle(dev, v1_root)
        sh("losetup", "-d", dev, check=False)
    for point, fstype in left.mounts:
        if fstype.startswith("fuse") and os.path.ismount(point):
            _umount(point, fstype)
    for pid in disks:
        _stop(pid)
    from .cpufreq import restore_saved     # cpufreq imports this module
    kept = set()
    for state in left.pins:                 # governor and limits as they were
        try:
            restore_saved(state)
        except (OSError, ValueError) as exc:  # keep the record for another try
            warnings.warn(f"abtlab: CPU frequency settings in {state} not restored: {exc}",
                          RuntimeWarning)
            kept.add(state.parent)
    for d in left.dirs:
        if d not in kept:
            _remove_tree(d)
    for inst in left.instances:
        try:
            write(inst / "tracing_on", "0")
            inst.rmdir()
        except OSError as exc:
            warnings.warn(f"abtlab: tracefs instance {inst.name} not removed: {exc}",
                          RuntimeWarning)
    for cg in left.cgroups:
        try:
            cg.rmdir()
        except OSError as exc:
            warnings.warn(f"abtlab: cgroup {cg} not removed: {exc}", RuntimeWarning)
    if not quiet:
        warnings.warn("abtlab: undid what a killed abtlab process left: " + "; ".join(done),
                      RuntimeWarning, stacklevel=2)
    return done
