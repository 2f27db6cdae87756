"""A qemu guest running Linux 6.1 with the delayjc jbd2 patch (backends/kernel), or Linux
3.4.2, the paper's own kernel (`kernel=3.4.2`: backends/kernel/build-kernel-3.4.2.sh and
k342/, docs/journal/kernel-3.4.2.md), through the same /init and the same code.

`ensure_built()` builds the kernel (cached per patch+config hash) and the initramfs with
`make -C backends/kernel`; `boot_batch()` starts qemu under TCG (software emulation:
/dev/kvm is not usable on the machines this is built on) once for a batch of points.
The guest's /init (backends/kernel/init.sh) runs each point on a fresh ext4 made inside
the guest on a fresh null_blk disk (abtlab.machines.guest_disk), with the jbd2/ext4
tracepoints on, and sends each point's results out on the second serial port as soon
as the point ends. `qemu()` is the qemu it runs with (backends/kernel/qemu.sh: 8 or
later, which the virtual clock needs for more than one vCPU). With `clock=virtual` (abtlab.machines.spec) guest time is
instruction counted (`-icount shift=S,sleep=off`) and nothing on the host enters a
point's timing. qemu and the temporary files go on every exit path
(abtlab.system.cleanup), and a run whose console shows a kernel BUG or WARNING
(CONFIG_DEBUG_ATOMIC_SLEEP reports sleeping in atomic context) fails.
"""
from __future__ import annotations

import base64
import ctypes
import functools
import gzip
import hashlib
import io
import os
import shlex
import shutil
import signal
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError, RunError, UnavailableError
from ..system import cleanup
from ..system.sleeps import comm_of
from .guest_disk import NullBlk
from .kernels import CMDLINE, KERNEL_DIR, KERNELS, GuestKernel

__all__ = ["boot_cmdline",
           "KERNEL_DIR", "GuestRun", "PointResult", "GuestResult", "available",
           "ensure_built", "boot_batch", "parse_info", "run_cpio", "qemu_argv", "point_env",
           "CMDLINE", "Qemu", "qemu", "qemu_for", "ICOUNT_SMP_MAJOR", "kernel_build", "initramfs_build"]

QEMU = "qemu-system-x86_64"
ICOUNT_SMP_MAJOR = 8      # qemu 7.2's icount guest hangs bringing up a second vCPU; 8+ boots it
_BAD_CONSOLE = ("BUG:", "WARNING:", "Kernel panic", "Oops")


@dataclass
class GuestRun:
    """One measurement point inside the guest. argv[0] is a program in the initramfs
    (/abt/abt-iozone ...); env is added to the workload's environment only; disk is the
    null_blk serving it; knobs are (path, value) written before the workload (and read
    back), knobs_reset after it."""
    argv: list
    disk: object = None                      # guest_disk.NullBlk (default: 256 MiB, no latency)
    mkfs_args: list = field(default_factory=list)
    mount_options: str = ""
    env: dict = field(default_factory=dict)
    knobs: list = field(default_factory=list)
    knobs_reset: list = field(default_factory=list)
    pre_sleep_us: int = 0                    # waited in the guest before the workload starts
    deadline_us: int = 0                     # the workload killed after this (0: never)
    trace_at_go: bool = False                # the workload turns tracing on (GO_FILE)


@dataclass
class PointResult:
    status: str             # "ok" or the step that failed (disk, mkfs, mount, knobs, trace, umount)
    rc: int                 # workload exit status inside the guest
    stdout: str
    stderr: str
    info_before: dict       # parse_info of the scratch journal's /proc/fs/jbd2/<dev>/info
    info_after: dict
    files: dict             # name -> bytes of everything the point wrote to /out/pN


@dataclass
class GuestResult:
    points: list            # PointResult per GuestRun, in order
    console: str
    dmesg: str
    wall_s: float           # qemu start to exit, seconds of host time


DEFAULT_TRACE_KB = 16384     # tracefs buffer per vCPU (KiB), from the guest's memory
GO_FILE = "/tmp/trace-go"    # the guest's tracing_on, under one name on 3.4 and 6.1 (init.sh)

