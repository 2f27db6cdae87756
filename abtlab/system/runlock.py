"""One real run at a time on a machine, and one writer per output.

Runs that touch real devices (loop devices, mounts, tracefs, throttles, CPU frequency)
hold `MachineLock`, an exclusive flock on `/run/abtlab/real.lock`: two such runs would
fight over tracefs and loop devices, and their timings would contaminate each other. A
second run waits, saying for whom, or fails at once (`wait=False`, `--no-wait`). Every
sweep with an output also holds `OutputLock`, never waited for: an `--out` that a live
run is writing is refused. flock is released by the kernel when its holder dies, so a
`kill -9` never leaves a stale lock. The machine's lock file stays (like /run/lock); an
output's is removed when its writer ends (only a killed writer's stays, harmlessly).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from ..errors import ConfigError, UnavailableError

__all__ = ["MachineLock", "OutputLock", "lock_dir", "RUN_DIR"]

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
