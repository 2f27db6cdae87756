"""Fault injection: SIGINT, SIGTERM and SIGKILL at random moments of real runs and sweeps,
and concurrent runs, each trial followed by a check that nothing is left on the machine.

    python -m benchmarks.faults [--kinds run-int,run-term,run-kill,sweep-int,sweep-term,
        sweep-kill,concurrent,guest-int,guest-term,guest-kill,final-write,disk-full,
        final-twice,early,device-out] [--trials 100]
        [--start 0] [--seed 0] [--budget SECONDS] [--results FILE.json] [--table FILE.json]

Each kind first times one undisturbed command (its duration D; nothing may be left after
it either), then `--trials` trials run, one of each kind in turn: the command is started
in its own session and, after a delay drawn uniformly from [0, 1.2 D] (seeded: trial i
of a kind always draws the same delay, device and target), signalled, either itself
(`kill PID`) or with its children (`kill -- -PGID`, what Ctrl-C does). After
SIGINT/SIGTERM the run's own teardown must leave nothing; after SIGKILL, `abtlab
cleanup` must. `concurrent` starts two runs at once (the same or another --out, waiting
or --no-wait) and checks that they were serialised or refused as documented. A signal
that lands in a library's finalizer is swallowed there ("Exception ignored in ...");
abtlab raises it again at the next step or at the end, and the table counts such trials
apart. The check compares the machine with a snapshot taken before the trial: loop
devices, mounts (ext4, FUSE, tracefs), abt-* and qemu processes, tracefs instances,
blkio throttle rules and abtlab cgroups, abtlab temporary files and directories, the
machine lock and the out-locks of the trial's outputs, the temporary dataset files
beside them (`.OUT.tmp-PID`); and asks `leftovers.find()` what `abtlab cleanup` would
undo (a killed process gets 10 s to exit first: a workload killed mid-write to a
throttled device finishes that write). Loop devices and mounts count when they lie under
the trial's TMPDIR or /var/tmp, processes and tracefs instances when they are the
trial's: other users' runs on the machine meanwhile are not its leftovers. A trial that
leaves something is cleaned up before the next.

`final-write` signals a run while it writes its dataset beside --out: the trial watches
for the write's temporary file and signals (SIGINT, SIGTERM or SIGKILL, drawn) after a
delay drawn from [0, 1.2 W], W the write's duration in the undisturbed run ("signalled"
counts the signals that found the temporary file still there). After SIGKILL an even
trial runs `abtlab cleanup`; every odd trial then runs the command again with
`--resume`, which must finish the dataset with each repetition once.

The kinds disk-full, final-twice, early and device-out (a full tmpfs, two signals in
the final write, a signal in the first 300 ms, a device node as --out) are described in
benchmarks/faults_paths.py; the table counts, for every kind, the tracebacks printed
whatever exception they end in, and the repetitions lost or kept twice after --resume.

Needs root and loop devices; changes the machine, so run it under the machine's
benchmark lock. `--budget` stops starting trials after that many seconds (the table then
says how many ran); `--results` appends the trials to a JSON file and `--table` prints
the table of such a file: several invocations with `--start` at the next trial index
make one table. The guest kinds signal a two-point IOzone run on `--machine guest`
(qemu TCG, virtual clock): its qemu and temporary files must go too, after SIGKILL by the
parent-death signal qemu is started with.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from abtlab.errors import ConfigError

from . import faults_paths

ROOT = Path(__file__).resolve().parents[1]
# new kinds go at the end: a trial's draws are seeded by its kind's index
KINDS = ("run-int", "run-term", "run-kill", "sweep-int", "sweep-term", "sweep-kill", "concurrent",
         "guest-int", "guest-term", "guest-kill", "final-write", *faults_paths.KINDS)
SIGNALS = {"int": signal.SIGINT, "term": signal.SIGTERM, "kill": signal.SIGKILL}
DEVICES = ("none", "hdd7200", "hdd7200-throttle")
EXIT_TIMEOUT = 120.0          # a signalled run that has not exited by then is hung
PROCESS_EXIT = 10.0           # a killed process still there after this is left behind
SWEEP_SPEC = """backend = "iozone"
seed = {seed}
warmup = 0
repetitions = 1
[factors]
threads = [16]
file_size = "128k"
record_size = "32k"
policy = ["ext4", "nojc"]
freq = "emulated:3.3"
device = {devices}
"""


# -- what is on the machine ----------------------------------------------------------
def _read(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:
        return ""


def _loops() -> set[str]:
    out = set()
    for d in Path("/sys/block").glob("loop*"):
        back = _read(d / "loop" / "backing_file").strip()
        if back:
            out.add(f"/dev/{d.name} on {back}")
    return out


def _mounts() -> set[str]:
    from abtlab.system import mounts
    return {f"{m.fstype} {m.source} on {m.point}" for m in mounts.table()}


def _environ(pid: str) -> list[bytes] | None:
    """A process's environment, None when it is gone or unreadable."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None