def available() -> tuple[bool, str]:
    """(ok, reason): can this machine build and boot the guest?"""
    if os.uname().machine != "x86_64":
        return False, "the guest is x86_64 and runs under qemu TCG on x86_64 hosts only"
    if not (KERNEL_DIR / "Makefile").exists():
        return False, f"{KERNEL_DIR} is missing"
    if os.geteuid() != 0 and not shutil.which(QEMU):
        return False, f"{QEMU} not found and not root to install qemu-system-x86"
    return True, ""


def _build(argv, timeout: float, row=None) -> subprocess.CompletedProcess:
    """Run a build step; row: the kernel whose own build script this is."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise RunError(f"guest build took over {timeout:.0f} s") from exc
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        if row is not None and "no source" in msg:
            raise ConfigError("--machine guest:kernel", row.name, row.source)
        if "Error 3" in msg or proc.returncode == 3:  # exit 3: Debian packages unavailable
            raise UnavailableError(f"guest build: {msg}")
        raise RunError(f"{' '.join(argv)} failed: {msg}")
    return proc


def ensure_built(timeout: float = 1800, row: GuestKernel = KERNELS["6.1"]) -> tuple[Path, Path]:
    """(bzImage, initramfs) built by `make -C backends/kernel` (for 3.4.2: the initramfs,
    and the kernel by build-kernel-3.4.2.sh), installing the Debian packages they need;
    UnavailableError with the reason when that is impossible, ConfigError naming
    `guest:kernel` when the 3.4.2 source is missing."""
    initramfs = KERNEL_DIR / "out" / "initramfs.cpio.gz"
    if row.build_script is not None:
        _build(["make", "-s", "-C", str(KERNEL_DIR), "out/initramfs.cpio.gz"], timeout)
        image = Path(_build([str(row.build_script)], timeout, row).stdout.split()[-1])
    else:
        _build(["make", "-s", "-C", str(KERNEL_DIR)], timeout)
        image = (KERNEL_DIR / "out" / "bzImage").resolve()
    qemu()
    return image, initramfs


@dataclass(frozen=True)
class Qemu:
    binary: str = QEMU
    datadir: str = ""        # its firmware (-L), when it is not the system's own
    version: str = ""

    @property
    def major(self) -> int:
        head = self.version.split(".")[0]
        return int(head) if head.isdigit() else 0

    def describe(self) -> str:
        where = "system" if not self.datadir else f"Debian bookworm-backports, unpacked in {self.datadir}"
        return f"qemu {self.version} ({where})"


@functools.lru_cache(maxsize=2)
def qemu(lockstep: bool = False) -> Qemu:
    """The qemu the guest runs with (backends/kernel/qemu.sh): the system's when it is
    8 or later, else Debian backports' qemu unpacked into the cache, else the system's.
    lockstep: the same version with abtlab's lock-step clock (backends/kernel/qemu-lockstep.sh,
    built by the set-up; built here when missing and root)."""
    script = "qemu-lockstep.sh" if lockstep else "qemu.sh"
    proc = subprocess.run([str(KERNEL_DIR / script)], capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0 or not proc.stdout.split():
        if lockstep:
            raise UnavailableError(f"guest:clock=lockstep: no lock-step qemu: {proc.stderr.strip()}")
        raise UnavailableError(f"guest: no qemu: {proc.stderr.strip()}")
    binary, *data = proc.stdout.split()
    head = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    version = head.split("version ", 1)[1].split()[0] if "version " in head else ""
    return Qemu(binary, data[0] if data else "", version + (" + abtlab lock-step patch" if lockstep else ""))


def qemu_for(machine) -> Qemu:
    """The qemu a guest machine boots on: the lock-step build for clock=lockstep."""
    return qemu(lockstep=bool(getattr(machine, "lockstep", False)))


def check_smp(machine, q: Qemu) -> None:
    """Several vCPUs under the virtual clock need qemu 8+: named before a boot."""
    if machine.clock == "virtual" and machine.cpus > 1 and q.major < ICOUNT_SMP_MAJOR:
        raise ConfigError("--machine guest:cpus", machine.label,
                          f"cpus=1 with clock=virtual on {q.describe()} (its icount guest hangs "
                          f"bringing up a second vCPU): qemu {ICOUNT_SMP_MAJOR}+ (as root, "
                          f"backends/kernel/qemu.sh fetches one), or clock=host")


def kernel_build(row: GuestKernel = KERNELS["6.1"]) -> str:
    """The guest kernel's build (the hash of patch series + config it is cached under):
    virtual-time numbers repeat exactly only on one build, one initramfs and one qemu."""
    if row.build_script is not None:
        return row.build_key()
    target = (KERNEL_DIR / "out" / "bzImage").resolve()
    return target.parent.name if target.exists() else ""


def initramfs_build() -> str:
    """The first 16 hex digits of the initramfs's sha256 (and the fio overlay's, after a
    '+', when there is one): build-initramfs.sh makes the same bytes from the same
    sources anywhere, and the workloads' instructions are part of every virtual time."""
    out = []
    for name in ("initramfs.cpio.gz", "fio.cpio.gz"):
        path = KERNEL_DIR / "out" / name
        if path.exists():
            st = path.stat()
            out.append(_digest(str(path), st.st_mtime_ns, st.st_size))
    return "+".join(out)


