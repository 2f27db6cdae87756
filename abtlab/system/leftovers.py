"""What a killed abtlab process left on the machine: found, and undone.

`cleanup` undoes every change on any exit a process sees, but `kill -9` (or a crash of
the interpreter) gives it none: the scratch ext4 stays mounted on its loop device, the
emulated disk's daemon keeps serving, a tracefs instance keeps its buffer. So each of
these carries its owner:

* the temporary directories of a run, of `ScratchFS` and of `SlowDisk` have an owner
  record beside them, `<dir>.owner`, with the pid and the kernel's start time of that
  process (a pid the kernel has reused is not taken for the owner); the image, the
  mounts and the daemon's argv all lie under them. The record lives outside the
  directory so that deleting the directory cannot delete it; it goes last, so a run
  killed half-way through its teardown is still found (older runs kept an `owner` file
  inside, which is still read);
* a `FrequencyPin` keeps what it changed (governor and limits per CPU) in its own such
  directory, written before each change;
* tracefs instances and v2 cgroups are named `abtlab-<pid>-<n>...`.

`find()` lists what belongs to processes that are gone; `reclaim()` undoes it in the
order the pieces depend on each other: unmount the scratch filesystems, lift throttle
rules and detach the loop devices whose images lie in those directories, unmount the
emulated disks and stop their daemons, put back CPU frequency settings, then remove the
directories (never across a mount) and their records, the tracefs instances and the
cgroups. Every step is independent: one that fails is reported and the others still
run. Live processes' resources are never touched. Real backends reclaim before each run (a scan of
two directories, ~2 ms); `abtlab cleanup` does it on demand.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import cleanup, mounts
from ._shell import read, sh, write
from .cpufreq_limits import restore_saved
from .device import _V1_FILES, V1_ROOT, V2_ROOT
from .tracefs import TRACEFS

__all__ = ["mark", "make_dir", "WorkDir", "record_of", "remove_dir", "find", "reclaim", "Leftovers", "OWNER", "PIN_STATE",
           "default_roots"]

OWNER = "owner"
PIN_STATE = "cpufreq.json"      # a FrequencyPin's saved settings, in its owned directory
TRACEFS_INSTANCES = TRACEFS / "instances"
RECORD = ".owner"               # suffix of the owner record beside an owned directory
_OWNED = re.compile(r"abtlab-(\d+)-\w+")      # tracefs instances and v2 cgroups


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


def record_of(directory) -> Path:
    """The owner record of an owned directory: beside it, not inside."""
    d = Path(directory)
    return d.with_name(d.name + RECORD)


def mark(directory) -> None:
    """Record this process as the owner of a directory it is about to fill."""
    pid = os.getpid()
    rec = record_of(directory)
    tmp = rec.with_name(f".{rec.name}.{pid}")
    tmp.write_text(f"{pid} {_start_time(pid)}\n")
    os.replace(tmp, rec)                   # a record is whole or absent


def make_dir(parent, prefix: str) -> Path:
    """A new owned directory under parent; its record is written before the directory
    exists, so no kill leaves a directory nobody can tell the owner of."""
    for _ in range(100):
        d = Path(parent) / f"{prefix}{secrets.token_hex(4)}"
        if d.exists() or record_of(d).exists():
            continue
        mark(d)
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            record_of(d).unlink(missing_ok=True)
            continue
        return d
    raise FileExistsError(f"no free directory name {prefix}* in {parent}")


class WorkDir(cleanup.Undoable):
    """`with WorkDir() as path:` a run's owned work directory, removed on exit with its
    contents (never across a mount), then its record."""

    def __init__(self, prefix="abtlab-run-", parent=None):
        self._prefix, self._parent = prefix, parent or tempfile.gettempdir()
        self._tokens: list[int] = []
        self.path: Path | None = None

    def _setup(self):
        self.path = make_dir(self._parent, self._prefix)
        self._undo(lambda: remove_dir(self.path, tree=True), f"remove {self.path}")

    def __enter__(self) -> Path:
        return super().__enter__().path


def remove_dir(directory, tree=False) -> None:
    """The undo of an owned directory: the directory (with its contents if tree, never
    across a mount), then its record; a directory still holding a mount keeps its record,
    so `cleanup` can finish the job."""
    d = Path(directory)
    (d / OWNER).unlink(missing_ok=True)
    if d.is_dir():
        if any(_under(m, d) for m, _ in _mounts()):
            raise OSError(f"{d} still has a mount inside; left with its record")
        shutil.rmtree(d) if tree else d.rmdir()
    record_of(d).unlink(missing_ok=True)


def _owner_alive(directory: Path) -> tuple[bool, int | None]:
    try:
        rec = record_of(directory)
        text = (rec if rec.is_file() else directory / OWNER).read_text()
        pid_text, start = text.split()
    except (OSError, ValueError):
        return True, None                  # not marked, or unreadable: not ours to judge
    pid = int(pid_text)
    f = _stat(pid)
    return f is not None and f[19] == start and f[0] != "Z", pid


def _pid_alive(pid: int) -> bool:
    f = _stat(pid)
    return f is not None and f[0] != "Z"      # a zombie has run its last instruction


def _mountinfo() -> list[tuple[str, str, str]]:
    """(mount point, fstype, source) of every mount, from /proc/self/mountinfo."""
    return [(m.point, m.fstype, m.source) for m in mounts.table()]


def _mounts() -> list[tuple[str, str]]:
    return [(m, fs) for m, fs, _ in _mountinfo()]


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
    throttles: list[str] = field(default_factory=list)          # major:minor of detached loops
    daemons: list[int] = field(default_factory=list)            # workloads, emulated disks
    instances: list[Path] = field(default_factory=list)
    cgroups: list[Path] = field(default_factory=list)
    pins: list[Path] = field(default_factory=list)               # cpufreq state files

    def __bool__(self):
        return any((self.dirs, self.mounts, self.loops, self.throttles, self.daemons,
                    self.instances, self.cgroups, self.pins))

    def describe(self) -> list[str]:
        lines = [f"directory {d} (pid {pid})" for d, pid in self.dirs.items()]
        lines += [f"{fs} mount {m}" for m, fs in self.mounts]
        lines += [f"loop device {dev} on {back}" for dev, back in self.loops]
        lines += [f"throttle {mm} on a detached loop device" for mm in self.throttles]
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


def _dead_dirs(roots) -> dict[Path, int]:
    """Owned directories (or, once deleted, their records) whose owner is gone."""
    out = {}
    for root in roots:
        if not root.is_dir():
            continue
        names = {p.name.removesuffix(RECORD) for p in root.glob("abtlab-*")
                 if p.is_dir() or p.name.endswith(RECORD)}
        for d in sorted(root / n for n in names):
            alive, pid = _owner_alive(d)
            if not alive:
                out[d] = pid
    return out


def _orphan_mounts(roots, dirs) -> list[tuple[str, str]]:
    """Mounts under an abtlab directory no live process owns: under a dead one, on a loop
    device backed by an image under one, or on a detached loop device (its image gone)."""
    loops, out = _loops(), []
    for point, fstype, source in _mountinfo():
        back = loops.get(source)
        if any(_under(point, d) or (back and _under(back, d)) for d in dirs):
            out.append((point, fstype))
        elif source.startswith("/dev/loop") and back is None and _in_unowned(point, roots):
            out.append((point, fstype))
    return sorted(out, key=lambda m: -m[0].count("/"))


def _in_unowned(point: str, roots) -> bool:
    """point lies in an abtlab-* directory of a root that has no live owner record."""
    for root in roots:
        if _under(point, root) and os.path.realpath(point) != os.path.realpath(root):
            top = Path(root) / os.path.relpath(os.path.realpath(point), os.path.realpath(root)).split(os.sep)[0]
            return top.name.startswith("abtlab-") and not _owner_alive(top)[1]
    return False


def _detached_throttles(v1_root=V1_ROOT) -> list[str]:
    """v1 throttle rules on loop devices that are no longer attached (they would slow
    the next run that gets that device)."""
    attached, out = {Path(d).name for d in _loops()}, set()
    for name in _V1_FILES.values():
        try:
            lines = read(Path(v1_root) / name).splitlines()
        except OSError:
            continue
        for line in lines:
            mm = (line.split() or [""])[0]
            if mm.startswith("7:") and f"loop{mm[2:]}" not in attached:
                out.add(mm)
    return sorted(out)


@contextlib.contextmanager
def _tracefs_visible(instances: Path):
    """Mount tracefs to look at its instances if it is not mounted (root only), and
    unmount it afterwards: only what was mounted here."""
    root = Path(instances).parent
    if Path(instances) != TRACEFS_INSTANCES or root.joinpath("instances").is_dir() \
            or os.geteuid() != 0 or not root.is_dir():
        yield
        return
    mounted = not sh("mount", "-t", "tracefs", "nodev", root, check=False) and \
        root.joinpath("instances").is_dir()
    try:
        yield
    finally:
        if mounted:
            sh("umount", root, check=False)


def find(roots=None, instances=TRACEFS_INSTANCES, v2_root=V2_ROOT, v1_root=V1_ROOT) -> Leftovers:
    """Everything abtlab processes that are gone left under `roots` and in tracefs."""
    roots = list(dict.fromkeys(Path(r) for r in (default_roots() if roots is None else roots)))
    left = Leftovers(dirs=_dead_dirs(roots))
    left.mounts = _orphan_mounts(roots, left.dirs)
    left.loops = sorted((dev, back) for dev, back in _loops().items()
                        if any(_under(back, d) for d in left.dirs))
    left.throttles = _detached_throttles(v1_root)
    left.daemons = sorted({pid for d in left.dirs if d.is_dir() for pid in _daemons(d)})
    left.pins = sorted(d / PIN_STATE for d in left.dirs if (d / PIN_STATE).is_file())
    with _tracefs_visible(Path(instances)):
        left.instances = _owned_dead(Path(instances))
    left.cgroups = _owned_dead(Path(v2_root))
    return left


def _umount(point: str, fstype: str) -> None:
    """Unmount, retrying a busy mount; at last detach it lazily (umount -l, fusermount -z)."""
    fuse = fstype.startswith("fuse") and shutil.which("fusermount3")
    cmd = ["fusermount3", "-u"] if fuse else ["umount"]
    for delay in (0, 0.1, 0.5):
        time.sleep(delay)
        if not os.path.ismount(point):
            return
        sh(*cmd, point, check=False)
    if os.path.ismount(point):
        sh(*cmd, "-z" if fuse else "-l", point)


def _lift_throttle(dev: str, v1_root=V1_ROOT) -> None:
    """Remove v1 blkio throttle rules on this loop device (a path or major:minor)."""
    if dev.startswith("/"):
        rdev = os.stat(dev).st_rdev
        dev = f"{os.major(rdev)}:{os.minor(rdev)}"
    for name in _V1_FILES.values():
        path = Path(v1_root) / name
        if not path.exists():
            continue
        if any(line.split()[0] == dev for line in read(path).splitlines() if line.strip()):
            write(path, f"{dev} 0")


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


def _detach(dev: str, v1_root) -> None:
    _lift_throttle(dev, v1_root)
    sh("losetup", "-d", dev)


def _remove_instance(inst: Path) -> None:
    write(inst / "tracing_on", "0")
    inst.rmdir()


def _remove_owned(d: Path) -> None:
    """A dead run's directory and record; a CPU frequency pin in it is put back first,
    and if that fails the directory stays, so its saved settings get another try."""
    if (d / PIN_STATE).is_file():
        restore_saved(d / PIN_STATE)
    remove_dir(d, tree=True)


def _steps(left: Leftovers, v1_root) -> list[tuple[str, object]]:
    """(label, undo) in the order the pieces depend on each other."""
    disks = [pid for pid in left.daemons if _comm(pid) == "abt-slowdisk"]
    steps = [(f"stop process {p}", lambda p=p: _stop(p)) for p in left.daemons if p not in disks]
    steps += [(f"unmount {m}", lambda m=m, f=f: _umount(m, f))   # deepest first
              for m, f in left.mounts if not f.startswith("fuse")]
    steps += [(f"detach {dev}", lambda d=dev: _detach(d, v1_root)) for dev, _ in left.loops]
    steps += [(f"lift throttle {mm}", lambda mm=mm: _lift_throttle(mm, v1_root))
              for mm in left.throttles]
    steps += [(f"unmount {m}", lambda m=m, f=f: _umount(m, f))
              for m, f in left.mounts if f.startswith("fuse")]
    steps += [(f"stop process {p}", lambda p=p: _stop(p)) for p in disks]
    steps += [(f"remove {d}", lambda d=d: _remove_owned(d)) for d in left.dirs]
    steps += [(f"remove tracefs instance {i.name}", lambda i=i: _remove_instance(i))
              for i in left.instances]
    steps += [(f"remove cgroup {c}", lambda c=c: c.rmdir()) for c in left.cgroups]
    return steps


def _notice(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def reclaim(roots=None, instances=TRACEFS_INSTANCES, v2_root=V2_ROOT,
            v1_root=V1_ROOT, quiet=False, failed: list | None = None, say=_notice) -> list[str]:
    """Undo what abtlab processes that are gone left; return what was found (and say it
    in one line, by default on stderr, unless quiet). Every step runs even if another
    failed: failures are appended to `failed` and said, a line each, unless quiet.
    A notice, not a warning: the run goes on as asked, and a warning's source line
    would tell a user nothing."""
    failed = [] if failed is None else failed
    first = len(failed)
    with _tracefs_visible(Path(instances)):
        left = find(roots, instances, v2_root, v1_root)
        if not left:
            return []
        done = left.describe()
        for label, undo in _steps(left, v1_root):
            try:
                undo()
            except Exception as exc:       # one failed step must not stop the others
                failed.append(f"{label}: {exc}")
    if not quiet:
        say("abtlab: undid what a killed abtlab process left: " + "; ".join(done))
        for msg in failed[first:]:
            say(f"abtlab: could not undo {msg}")
    return done