def _trial_mark(tmpdir: Path) -> bytes:
    return b"TMPDIR=" + os.fsencode(tmpdir)


def _processes(tmpdir: Path) -> set[str]:
    """abt-* and qemu processes started by a trial: every process a trial starts inherits
    its TMPDIR, so runs of the user's own (a guest sweep, say) on the machine meanwhile
    are not counted as a trial's leftovers."""
    out = set()
    for d in Path("/proc").glob("[0-9]*"):
        comm = _read(d / "comm").strip()
        if comm.startswith(("abt-", "qemu")) and _trial_mark(tmpdir) in (_environ(d.name) or ()):
            out.add(f"{comm} (pid {d.name})")
    return out


def _instances() -> set[str]:
    out = set()
    for line in _mounts():
        if line.startswith("tracefs "):
            point = Path(line.rsplit(" on ", 1)[1])
            out |= {f"{p.name} in {point}" for p in (point / "instances").glob("abtlab*")}
    return out


def _throttles() -> set[str]:
    from abtlab.system.device import _V1_FILES, V1_ROOT, V2_ROOT
    out = {f"{name}: {line}" for name in _V1_FILES.values()
           for line in _read(V1_ROOT / name).splitlines() if line.strip()}
    return out | {f"cgroup {p}" for p in V2_ROOT.glob("abtlab*")}


def _temp(tmpdir: Path) -> set[str]:
    found = {str(p) for p in tmpdir.iterdir()}
    for root in ("/var/tmp", "/dev/shm"):
        found |= {str(p) for pattern in ("abtlab*", "abt-*") for p in Path(root).glob(pattern)}
    return found


def _started_by_trial(pid: str, tmpdir: Path) -> bool:
    env = _environ(pid)
    return env is None or _trial_mark(tmpdir) in env     # gone or unreadable: not excused