@functools.lru_cache(maxsize=8)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    """sha256 prefix of a file, once per version of it (the overlay is 32 MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def parse_info(text: str) -> dict:
    """Counters of /proc/fs/jbd2/<dev>/info: transactions, requested (not on 3.4, which
    prints "N transaction, each up to ..."), and (patched kernel) delayjc_windows,
    delayjc_resets."""
    lines = text.splitlines()
    try:
        first = lines[0].split()
        out = {"transactions": int(first[0])}
        if first[1] == "transactions":
            out["requested"] = int(first[2].strip("("))
        elif first[1:3] != ["transaction,", "each"]:
            raise ValueError(first[1])
    except (IndexError, ValueError) as exc:
        raise RunError(f"unreadable jbd2 info: {text[:200]!r}") from exc
    for line in lines[1:2]:
        parts = line.split()
        if len(parts) >= 6 and parts[1:3] == ["delayjc", "windows,"]:
            out["delayjc_windows"], out["delayjc_resets"] = int(parts[0]), int(parts[3])
    return out


def _words(pairs) -> str:
    return " ".join(f"{k}={v}" for k, v in pairs)


def point_env(run: GuestRun, index: int) -> str:
    """/abt/pN.env: point N's settings and its workload as a function, every word quoted."""
    disk = run.disk or NullBlk(256)
    # these are split on blanks by /init's shell, unquoted: no blanks, quotes or $ in them
    for k, v in list(run.knobs) + list(run.knobs_reset) + disk.settings(index) + [
            ("mkfs", a) for a in run.mkfs_args]:
        if any(c.isspace() or c in "'\"\\$`" for c in f"{k}{v}"):
            raise ConfigError("guest knob", f"{k}={v}", "paths and values without spaces or quotes")
    env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted(run.env.items()))
    argv = " ".join(shlex.quote(str(a)) for a in run.argv)
    # a disk larger than the point's image (3.4.2's one RAM disk): mkfs gets the size
    size = f"DISK_SIZE={disk.fs_size}\n" if hasattr(disk, "fs_size") else ""
    return (f"{size}DISK_ATTRS={shlex.quote(_words(disk.settings(index)))}\n"
            f"MKFS_ARGS={shlex.quote(' '.join(str(a) for a in run.mkfs_args))}\n"
            f"MOUNT_OPTS={shlex.quote(run.mount_options or 'defaults')}\n"
            f"SLEEP_COMM={shlex.quote(comm_of(run.argv[0]) if run.argv else '')}\n"
            f"KNOBS={shlex.quote(_words(run.knobs))}\n"
            f"KNOBS_RESET={shlex.quote(_words(run.knobs_reset))}\n"
            f"{_deadline(run)}"
            f"run_workload() {{ {_pre_sleep(run)}env {env} {argv}; }}\n")


def _deadline(run: GuestRun) -> str:
    return ((f"DEADLINE_US={int(run.deadline_us)}\n" if run.deadline_us > 0 else "")
            + ("TRACE_AT_GO=1\n" if run.trace_at_go else ""))


