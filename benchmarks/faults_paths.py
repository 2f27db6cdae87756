"""The fault suite's kinds for the paths around a run rather than inside it (benchmarks.faults
runs them; `python -m benchmarks.faults --kinds disk-full,final-twice,early,device-out`):

* `disk-full`: a simulated sweep (~57 MB of dataset, parts written from its second
  second) to a tmpfs of a size drawn from [2, 130] MB, or (every other trial, drawn) to
  a 160 MB one that another writer fills 0.3-1.5 s in, leaving 0-8 MB (a full disk in
  a part, the resume state or the dataset): it must finish (exit 0) or stop
  with one line naming the space it needs (exit 2), no traceback, no segfault, no
  temporary file; the tmpfs then grows to 256 MB and `--resume` must finish it with
  every repetition once (none lost, none twice).
* `final-twice`: two signals aimed into a simulated sweep's final write (from its
  "writing the dataset" line to the dataset in place, W, measured undisturbed): the
  first after a delay drawn from [0, 1.2 W], the second 0-40 ms later, each SIGINT or
  SIGTERM (drawn). The run must exit 0 or 128 + the FIRST signal with one line and
  without "machine changes undone" (a simulated run changes nothing), leave no
  temporary file, and the dataset, when written, hold every repetition once; when not,
  `--resume` must finish it so.
* `early`: SIGINT or SIGTERM 0-300 ms after the `abtlab` command starts (the installed
  command beside this interpreter, interpreter start-up included): one line and 128 + the
  signal, or a death by the signal before any handler or mask exists (the shell's
  130/143, no output); any traceback counts, whatever exception it ends in ("Fatal
  Python error" too). The command is the launcher backends/start/abt-start.c where it
  was compiled at install (setup.py), which starts Python with both signals blocked
  until abtlab's first statement: a trial whose signal was found pending and blocked
  right after it was sent notes "held by the launcher's mask".
* `device-out`: `--out` a character device, a FIFO, a directory or a symlink to
  /dev/null, with or without --force (drawn): exit 2, one line, and the node untouched.
"""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

KINDS = ("disk-full", "final-twice", "early", "device-out")
HELD = "held by the launcher's mask"
EARLY_S = 0.3
SECOND_S = 0.04
TWO = {"int": signal.SIGINT, "term": signal.SIGTERM}
DISK_CMD = ["run", "sim", "--threads", "32,64", "--file-size", "256k", "--record", "32k",
            "--policy", "ext4;nojc", "--freq", "1.6,2.0,2.6,3.3", "--reps", "150", "--quiet"]
DISK_MB = (2, 130)
WRITE_CMD = ["run", "sim", "--threads", "256", "--file-size", "1m", "--record", "16k",
             "--policy", "ext4;nojc", "--freq", "1.6,3.3", "--reps", "20"]
EARLY_CMD = ["run", "sim", "--threads", "4", "--freq", "1.6,3.3", "--reps", "2", "--quiet"]


def _abtlab(*args) -> list[str]:
    return [sys.executable, "-m", "abtlab", *args]


def installed_command() -> list[str]:
    """The `abtlab` console script beside this interpreter (what a user types), else -m."""
    script = Path(sys.executable).parent / "abtlab"
    return [str(script)] if script.exists() else _abtlab()


def tracebacks(err: str) -> int:
    """Tracebacks in err, whatever they end in (KeyboardInterrupt, a fatal error)."""
    return err.count("Traceback (most recent call last)") + err.count("Fatal Python error") \
        + err.count("Exception ignored")


def _lines(err: str) -> list[str]:
    return [ln for ln in err.strip().splitlines() if ln.strip()]


def check_reps(out: Path, reps: int) -> tuple[int, int, str]:
    """(lost, duplicated) repetitions of out's dataset, and what else is wrong."""
    from abtlab.data.store import load
    ds = load(out)
    ids = ds["run_id"].values.ravel()
    valid = ids[ids >= 0].tolist()
    runs = ds["run_id"].size // max(ds.sizes["rep"], 1) * reps    # points x repetitions
    lost, dup = runs - len(set(valid)), len(valid) - len(set(valid))
    return int(lost), int(dup), "" if ds.sizes["rep"] == reps else f"{ds.sizes['rep']} repetitions"


def _temps(work: Path) -> list[str]:
    return sorted(str(p) for p in work.rglob(".*.tmp-*"))


# -- disk-full -----------------------------------------------------------------------
def _fill(disk: Path, leave: int) -> None:
    """Another writer takes all but `leave` bytes of disk's space."""
    st = os.statvfs(disk)
    take = st.f_bavail * st.f_frsize - leave
    if take > 0:
        fd = os.open(disk / "ballast", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, take)
        except OSError:
            pass
        finally:
            os.close(fd)