def _lock_held(tmpdir: Path) -> set[str]:
    """The machine lock, when a process of the trial holds it (a run of somebody else's
    that holds it meanwhile is not the trial's leftover)."""
    from abtlab.system.runlock import lock_dir
    fd = os.open(lock_dir() / "real.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return set()
    except BlockingIOError:     # say by whom
        who = _read(lock_dir() / "real.lock").strip()
        pid = who.split()[1].rstrip(":") if who.startswith("pid ") else ""
        if pid.isdigit() and not _started_by_trial(pid, tmpdir):
            return set()
        return {f"the machine lock is held ({who[:120]})"}
    finally:
        os.close(fd)


def _out_temps(work: Path | None) -> set[str]:
    """Temporary dataset files (`.OUT.tmp-PID`) beside the trial's outputs."""
    return {str(p) for p in work.glob(".*.tmp-*")} if work else set()


def _out_locks(work: Path | None) -> set[str]:
    """Out-lock files of the trial's outputs (a writer removes its own as it ends)."""
    from abtlab.system.runlock import lock_dir
    if work is None:
        return set()
    root = os.path.realpath(work) + os.sep
    return {f"{p.name}: {text}" for p in lock_dir().glob("out-*.lock")
            if root in (text := _read(p).strip())}


def _cleanup_finds(tmpdir: Path) -> set[str]:
    from abtlab.system import leftovers
    return set(leftovers.find(roots=("/var/tmp", str(tmpdir))).describe())


def _trials(path: str, tmpdir: Path) -> bool:
    """A path a trial's run may have made: under its TMPDIR (its work directories, the
    images and mounts in them) or /var/tmp. Another user's runs on the machine meanwhile
    make theirs under their own temporary directories and are not the trial's."""
    real = os.path.realpath(path.removesuffix(" (deleted)"))
    return any(real == r or real.startswith(r + os.sep)
               for r in (os.path.realpath(tmpdir), "/var/tmp"))


def _instance_of_trial(line: str, tmpdir: Path) -> bool:
    """A tracefs instance abtlab-<pid>-... of a trial's process (or of one that is gone)."""
    pid = line.split("-")[1] if line.startswith("abtlab-") else ""
    return not pid.isdigit() or _started_by_trial(pid, tmpdir)


def snapshot(tmpdir: Path, work: Path | None = None) -> dict[str, set[str]]:
    """What is on the machine now, by category (the table's leftover columns); with work,
    also beside the trial's outputs there."""
    mounts = _mounts()
    return {"loop": {lo for lo in _loops() if _trials(lo.split(" on ", 1)[1], tmpdir)},
            "mount": {m for m in mounts if not m.startswith("tracefs ")
                      and _trials(m.rsplit(" on ", 1)[1], tmpdir)},
            "tracefs": {m for m in mounts if m.startswith("tracefs ")}
            | {i for i in _instances() if _instance_of_trial(i, tmpdir)},
            "throttle": _throttles(), "process": _processes(tmpdir), "temp": _temp(tmpdir),
            "out temp": _out_temps(work), "lock": _lock_held(tmpdir) | _out_locks(work),
            "cleanup finds": _cleanup_finds(tmpdir)}


def _settle(before: dict, tmpdir: Path, wait: float | None = None) -> None:
    """Give killed processes time to exit: a workload killed in the middle of a write to
    a throttled device finishes that write first (state D), and init reaps it later."""
    deadline = time.monotonic() + (PROCESS_EXIT if wait is None else wait)
    while _processes(tmpdir) - before["process"] and time.monotonic() < deadline:
        time.sleep(0.1)


def left_since(before: dict, tmpdir: Path, work: Path | None = None) -> dict[str, list[str]]:
    """What appeared (or, for tracefs, vanished) since `before`, by category."""
    _settle(before, tmpdir)
    now = snapshot(tmpdir, work)
    diff = {k: sorted(now[k] - before[k]) for k in now}
    diff["tracefs"] += [f"gone: {m}" for m in sorted(before["tracefs"] - now["tracefs"])]
    return {k: v for k, v in diff.items() if v}


# -- one trial -------------------------------------------------------------------------
@dataclass
class Trial:
    kind: str
    index: int
    delay: float = 0.0                # seconds from start to the signal
    target: str = "pid"               # pid | group
    device: str = "none"
    rc: list = field(default_factory=list)       # exit codes of the runs
    alive: bool = True                # the signal found the run still running
    hung: bool = False
    wrong: str = ""                   # a documented outcome that did not happen
    left: dict = field(default_factory=dict)     # category -> what was left
    signal: str = ""                  # final-write: int | term | kill
    tracebacks: int = 0               # tracebacks printed, whatever exception they end in
    lost: int = 0                     # repetitions missing from the (resumed) dataset
    duplicated: int = 0               # repetitions in it twice
    note: str = ""                    # what the run said (its one line), or how it ended


def _abtlab(*args) -> list[str]:
    return [sys.executable, "-m", "abtlab", *args]


def _env(tmpdir: Path) -> dict:
    return {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT)}


