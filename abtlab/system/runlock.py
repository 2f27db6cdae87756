"""One real run at a time on a machine, and one writer per output.

Runs that touch real devices (loop devices, mounts, tracefs, throttles, CPU frequency)
hold `MachineLock`, an exclusive flock on `/run/abtlab/real.lock`: two such runs would
fight over tracefs and loop devices, and their timings would contaminate each other. A
second run waits, saying for whom, or fails at once (`wait=False`, `--no-wait`). Every
sweep with an output also holds `OutputLock`, never waited for: an `--out` that a live
run is writing is refused. flock is released by the kernel when its holder dies, so a
`kill -9` never leaves a stale lock. The machine's lock file stays (like /run/lock); an
output's is removed when its writer ends. A killed writer's stays, harmlessly, and names
its output: `stale_outputs()` finds such files of writers that are gone, with the
temporary dataset files they left beside their outputs, for `abtlab cleanup`.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..data import store
from ..errors import ConfigError, UnavailableError

__all__ = ["MachineLock", "OutputLock", "lock_dir", "RUN_DIR", "StaleOutput", "stale_outputs",
           "remove_stale"]

RUN_DIR = Path("/run/abtlab")


def lock_dir() -> Path:
    """/run/abtlab where this user may write there (root), else a per-user temp dir."""
    for d in (RUN_DIR, Path(tempfile.gettempdir()) / f"abtlab.locks-{os.getuid()}"):
        try:
            d.mkdir(mode=0o755, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise UnavailableError("no writable directory for abtlab's run locks")


class _Flock:
    """An exclusive flock on one file, which says who holds it."""

    def __init__(self, path: Path, note: str):
        self.path, self.note, self._fd = Path(path), note, None

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def _try(self, fd, blocking=False) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            return True
        except BlockingIOError:
            return False

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "another process"
        except OSError:
            return "another process"

    def _claim(self, fd) -> None:
        self._fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {self.note}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)          # closing drops the flock
            self._fd = None

    def __exit__(self, *exc):
        self.release()
        return False


class MachineLock(_Flock):
    """`with MachineLock(note):` hold the machine for a real run; see the module doc."""

    def __init__(self, note: str, wait=True, path=None, say=None):
        super().__init__(path or lock_dir() / "real.lock", note)
        self.wait = wait
        self._say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))

    def __enter__(self):
        fd = self._open()
        try:
            if not self._try(fd):
                if not self.wait:
                    raise UnavailableError(f"another real run holds this machine "
                                           f"({self.holder()}); without --no-wait this run waits")
                self._say(f"abtlab: waiting for the real run that holds this machine "
                          f"({self.holder()}) to finish")
                self._try(fd, blocking=True)
            self._claim(fd)
        except BaseException:
            if self._fd is None:
                os.close(fd)
            raise
        return self


class OutputLock(_Flock):
    """`with OutputLock(out):` refuse an output that a live run is writing."""

    def __init__(self, out, directory=None):
        real = os.path.realpath(out)
        name = hashlib.sha256(real.encode()).hexdigest()[:16]
        super().__init__(Path(directory or lock_dir()) / f"out-{name}.lock", real)
        self.out = str(out)

    def __enter__(self):
        while True:
            fd = self._open()
            if not self._try(fd):
                os.close(fd)
                raise ConfigError("out", self.out, f"a path no live run is writing "
                                                    f"({self.holder()} is writing it)")
            if self._current(fd):
                break
            os.close(fd)            # its holder removed the file on release: take the new one
        self._claim(fd)
        return self

    def _current(self, fd) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Remove the lock file while still holding it, so one file per output ever
        written does not pile up (a process that opened it meanwhile sees it is gone)."""
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
        super().release()


# -- what killed writers left: their output locks and temporary dataset files ------------
@dataclass
class StaleOutput:
    """An output lock whose writer is gone, and its temporary files beside the output."""
    lock: Path
    pid: int
    out: str
    temps: list[Path] = field(default_factory=list)

    def describe(self) -> list[str]:
        return [f"temporary dataset file {t}" for t in self.temps] + \
               [f"output lock {self.lock} (pid {self.pid}, writing {self.out})"]


def _unheld(path: Path) -> int | None:
    """An fd holding path's flock, or None when a live writer holds it (or it is gone)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def stale_outputs(directory=None) -> list[StaleOutput]:
    """Output lock files that no process holds and whose recorded writer is gone (killed
    with -9), each with save's temporary files of dead writers beside its output."""
    found = []
    for path in sorted(Path(directory or lock_dir()).glob("out-*.lock")):
        if (fd := _unheld(path)) is None:
            continue
        try:
            text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
        finally:
            os.close(fd)
        head, _, out = text.partition(": ")
        if not (head.startswith("pid ") and head[4:].isdigit() and out):
            continue                    # a writer between creating the file and claiming it
        pid = int(head[4:])
        if store.writer_alive(pid):
            continue                    # ending: it removes its lock file itself
        found.append(StaleOutput(path, pid, out, store.stale_temps(out)))
    return found


def remove_stale(stale: StaleOutput) -> None:
    """Remove a stale output's temporary files, then its lock file, holding the lock so
    that a writer starting meanwhile either holds it first (it stays) or takes a new one."""
    for t in stale.temps:
        shutil.rmtree(t) if t.is_dir() and not t.is_symlink() else t.unlink(missing_ok=True)
    if (fd := _unheld(stale.lock)) is None:
        return
    try:
        if os.stat(stale.lock).st_ino == os.fstat(fd).st_ino:
            stale.lock.unlink()
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
