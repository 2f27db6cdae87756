"""An emulated slow disk: `abt-slowdisk` (FUSE) mounted on a fresh directory.

`SlowDisk(model, workdir)` starts `backends/slowdisk/abt-slowdisk` in the foreground on
a new directory `abtlab-slowdisk-*` (backing files in `back/`, the FUSE mount on `mnt/`)
and waits until the mount is there. A scratch image made under `.mountpoint` and
attached to a loop device then pays the latency model of `model` (a `kind="latency"`
device profile, see abtlab.system.device) on every request the loop device sends it,
and a journal commit's cache flushes become the model's flush cost.

Every step pushes its undo onto abtlab.system.cleanup: on exit, on an exception and on
SIGTERM/SIGINT the mount is removed with `fusermount3 -u` (only if it is still our FUSE
mount of this directory), the process is waited for and killed if it lingers, and only
the directories this object made are removed. The daemon runs in its own session, so
a Ctrl-C at the terminal reaches Python (which unwinds in order), not the daemon.

The loop device on it runs with `--direct-io=on` (abtlab.machines.host.scratch_on_device): in
buffered mode its worker sends one request at a time, so the disk serves the 64
fsyncs' writes of a run in whatever order they were submitted and each out-of-order
one pays a seek (8 to 47 seeks over the same ~138 requests, run time following them
exactly). With direct I/O the requests arrive together (~65 of ~72 per run find the
disk busy) and the daemon serves them in elevator order, as a disk with a command queue
does; the FUSE mount gets enough threads (`max_threads`) for the whole queue to wait in
the model.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

from .. import about
from ..errors import ConfigError, RunError, UnavailableError
from . import cleanup, leftovers, mounts
from ._shell import sh
from .device import Profile, parse_profile

__all__ = ["SlowDisk", "program", "model_args", "fuse_mounts"]

FSTYPE = "fuse.abt-slowdisk"
LABEL = "emulated device (FUSE latency model)"
_OPTS = {"seek_us": "--seek-us", "rotation_us": "--rotation-us", "bw_mbps": "--bw-mbps",
         "flush_us": "--flush-us", "idle_us": "--idle-us",
         "sequential_window": "--sequential-window"}


def program() -> Path:
    """The built abt-slowdisk, or UnavailableError saying how to get it."""
    path = about.NATIVE / "slowdisk" / "abt-slowdisk"
    if not path.exists():
        raise UnavailableError(f"{path} is not built: install fuse3 libfuse3-dev pkg-config, "
                               f"then `make -C {path.parents[1]}`")
    if not os.path.exists("/dev/fuse"):
        raise UnavailableError("no /dev/fuse: the emulated slow disk needs FUSE")
    return path


def model_args(profile: Profile) -> list[str]:
    """The daemon's model options for a latency profile: the drive model of abt_disk.h
    for a profile that names one, else the explicit latency model."""
    if profile.disk:
        return [f"--disk={profile.disk}"] + ([f"--fixed-ns={profile.fixed_ns}"]
                                             if profile.fixed_ns else [])
    return [f"{_OPTS[k]}={v}" for k, v in profile.latency().items()]


def fuse_mounts() -> dict[str, str]:
    """{mount point: fstype} of every FUSE mount, from /proc/self/mountinfo."""
    return {m.point: m.fstype for m in mounts.table() if m.fstype.startswith("fuse")}


class SlowDisk(cleanup.Undoable):
    """abt-slowdisk mounted on a fresh directory; see the module docstring."""

    def __init__(self, model, workdir=None, timeout: float = 10.0):
        self.profile = parse_profile(model)
        if self.profile.kind != "latency":
            raise ConfigError("device", self.profile.name,
                              "a latency profile ('hdd7200', 'hdd7200-nocache', 'ssd-sata', "
                              "'fixed:...', 'latency:...')")
        if workdir is not None and not os.path.isdir(workdir):
            raise ConfigError("workdir", workdir, "an existing directory")
        self._workdir, self.timeout = workdir, float(timeout)
        self._tokens: list[int] = []
        self.dir = self.backing = self.mountpoint = self.proc = None
        self.counters: dict[str, int] = {}

    def _setup(self):
        prog = program()
        leftovers.reclaim(roots=(self._workdir or "/var/tmp", *leftovers.default_roots()))
        self._make_dirs()
        self._start(prog)
        self._wait_mounted()

    def _make_dirs(self):
        parent = self._workdir or "/var/tmp"
        self.dir = Path(tempfile.mkdtemp(prefix="abtlab-slowdisk-", dir=parent))
        self._undo(lambda d=self.dir: leftovers.remove_dir(d), f"remove {self.dir}")
        leftovers.mark(self.dir)     # so a later run can undo this one after a kill -9
        self.backing, self.mountpoint = self.dir / "back", self.dir / "mnt"
        self.backing.mkdir()
        # back/ was made empty here: every file in it came through our own mount (the
        # scratch image), so it is ours to remove even if the unlink via FUSE failed
        self._undo(lambda d=self.backing: _rmdir_quiet(d, files=True), f"remove {self.backing}")
        self.mountpoint.mkdir()
        self._undo(lambda d=self.mountpoint: _rmdir_quiet(d), f"remove {self.mountpoint}")

    def _start(self, prog):
        self._log = self.dir / "slowdisk.log"
        # enough FUSE threads that a loop device's whole queue can wait in the model
        argv = [str(prog), *model_args(self.profile), str(self.backing), str(self.mountpoint), "-f",
                "-o", "max_threads=256"]
        with open(self._log, "w") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
        self._undo(self._stop, f"stop abt-slowdisk (pid {self.proc.pid}) on {self.mountpoint}")

    def _mounted(self) -> bool:
        return fuse_mounts().get(str(self.mountpoint)) == FSTYPE

    def _wait_mounted(self):
        deadline = time.monotonic() + self.timeout
        while not self._mounted():
            if self.proc.poll() is not None:
                raise RunError(f"abt-slowdisk exited {self.proc.returncode}: {self._log_text().strip()}")
            if time.monotonic() > deadline:
                raise RunError(f"abt-slowdisk did not mount {self.mountpoint} in {self.timeout} s")
            time.sleep(0.01)

    # -- tear-down -------------------------------------------------------------------
    def _stop(self):
        if self._mounted():
            for delay in (0, 0.1, 0.3, 1.0):
                time.sleep(delay)
                if not sh("fusermount3", "-u", self.mountpoint, check=False) or not self._mounted():
                    break
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            warnings.warn(f"abt-slowdisk (pid {self.proc.pid}) did not exit: killed",
                          RuntimeWarning)
            self.proc.kill()
            self.proc.wait(timeout=5)
        if self._mounted():  # killed with the mount busy: detach it lazily
            sh("fusermount3", "-u", "-z", self.mountpoint, check=False)
        self.counters = _counters(self._log_text())
        self._log.unlink(missing_ok=True)

    def _complete_lines(self) -> str:
        """The log up to its last newline: a line being written is not read half."""
        text = self._log_text()
        return text[:text.rfind("\n") + 1]

    def _log_text(self) -> str:
        try:
            return self._log.read_text()
        except OSError:
            return ""

    def snapshot(self) -> dict[str, int]:
        """The daemon's counters now (it prints them on SIGUSR1): take two and subtract
        to count what one run cost the emulated disk."""
        seen = self._complete_lines().count("slowdisk:")
        os.kill(self.proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            text = self._complete_lines()
            if text.count("slowdisk:") > seen:
                return _counters(text)
            time.sleep(0.005)
        gone = self.proc.poll()
        raise RunError(f"abt-slowdisk (pid {self.proc.pid}) did not report its counters"
                       + (f": it exited with {gone}" if gone is not None else " within 5 s"))

    # -- facts -------------------------------------------------------------------------
    def describe(self) -> dict:
        """Attributes for a run dataset: the model's parameters, labelled as emulated."""
        attrs = {"device_profile": self.profile.name,
                 "device_profile_source": self.profile.source,
                 "device_emulation": LABEL}
        attrs.update({f"device_{k}": v for k, v in self.profile.latency().items()})
        return attrs

    def __repr__(self):
        return f"SlowDisk({self.profile.name} on {self.mountpoint})"


def _counters(text: str) -> dict[str, int]:
    """The daemon's last counters line 'slowdisk: requests=N positionings=N ...'."""
    lines = [ln for ln in text.splitlines() if ln.startswith("slowdisk:")]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", lines[-1])} if lines else {}


def _rmdir_quiet(d: Path, files: bool = False):
    # Never remove a mount point that is still mounted, nor anything we did not create.
    if d.is_dir() and not os.path.ismount(d):
        if files:
            for f in d.iterdir():
                if f.is_file() and not f.is_symlink():
                    f.unlink()
        d.rmdir()