def _run_filled(cmd, env, work, disk, trial, rng) -> subprocess.CompletedProcess:
    """cmd on a roomy disk that another writer fills (all but 0-8 MB) 0.3-1.5 s in: a
    full disk while parts, the resume state or the dataset are written."""
    delay, leave = float(rng.uniform(0.3, 1.5)), int(rng.integers(0, 8 << 20))
    trial.target = f"tmpfs filled {delay:.1f} s in, {leave / 1e6:.1f} MB left"
    p = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(delay)
    _fill(disk, leave)
    out, err = p.communicate(timeout=300)
    (disk / "ballast").unlink(missing_ok=True)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def disk_full_trial(trial, work: Path, env: dict, rng) -> None:
    filled = bool(rng.integers(2))
    size = 160 if filled else int(rng.integers(*DISK_MB))
    trial.target = f"tmpfs {size} MB"
    disk = work / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}m", "abtlab-faults", str(disk)],
                   check=True)
    try:
        cmd = _abtlab(*DISK_CMD, "--out", str(disk / "a.nc"))
        cp = _run_filled(cmd, env, work, disk, trial, rng) if filled else \
            subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=300)
        trial.rc.append(cp.returncode)
        trial.tracebacks += tracebacks(cp.stderr)
        lines = _lines(cp.stderr)
        if cp.returncode == 2 and (len(lines) != 1 or "space" not in lines[0]):
            trial.wrong = f"not one line about space: {cp.stderr[-300:]}"
        elif cp.returncode not in (0, 2):
            trial.wrong = f"exit {cp.returncode}: {cp.stderr[-300:]}"
        trial.note = lines[0][:300] if lines else ""
        if left := _temps(disk):
            trial.wrong = trial.wrong or f"temporary files {left}"
        subprocess.run(["mount", "-o", "remount,size=256m", str(disk)], check=True)
        if cp.returncode != 0:
            cp = subprocess.run(cmd + ["--resume"], env=env, cwd=work, capture_output=True,
                                text=True, timeout=300)
            trial.rc.append(cp.returncode)
            trial.tracebacks += tracebacks(cp.stderr)
            if cp.returncode != 0:
                trial.wrong = trial.wrong or f"--resume exited {cp.returncode}: {cp.stderr[-300:]}"
                return
        trial.lost, trial.duplicated, bad = check_reps(disk / "a.nc", 150)
        trial.wrong = trial.wrong or bad
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# -- final-twice -----------------------------------------------------------------------
class _Phase:
    """Reads a run's stderr in a thread; `writing` is set at its "writing the dataset"."""

    def __init__(self, p: subprocess.Popen):
        self.p, self.text, self.writing = p, [], threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in iter(self.p.stderr.readline, ""):
            self.text.append(line)
            if "writing the dataset" in line:
                self.writing.set()
        self.writing.set()

    def err(self) -> str:
        self.thread.join(timeout=30)
        # progress lines are the run's own display, not what it says about its end
        return "".join(ln for ln in self.text if not ln.startswith("sim "))