def _command(kind: str, work: Path, trial: Trial, seed: int) -> list[str]:
    out = str(_out(kind, work, trial))
    if kind.startswith("sweep"):
        spec = work / f"{kind}-{trial.index}.toml"
        devices = json.dumps(list(dict.fromkeys(["none", trial.device])))
        spec.write_text(SWEEP_SPEC.format(seed=seed, devices=devices))
        return _abtlab("sweep", str(spec), "--out", out, "--quiet")
    guest = ["--machine", "guest"] if kind.startswith("guest") else []
    # final-write: the run kinds' command (its dataset: 2 x 64 threads' op records)
    return _abtlab("run", "iozone", *guest, "--threads", "64", "--file-size", "128k", "--record", "32k",
                   "--policy", "ext4", "--freq", "emulated:3.3", "--device", trial.device,
                   "--reps", "2", "--warmup", "0", "--seed", str(seed), "--out", out, "--quiet")


def _wait(p: subprocess.Popen, trial: Trial) -> str:
    """Let p exit (SIGKILL its session if it hangs); return its stderr."""
    try:
        err = p.communicate(timeout=EXIT_TIMEOUT)[1]
    except subprocess.TimeoutExpired:
        trial.hung = True
        os.killpg(p.pid, signal.SIGKILL)
        err = p.communicate()[1]
    trial.rc.append(p.returncode)
    return err or ""


def _traceback(err: str) -> str:
    """The last line of a traceback in err, whatever exception it ends in (a
    KeyboardInterrupt in the interpreter's start-up included)."""
    lines = err.strip().splitlines()
    if "Traceback" not in err and "Fatal Python error" not in err:
        return ""
    where = next((ln for ln in lines if ln.startswith("Exception ignored")), "")
    return f"traceback: {lines[-1][:200]} {where[:200]}".strip()


def _signal(p: subprocess.Popen, trial: Trial, signum: int) -> None:
    time.sleep(trial.delay)
    trial.alive = p.poll() is None
    try:
        if trial.target == "group":
            os.killpg(p.pid, signum)
        else:
            os.kill(p.pid, signum)
    except ProcessLookupError:
        trial.alive = False


def cleanup(tmpdir: Path) -> subprocess.CompletedProcess:
    """`abtlab cleanup`, looking also in the trials' temporary directory."""
    return subprocess.run(_abtlab("cleanup", "--dir", str(tmpdir)), env=_env(tmpdir),
                          capture_output=True, text=True, timeout=300)