def _pre_sleep(run: GuestRun) -> str:
    return f"usleep {int(run.pre_sleep_us)}; " if run.pre_sleep_us > 0 else ""


def batch_env(npoints: int, events, trace_kb: int) -> str:
    return (f"NPOINTS={int(npoints)}\nTRACE_KB={int(trace_kb)}\n"
            f"TRACE_EVENTS={shlex.quote(' '.join(events))}\n")


def run_cpio(files: dict, executables=()) -> bytes:
    """A gzip'd newc cpio holding `files` (path -> bytes, mode 0644, under /abt; 0755 for
    the names in `executables`): appended to the base initramfs, the kernel unpacks it
    over it."""
    buf = io.BytesIO()
    entries = [("abt", None)] + [(f"abt/{n}", d) for n, d in files.items()] + [("TRAILER!!!", b"")]
    for ino, (name, data) in enumerate(entries, 1):
        mode = 0o040755 if data is None else (0o100644 if name != "TRAILER!!!" else 0)
        if name.removeprefix("abt/") in executables:
            mode = 0o100755
        body = data or b""
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            ino, mode, 0, 0, 1, 0, len(body), 0, 0, 0, 0, len(nb), 0))
        buf.write(hdr.encode() + nb + b"\0" * (-(110 + len(nb)) % 4))
        buf.write(body + b"\0" * (-len(body) % 4))
    return gzip.compress(buf.getvalue())


def boot_cmdline(machine, runs=()) -> str:
    """The kernel command line: 3.4.2's brd RAM disk as large as the batch's largest disk."""
    mb = max((r.disk.size_mb for r in runs if r.disk is not None), default=256)
    return machine.guest_kernel.boot_cmdline(mb)


def qemu_argv(machine, kernel, initrd, console, results, q: Qemu = Qemu(),
              cmdline: str = CMDLINE) -> list:
    """The qemu command line for a guest Machine (abtlab.machines.spec): TCG, no disk on the
    host, the console on ttyS0 and the results on ttyS1 (files), no reboot; clock=virtual adds
    `-icount shift=S,sleep=off` (single-threaded TCG), clock=host multi-threaded TCG."""
    if not getattr(machine, "is_guest", False):
        raise ConfigError("--machine", getattr(machine, "label", machine), "a guest machine")
    if machine.clock == "virtual":
        accel = ["-accel", "tcg,thread=single",
                 "-icount", f"shift={machine.shift},sleep=off"]
    elif machine.clock == "lockstep":
        accel = ["-accel", "tcg,thread=single",
                 "-icount", f"shift=0,sleep=off,lockstep={machine.quantum},mhz={machine.mhz}"]
    else:
        accel = ["-accel", "tcg,thread=multi"]
    firmware = ["-L", f"{q.datadir}/qemu", "-L", f"{q.datadir}/seabios"] if q.datadir else []
    return [q.binary, *firmware, *accel, "-smp", str(machine.cpus), "-m", str(machine.mem), "-nodefaults",
            "-display", "none", "-no-reboot", "-rtc", "base=2020-01-01T00:00:00,clock=vm",
            "-kernel", str(kernel), "-initrd", str(initrd), "-append", cmdline,
            "-serial", f"file:{console}", "-serial", f"file:{results}"]