def write_duration(work: Path, env: dict) -> float:
    """Seconds from an undisturbed WRITE_CMD's "writing the dataset" to its dataset in place."""
    out = work / "w.nc"
    p = subprocess.Popen(_abtlab(*WRITE_CMD, "--out", str(out)), env=env, cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    phase = _Phase(p)
    phase.writing.wait(300)
    t0 = time.monotonic()
    while p.poll() is None and not out.exists():
        time.sleep(0.0005)
    took = time.monotonic() - t0
    p.wait(300)
    shutil.rmtree(work / "w.nc.parts", ignore_errors=True)
    out.unlink(missing_ok=True)
    return took


def final_twice_trial(trial, work: Path, env: dict, rng, duration: float) -> None:
    first, second = (str(rng.choice(sorted(TWO))) for _ in range(2))
    gap = float(rng.uniform(0, SECOND_S))
    trial.signal, trial.target = f"{first}+{second}", f"{gap * 1000:.0f} ms apart"
    out = work / "t.nc"
    cmd = _abtlab(*WRITE_CMD, "--out", str(out))
    p = subprocess.Popen(cmd, env=env, cwd=work, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    phase = _Phase(p)
    phase.writing.wait(300)
    time.sleep(trial.delay)
    trial.alive = p.poll() is None
    for k, name in enumerate((first, second)):
        if k:
            time.sleep(gap)
        try:
            os.kill(p.pid, TWO[name])
        except ProcessLookupError:
            pass
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        trial.hung = True
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    trial.rc.append(p.returncode)
    err = phase.err()
    trial.tracebacks += tracebacks(err)
    lines = _lines(err)
    if p.returncode not in (0, 128 + TWO[first]):
        trial.wrong = f"exit {p.returncode}, first signal {first}: {err[-200:]}"
    elif p.returncode and (len(lines) != 1 or "machine changes undone" in err):
        trial.wrong = f"not one line without 'machine changes undone': {err[-300:]}"
    if left := _temps(work):
        trial.wrong = trial.wrong or f"temporary files {left}"
    trial.note = "written" if out.exists() else "resumed"
    if not out.exists():
        cp = subprocess.run(cmd + ["--resume", "--quiet"], env=env, cwd=work,
                            capture_output=True, text=True, timeout=300)
        trial.rc.append(cp.returncode)
        trial.tracebacks += tracebacks(cp.stderr)
        if cp.returncode != 0:
            trial.wrong = trial.wrong or f"--resume exited {cp.returncode}: {cp.stderr[-200:]}"
            return
    elif (work / "t.nc.parts").exists():
        trial.wrong = trial.wrong or "parts left beside a written dataset"
    trial.lost, trial.duplicated, bad = check_reps(out, 20)
    trial.wrong = trial.wrong or bad


# -- early -------------------------------------------------------------------------------
def early_trial(trial, work: Path, env: dict, rng) -> None:
    name = str(rng.choice(sorted(TWO)))
    trial.signal, trial.delay = name, float(rng.uniform(0, EARLY_S))
    out = work / "e.nc"
    p = subprocess.Popen([*installed_command(), *EARLY_CMD, "--out", str(out)], env=env,
                         cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(trial.delay)
    trial.alive = p.poll() is None
    try:
        p.send_signal(TWO[name])
    except ProcessLookupError:
        pass
    held = _held(p.pid, TWO[name])
    err = p.communicate(timeout=120)[1]
    trial.rc.append(p.returncode)
    trial.tracebacks += tracebacks(err)
    lines, code = _lines(err), TWO[name]
    if p.returncode == -code:           # before Python's handler: the shell says 128 + n
        trial.note = "died by the signal"
        if lines:
            trial.wrong = f"died by the signal, saying {err[-200:]}"
    elif p.returncode == 128 + code:
        if len(lines) != 1 or "interrupted" not in lines[0]:
            trial.wrong = f"not one line: {err[-300:]}"
        trial.note = lines[0][:120] if lines else ""
    elif p.returncode != 0:
        trial.wrong = f"exit {p.returncode}: {err[-300:]}"
    if trial.tracebacks:
        trial.wrong = trial.wrong or f"traceback: {err[-300:]}"
    trial.note = (HELD + "; " if held else "") + trial.note
    if left := [str(f) for f in work.iterdir()]:
        if p.returncode != 0:
            trial.wrong = trial.wrong or f"left {left}"


def _held(pid: int, signum: int) -> bool:
    """The signal is pending and blocked in pid: it came while the `abtlab` launcher's mask
    held it (the interpreter's start-up, before abtlab's first statement). Read right
    after sending, so a signal delivered before the read is not counted: a lower bound."""
    try:
        with open(f"/proc/{pid}/status") as f:
            st = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return False
    bit = 1 << signum - 1
    return bool(int(st["SigBlk"], 16) & bit and (int(st["ShdPnd"], 16) | int(st["SigPnd"], 16)) & bit)


# -- device-out -------------------------------------------------------------------------
def _make(kind: str, path: Path) -> None:
    if kind == "char device":
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/null")


def _identity(path: Path):
    st = os.lstat(path)
    return st.st_mode, st.st_ino, st.st_rdev, st.st_mtime_ns


def device_out_trial(trial, work: Path, env: dict, rng) -> None:
    kind = str(rng.choice(["char device", "fifo", "directory", "symlink to /dev/null"]))
    force = bool(rng.integers(2))
    trial.target = f"{kind}{' --force' if force else ''}"
    out = work / "node.nc"
    _make(kind, out)
    before = _identity(out)
    null = _identity(Path("/dev/null"))
    cp = subprocess.run(_abtlab(*EARLY_CMD, "--out", str(out), *(["--force"] * force)), env=env,
                        cwd=work, capture_output=True, text=True, timeout=120)
    trial.rc.append(cp.returncode)
    trial.tracebacks += tracebacks(cp.stderr)
    lines = _lines(cp.stderr)
    if cp.returncode != 2 or len(lines) != 1 or "never replaces" not in lines[0]:
        trial.wrong = f"exit {cp.returncode}: {cp.stderr[-300:]}"
    elif "--force replaces" in lines[0]:
        trial.wrong = f"suggests --force: {lines[0]}"
    if _identity(out) != before or _identity(Path("/dev/null")) != null:
        trial.wrong = trial.wrong or "the node was changed"
    if (left := sorted(p.name for p in work.iterdir())) != ["node.nc"]:
        trial.wrong = trial.wrong or f"left {left}"
    trial.note = lines[0][:200] if lines else ""