def signal_trial(kind: str, trial: Trial, work: Path, tmpdir: Path, seed: int) -> None:
    """Start the command, signal it after trial.delay, let it exit (cleanup after SIGKILL)."""
    signum = SIGNALS[kind.split("-")[1]]
    p = subprocess.Popen(_command(kind, work, trial, seed), env=_env(tmpdir), cwd=work,
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _signal(p, trial, signum)
    err = _wait(p, trial)
    trial.wrong = _traceback(err)
    trial.tracebacks += faults_paths.tracebacks(err)
    if trial.rc[-1] == 2:           # abtlab's own error: the run was refused or failed
        trial.wrong = trial.wrong or "error: " + err.strip().splitlines()[-1][:200]
    if signum == signal.SIGKILL:
        time.sleep(0.2)          # orphaned children see their parent gone
        cp = cleanup(tmpdir)
        if cp.returncode != 0:
            trial.wrong = f"cleanup rc {cp.returncode}: {cp.stdout.strip()[-300:]}"


def _out(kind: str, work: Path, trial: Trial) -> Path:
    return work / f"{kind}-{trial.index}.nc"


def _watch_write(p: subprocess.Popen, out: Path) -> float | None:
    """Wait until p's temporary dataset file is beside out; when it appeared
    (time.monotonic()), or None if p ended first."""
    from abtlab.data.store import temp_path
    tmp = temp_path(out, p.pid)
    while p.poll() is None:
        if tmp.exists():
            return time.monotonic()
        time.sleep(0.001)
    return None


def _write_duration(p: subprocess.Popen, out: Path) -> float:
    """Seconds from p's temporary dataset file appearing to out in its place (0 when the
    write was not seen)."""
    start = _watch_write(p, out)
    if start is None:
        return 0.0
    while p.poll() is None and not out.exists():
        time.sleep(0.001)
    return time.monotonic() - start


def final_write_trial(trial: Trial, work: Path, tmpdir: Path, seed: int, rng) -> None:
    """Signal the run while it writes its dataset (see the module doc); after SIGKILL,
    `abtlab cleanup` (even trials); then `--resume` (odd trials) must finish it."""
    from abtlab.data.store import temp_path
    trial.signal = str(rng.choice(sorted(SIGNALS)))
    signum, cmd, out = SIGNALS[trial.signal], _command("final-write", work, trial, seed), \
        _out("final-write", work, trial)
    p = subprocess.Popen(cmd, env=_env(tmpdir), cwd=work, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if _watch_write(p, out) is None:
        trial.alive = False
        trial.wrong = "the run ended before its final write: " + _wait(p, trial)[-200:]
        return
    _signal(p, trial, signum)
    # landed in the write: its file is still there (a teardown takes ms to remove it)
    trial.alive = trial.alive and temp_path(out, p.pid).exists()
    err = _wait(p, trial)
    trial.wrong = _traceback(err)
    trial.tracebacks += faults_paths.tracebacks(err)
    ok = (0, -signum) if signum == signal.SIGKILL else (0, 128 + signum)
    if trial.rc[-1] not in ok:
        trial.wrong = trial.wrong or f"exit {trial.rc[-1]}: {err.strip()[-200:]}"
    if signum == signal.SIGKILL and trial.index % 2 == 0:
        cp = cleanup(tmpdir)
        if cp.returncode != 0:
            trial.wrong = trial.wrong or f"cleanup rc {cp.returncode}: {cp.stdout.strip()[-300:]}"
    if trial.index % 2 and (failed := _resumed(cmd, out, tmpdir, work)):
        trial.wrong = failed


def _resumed(cmd: list[str], out: Path, tmpdir: Path, work: Path) -> str:
    """Run cmd again with --resume: what is wrong with its outcome, or ''."""
    cp = subprocess.run(cmd + ["--resume"], env=_env(tmpdir), cwd=work, capture_output=True,
                        text=True, timeout=EXIT_TIMEOUT)
    if cp.returncode != 0:
        return f"--resume exited {cp.returncode}: {cp.stderr.strip()[-200:]}"
    from abtlab.data.store import load
    ds = load(out)
    ids = ds["run_id"].values.ravel()
    if ds.sizes["rep"] != 2 or (ids < 0).any() or len(set(ids)) != ids.size:
        return f"--resume: {ds.sizes['rep']} repetitions, run ids {sorted(ids.tolist())}"
    return ""


def concurrent_trial(trial: Trial, work: Path, tmpdir: Path, seed: int, rng) -> None:
    """Two runs at once: the same --out (one is refused), or two outputs with waiting
    (both finish, one after the other) or with --no-wait (one is refused at once)."""
    mode = str(rng.choice(["same out", "wait", "no-wait"]))
    trial.target = mode
    cmds = []
    for n in range(2):
        t = Trial(trial.kind, trial.index * 2 + n, device=trial.device)
        cmd = _command("run", work, t if mode != "same out" else trial, seed)
        cmds.append(cmd + (["--no-wait"] if mode == "no-wait" else []))
    procs = []
    for cmd in cmds:
        procs.append(subprocess.Popen(cmd, env=_env(tmpdir), cwd=work, start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True))
        time.sleep(trial.delay)
    errs = [_wait(p, trial) for p in procs]
    trial.wrong = _concurrent_wrong(mode, sorted(trial.rc), errs) or next(
        filter(None, map(_traceback, errs)), "")


def _concurrent_wrong(mode: str, rcs: list[int], errs: list[str]) -> str:
    text = "\n".join(errs)
    if mode == "wait":
        if rcs != [0, 0]:
            return f"wait: exit codes {rcs}"
        return "" if "waiting for the real run" in text else "wait: no waiting message"
    if rcs != [0, 2]:
        return f"{mode}: exit codes {rcs}"
    said = ("is writing it", "finished abtlab dataset") if mode == "same out" \
        else ("another real run holds this machine",)
    return "" if any(s in text for s in said) else f"{mode}: refused without saying why"


def _draw(kind: str, index: int, seed: int, duration: float) -> tuple[Trial, object]:
    rng = np.random.default_rng([seed, KINDS.index(kind), index])
    trial = Trial(kind, index, device=str(rng.choice(DEVICES)),
                  target=str(rng.choice(["pid", "group"])))
    late = 0.5 if kind == "concurrent" else 1.2 * duration   # the second run's start, or the signal
    trial.delay = float(rng.uniform(0, late))
    return trial, rng


def run_trial(kind: str, index: int, seed: int, duration: float, work: Path, tmpdir: Path) -> Trial:
    """One trial of kind; leaves the machine as it found it (cleaning up what it left)."""
    trial, rng = _draw(kind, index, seed, duration)
    before = snapshot(tmpdir, work)
    if kind in faults_paths.KINDS:
        _paths_trial(kind, trial, work, tmpdir, rng, duration)
    elif kind == "concurrent":
        concurrent_trial(trial, work, tmpdir, seed + index, rng)
    elif kind == "final-write":
        final_write_trial(trial, work, tmpdir, seed + index, rng)
    else:
        signal_trial(kind, trial, work, tmpdir, seed + index)
    trial.left = left_since(before, tmpdir, work)
    if trial.left:
        cleanup(tmpdir)
    for p in work.iterdir():          # outputs of this trial; the next starts afresh
        subprocess.run(["rm", "-rf", str(p)], check=False)
    return trial


def _paths_trial(kind, trial, work, tmpdir, rng, duration) -> None:
    env = _env(tmpdir)
    if kind == "disk-full":
        faults_paths.disk_full_trial(trial, work, env, rng)
    elif kind == "final-twice":
        faults_paths.final_twice_trial(trial, work, env, rng, duration)
    elif kind == "early":
        faults_paths.early_trial(trial, work, env, rng)
    else:
        faults_paths.device_out_trial(trial, work, env, rng)


def calibrate(kind: str, seed: int, work: Path, tmpdir: Path) -> tuple[float, Trial]:
    """Run kind's command undisturbed: its duration (final-write: its dataset write's),
    and what a normal exit left."""
    trial = Trial(kind, -1, device="hdd7200")
    if kind in faults_paths.KINDS:      # the final write's duration; the others draw their own
        took = faults_paths.write_duration(work, _env(tmpdir)) if kind == "final-twice" else 0.0
        return took, trial
    before = snapshot(tmpdir, work)
    t0 = time.monotonic()
    if kind == "concurrent":
        cmd = _command("run", work, trial, seed)
    else:
        cmd = _command(kind, work, trial, seed)
    p = subprocess.Popen(cmd, env=_env(tmpdir), cwd=work, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if kind == "final-write":
        duration = _write_duration(p, _out(kind, work, trial))
    trial.wrong = _traceback(_wait(p, trial))
    if kind != "final-write":
        duration = time.monotonic() - t0
    trial.left = left_since(before, tmpdir, work)
    if trial.rc != [0]:
        trial.wrong = trial.wrong or f"an undisturbed run exited {trial.rc[0]}"
    for f in work.iterdir():
        subprocess.run(["rm", "-rf", str(f)], check=False)
    return duration, trial


# -- the table -------------------------------------------------------------------------
CATEGORIES = ("loop", "mount", "tracefs", "throttle", "process", "temp", "out temp", "lock",
              "cleanup finds")


def table(trials: list[dict]) -> str:
    """Per kind: trials, how many the signal found running, exit codes, trials with
    leftovers (and per category), hung runs, other wrong outcomes."""
    head = ["kind", "trials", "signalled", "exit codes", "left", *CATEGORIES, "hung",
            "in finalizer", "tracebacks", "lost", "twice", "wrong"]
    rows = [head]
    for kind in KINDS:
        ts = [t for t in trials if t["kind"] == kind and t["index"] >= 0]
        if not ts:
            continue
        codes: dict[int, int] = {}
        for t in ts:
            for rc in t["rc"]:
                codes[rc] = codes.get(rc, 0) + 1
        rows.append([kind, len(ts), sum(t["alive"] for t in ts),
                     " ".join(f"{rc}:{n}" for rc, n in sorted(codes.items())),
                     sum(bool(t["left"]) for t in ts),
                     *(sum(c in t["left"] for t in ts) for c in CATEGORIES),
                     sum(t["hung"] for t in ts), sum(map(_in_finalizer, ts)),
                     *(sum(t.get(k, 0) for t in ts) for k in ("tracebacks", "lost", "duplicated")),
                     sum(bool(t["wrong"]) and not _in_finalizer(t) for t in ts)])
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(str(v).rjust(w) for v, w in zip(r, widths)) for r in rows)


def _in_finalizer(t: dict) -> bool:
    """The signal landed in a library's __del__ or weakref callback, which swallowed its
    Terminated ("Exception ignored in ..."), and the run still ended by that signal."""
    return "Exception ignored" in t["wrong"] and all(rc in (130, 143) for rc in t["rc"])


def details(trials: list[dict]) -> str:
    lines = []
    for t in trials:
        if t["left"] or t["wrong"] or t["hung"]:
            how = f"{t['signal']} to {t['target']}" if t.get("signal") else t["target"]
            lines.append(f"{t['kind']} #{t['index']} ({how}, {t['device']}, "
                         f"{t['delay']:.2f} s, rc {t['rc']}): {t['wrong']} {t['left']}")
    return "\n".join(lines)


def run_kinds(kinds, trials: int, seed: int, deadline: float, start=0, say=print) -> list[Trial]:
    """Calibrate every kind, then run trial i of each kind in turn (so a budget cuts all
    kinds alike) until all are done or the deadline (time.monotonic()) passes."""
    with tempfile.TemporaryDirectory(prefix="faults-") as base:
        work, tmpdir = Path(base, "work"), Path(base, "tmp")
        work.mkdir()
        tmpdir.mkdir()
        done, durations = [], {}
        for kind in kinds:
            durations[kind], first = calibrate(kind, seed, work, tmpdir)
            bad = f"; {first.wrong} {first.left}" if first.wrong or first.left else ", left nothing"
            say(f"{kind}: an undisturbed run took {durations[kind]:.1f} s{bad}")
            done.append(first)
        for i in range(start, start + trials):
            if time.monotonic() > deadline:
                say(f"budget spent after {i - start} of {trials} trials per kind")
                break
            for kind in kinds:
                done.append(run_trial(kind, i, seed, durations[kind], work, tmpdir))
        return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="comma-separated, of: " + " ".join(KINDS))
    ap.add_argument("--trials", type=int, default=100, help="trials per kind (default 100)")
    ap.add_argument("--start", type=int, default=0, help="index of the first trial (default 0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=None, help="seconds; no new trial after it")
    ap.add_argument("--results", help="append the trials to this JSON file")
    ap.add_argument("--table", help="print the table of a --results file and exit")
    a = ap.parse_args(argv)
    if a.table:
        trials = json.loads(Path(a.table).read_text())
        print(table(trials))
        print(details(trials))
        return 0
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    if bad := [k for k in kinds if k not in KINDS]:
        raise ConfigError("--kinds", ",".join(bad), " | ".join(KINDS))
    if a.trials < 1 or a.start < 0:
        raise ConfigError("--trials" if a.trials < 1 else "--start",
                          a.trials if a.trials < 1 else a.start, "an integer >= 1 (--start: >= 0)")
    if os.geteuid() != 0:
        raise ConfigError("user", os.geteuid(), "root (loop devices, mounts, tracefs)")
    subprocess.run(["make", "-s", "-C", str(ROOT / "backends")], check=True)
    deadline = time.monotonic() + (a.budget if a.budget is not None else float("inf"))
    trials = [asdict(t) for t in run_kinds(kinds, a.trials, a.seed, deadline, a.start)]
    if a.results:
        path = Path(a.results)
        old = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(old + trials, indent=1))
    print(table(trials))
    print(details(trials))
    return 0 if not any(t["left"] or t["wrong"] or t["hung"] for t in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
