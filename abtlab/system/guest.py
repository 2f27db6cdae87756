"""A qemu guest running Linux 6.1 with the delayjc jbd2 patch (backends/kernel).

The host kernel has no loadable modules, so the kernel side of delayJC runs in a guest:
`ensure_built()` builds the kernel (cached per patch+config hash) and the initramfs with
`make -C backends/kernel`; `boot()` starts qemu under TCG (software emulation: /dev/kvm
is not usable on the machines this is built on) with a fresh ext4 disk (/dev/vda),
optionally throttled by qemu's `throttling.iops-total`, and an output disk (/dev/vdb)
onto which the guest's /init writes a tar of its results. qemu is killed on every exit
path (abtlab.system.cleanup), and a run whose console shows a kernel BUG or WARNING
(CONFIG_DEBUG_ATOMIC_SLEEP reports sleeping in atomic context) fails.
"""
from __future__ import annotations

import gzip
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
from . import cleanup

__all__ = ["KERNEL_LABEL", "KERNEL_DIR", "GuestRun", "GuestResult", "available",
           "ensure_built", "boot", "parse_info", "run_cpio"]

KERNEL_LABEL = "guest linux 6.1 + delayjc (TCG)"
KERNEL_DIR = Path(__file__).resolve().parents[2] / "backends" / "kernel"
QEMU = "qemu-system-x86_64"
_BAD_CONSOLE = ("BUG:", "WARNING:", "Kernel panic", "Oops")
_OUT_MB = 64


@dataclass
class GuestRun:
    """One measurement point inside the guest. argv[0] is a program in the initramfs
    (/abt/abt-iozone ...); env is added to the workload's environment only."""
    argv: list
    window_us: int = 0
    max_resets: int = 0
    env: dict = field(default_factory=dict)
    mount_options: str = ""


@dataclass
class GuestResult:
    rc: int                 # workload exit status inside the guest
    stdout: str
    stderr: str
    info_before: dict       # parse_info of /proc/fs/jbd2/vda-8/info before the workload
    info_after: dict
    files: dict             # name -> bytes of everything the guest wrote to /out
    console: str
    wall_s: float           # qemu start to exit, seconds of host time


def available() -> tuple[bool, str]:
    """(ok, reason): can this machine build and boot the guest?"""
    if os.uname().machine != "x86_64":
        return False, "the guest is x86_64 and runs under qemu TCG on x86_64 hosts only"
    if not (KERNEL_DIR / "Makefile").exists():
        return False, f"{KERNEL_DIR} is missing"
    if os.geteuid() != 0 and not shutil.which(QEMU):
        return False, f"{QEMU} not found and not root to install qemu-system-x86"
    return True, ""


def ensure_built(timeout: float = 1800) -> tuple[Path, Path]:
    """(bzImage, initramfs) built by `make -C backends/kernel`, installing the Debian
    packages they need; UnavailableError with the reason when that is impossible."""
    try:
        proc = subprocess.run(["make", "-s", "-C", str(KERNEL_DIR)], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise RunError(f"guest build took over {timeout:.0f} s") from exc
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        if "Error 3" in msg:  # the build scripts' exit 3: Debian packages unavailable
            raise UnavailableError(f"guest build: {msg}")
        raise RunError(f"make -C {KERNEL_DIR} failed: {msg}")
    if not shutil.which(QEMU):
        _debs("qemu-system-x86")
    return (KERNEL_DIR / "out" / "bzImage").resolve(), KERNEL_DIR / "out" / "initramfs.cpio.gz"


def _debs(*pkgs):
    proc = subprocess.run([str(KERNEL_DIR / "debs.sh"), *pkgs], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        raise UnavailableError(f"guest: {proc.stderr.strip()}")


def parse_info(text: str) -> dict:
    """Counters of /proc/fs/jbd2/<dev>/info: transactions, requested, and (patched
    kernel) delayjc_windows, delayjc_resets."""
    lines = text.splitlines()
    try:
        first = lines[0].split()
        out = {"transactions": int(first[0]), "requested": int(first[2].strip("("))}
    except (IndexError, ValueError) as exc:
        raise RunError(f"unreadable jbd2 info: {text[:200]!r}") from exc
    for line in lines[1:2]:
        parts = line.split()
        if len(parts) >= 6 and parts[1:3] == ["delayjc", "windows,"]:
            out["delayjc_windows"], out["delayjc_resets"] = int(parts[0]), int(parts[3])
    return out


def _run_env(run: GuestRun) -> str:
    """/abt/run.env: shell settings and the workload as a function, every word quoted."""
    env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted(run.env.items()))
    argv = " ".join(shlex.quote(str(a)) for a in run.argv)
    return (f"WINDOW_US={int(run.window_us)}\nMAX_RESETS={int(run.max_resets)}\n"
            f"MOUNT_OPTS={shlex.quote(run.mount_options or 'defaults')}\n"
            f"run_workload() {{ env {env} {argv}; }}\n")


def run_cpio(files: dict) -> bytes:
    """A gzip'd newc cpio holding `files` (path -> bytes, mode 0644, under /abt):
    appended to the base initramfs, the kernel unpacks it over it."""
    buf = io.BytesIO()
    entries = [("abt", None)] + [(f"abt/{n}", d) for n, d in files.items()] + [("TRAILER!!!", b"")]
    for ino, (name, data) in enumerate(entries, 1):
        mode = 0o040755 if data is None else (0o100644 if name != "TRAILER!!!" else 0)
        body = data or b""
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            ino, mode, 0, 0, 1, 0, len(body), 0, 0, 0, 0, len(nb), 0))
        buf.write(hdr.encode() + nb + b"\0" * (-(110 + len(nb)) % 4))
        buf.write(body + b"\0" * (-len(body) % 4))
    return gzip.compress(buf.getvalue())