def _kill(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _die_with_parent():
    """In the qemu child before exec: be SIGKILLed when the process that started it dies,
    even by SIGKILL, when no handler of abtlab's can run (prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))   # 1 = PR_SET_PDEATHSIG


def _start_qemu(argv, console: Path, timeout: float) -> float:
    """Run qemu to its exit; killed on timeout, error or signal. Returns wall seconds.
    qemu's own messages go to console + '.qemu' (the guest's console is `console`)."""
    t0 = time.monotonic()
    qlog = console.with_name(console.name + ".qemu")
    with open(qlog, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent)
    token = cleanup.push(lambda: _kill(proc), f"kill qemu pid {proc.pid}")
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"guest did not finish within {timeout:.0f} s (qemu killed); console: "
                       f"{_tail(console)}") from None
    finally:
        cleanup.pop(token)
        text = _tail(qlog)
        qlog.unlink(missing_ok=True)
    if rc != 0:
        raise RunError(f"qemu exited {rc}: {text} {_tail(console)}")
    return time.monotonic() - t0


def _tail(path: Path, n: int = 1500) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def _read_tar(blob: bytes) -> dict | None:
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as tar:
            files = {m.name.lstrip("./"): tar.extractfile(m).read()
                     for m in tar.getmembers() if m.isfile()}
    except tarfile.TarError:
        return None
    return files or None   # zeros: a slot never written


def read_slots(results: Path, npoints: int) -> list:
    """Each slot's files from the guest's ttyS1 output (slot 0: the boot, 1..n: the
    points); None for a slot the guest never finished sending."""
    slots, cur, lines = [None] * (npoints + 1), None, []
    text = results.read_text(errors="replace") if results.exists() else ""
    for line in text.replace("\r", "").splitlines():
        if line.startswith("abtlab-slot "):
            cur, lines = int(line.split()[1]), []
        elif line.startswith("abtlab-end ") and cur is not None:
            if int(line.split()[1]) == cur and 0 <= cur <= npoints:
                slots[cur] = _read_tar(_b64("".join(lines)))
            cur = None
        elif cur is not None:
            lines.append(line.strip())
    return slots


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        return b""


def _text(files, name) -> str:
    return files.get(name, b"").decode(errors="replace")


def _point(files) -> PointResult:
    if files is None:
        return PointResult("not run (the guest stopped before this point)", -1, "", "", {}, {}, {})
    info = {k: parse_info(_text(files, f"info.{k}")) if f"info.{k}" in files else {}
            for k in ("before", "after")}
    rc = _text(files, "rc").strip()
    return PointResult(_text(files, "status").strip() or "?", int(rc) if rc.lstrip("-").isdigit() else -1,
                       _text(files, "stdout"), _text(files, "stderr"), info["before"],
                       info["after"], files)


def boot_batch(runs: list, machine, workdir, events=(), trace_kb: int = DEFAULT_TRACE_KB,
               timeout: float = 600, overlays=()) -> GuestResult:
    """Boot the guest once for a batch of points; RunError if the guest itself failed
    (a point that failed inside it has its status set and the others still ran).
    overlays: gzip'd cpio archives appended to the base initramfs (out/fio.cpio.gz)."""
    kernel, base = ensure_built(row=machine.guest_kernel)
    q = qemu_for(machine)
    check_smp(machine, q)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    initrd, console, out = (workdir / "guest-initrd.gz", workdir / "guest-console.log",
                            workdir / "guest-results.txt")
    files = {"batch.env": batch_env(len(runs), events, trace_kb).encode()}
    files.update({f"p{i}.env": point_env(r, i).encode() for i, r in enumerate(runs, 1)})
    token = cleanup.push(lambda: [p.unlink(missing_ok=True) for p in (initrd, out, console)],
                         f"remove guest files in {workdir}")
    try:
        extra = b"".join(Path(o).read_bytes() for o in overlays)
        initrd.write_bytes(base.read_bytes() + extra + run_cpio(files))
        argv = qemu_argv(machine, kernel, initrd, console, out, q, boot_cmdline(machine, runs))
        wall = _start_qemu(argv, console, timeout)
        slots, text = read_slots(out, len(runs)), console.read_text(errors="replace")
    finally:
        cleanup.pop(token)
        for p in (initrd, out, console):
            p.unlink(missing_ok=True)
    return _result(slots, text, wall)


def _result(slots: list, text: str, wall: float) -> GuestResult:
    if slots[0] is None:
        raise RunError(f"the guest wrote no results: {text[-1500:]}")
    dmesg = _text(slots[0], "dmesg")
    bad = [ln for ln in text.splitlines() + dmesg.splitlines() if any(b in ln for b in _BAD_CONSOLE)]
    if bad:
        raise RunError(f"guest kernel reported: {bad[0]}")
    return GuestResult([_point(s) for s in slots[1:]], text, dmesg, wall)