def _images(workdir: Path, image_mb: int) -> tuple[Path, Path]:
    data, out = workdir / "guest-data.img", workdir / "guest-out.img"
    with open(data, "wb") as f:
        f.truncate(image_mb * 2 ** 20)
    # eager init: no lazy inode-table/journal zeroing competing with the workload
    proc = subprocess.run(["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0",
                           str(data)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RunError(f"mkfs.ext4 on the guest image failed: {proc.stderr.strip()}")
    with open(out, "wb") as f:
        f.truncate(_OUT_MB * 2 ** 20)
    return data, out


def qemu_argv(kernel, initrd, data, out, iops=0, smp=2, mem_mb=512) -> list:
    """The qemu command line: TCG, serial console only, two virtio disks, no reboot."""
    if iops < 0 or int(iops) != iops:
        raise ConfigError("guest iops", iops, "an integer >= 0 (0: unthrottled)")
    if not 1 <= smp <= 4:
        raise ConfigError("guest smp", smp, "1 to 4 virtual CPUs")
    thr = f",throttling.iops-total={int(iops)}" if iops else ""
    return [QEMU, "-accel", "tcg", "-smp", str(smp), "-m", str(mem_mb), "-nodefaults",
            "-display", "none", "-no-reboot", "-kernel", str(kernel), "-initrd", str(initrd),
            "-append", "console=ttyS0 panic=-1 quiet",
            "-drive", f"file={data},if=none,id=d0,format=raw,cache=unsafe{thr}",
            "-device", "virtio-blk-pci,drive=d0",
            "-drive", f"file={out},if=none,id=d1,format=raw,cache=unsafe",
            "-device", "virtio-blk-pci,drive=d1"]


def _kill(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _start_qemu(argv, console: Path, timeout: float) -> float:
    """Run qemu to its exit; killed on timeout, error or signal. Returns wall seconds."""
    t0 = time.monotonic()
    with open(console, "wb") as log:
        proc = subprocess.Popen(argv + ["-serial", f"file:{console}"], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    token = cleanup.push(lambda: _kill(proc), f"kill qemu pid {proc.pid}")
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"guest did not finish within {timeout:.0f} s (qemu killed); "
                       f"console: {console}") from None
    finally:
        cleanup.pop(token)
    if rc != 0:
        raise RunError(f"qemu exited {rc}: {console.read_text(errors='replace')[-1500:]}")
    return time.monotonic() - t0


def _read_out(out: Path) -> dict:
    try:
        with tarfile.open(out, "r:") as tar:
            return {m.name.lstrip("./"): tar.extractfile(m).read()
                    for m in tar.getmembers() if m.isfile()}
    except tarfile.TarError as exc:
        raise RunError(f"the guest wrote no results ({exc})") from exc


def boot(run: GuestRun, workdir, image_mb: int = 256, iops: int = 0, smp: int = 2,
         mem_mb: int = 512, timeout: float = 600) -> GuestResult:
    """Boot the guest for one run; raise RunError on any failure inside it."""
    kernel, base = ensure_built()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    initrd, console = workdir / "guest-initrd.gz", workdir / "guest-console.log"
    data, out = _images(workdir, image_mb)
    try:
        initrd.write_bytes(base.read_bytes() + run_cpio({"run.env": _run_env(run).encode()}))
        wall = _start_qemu(qemu_argv(kernel, initrd, data, out, iops, smp, mem_mb), console, timeout)
        files, text = _read_out(out), console.read_text(errors="replace")
    finally:
        for p in (data, out, initrd):
            p.unlink(missing_ok=True)
    return _result(files, text, wall)


def _result(files: dict, text: str, wall: float) -> GuestResult:
    status = files.get("status", b"?").decode().strip()
    if status != "ok":
        raise RunError(f"guest failed at '{status}': {files.get('dmesg', b'').decode()[-1500:]}")
    bad = [ln for ln in text.splitlines() + files.get("dmesg", b"").decode().splitlines()
           if any(b in ln for b in _BAD_CONSOLE)]
    if bad:
        raise RunError(f"guest kernel reported: {bad[0]}")
    return GuestResult(rc=int(files.get("rc", b"-1").decode().strip() or -1),
                       stdout=files.get("stdout", b"").decode(errors="replace"),
                       stderr=files.get("stderr", b"").decode(errors="replace"),
                       info_before=parse_info(files["info.before"].decode()),
                       info_after=parse_info(files["info.after"].decode()),
                       files=files, console=text, wall_s=wall)
