"""`abtlab doctor`: what can run on this machine, and why not.

Each check only looks (files, PATH, permissions, `--version`); nothing is mounted,
built, fetched or changed. `report()` returns checks and facts; `render()` turns them
into text for the CLI.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from .. import about
from ..system import cpufreq, device, tracefs
from ..system.facts import collect
from ..system.scratchfs import loop_devices
from . import guest
from .guest import ICOUNT_SMP_MAJOR
from .kernels import KERNELS

__all__ = ["Check", "report", "render"]

NATIVE = about.NATIVE


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    kind: str = "check"  # "check": something that can fail; "fact": what the machine is


def _root():
    return Check("root", os.geteuid() == 0,
                 "running as root" if os.geteuid() == 0 else
                 "not root: no loop devices, tracefs, throttling or cpufreq (simulator only)")


def _loop():
    return Check("loop devices", *loop_devices())


def _which(name, *tools, why=""):
    found = [shutil.which(t) for t in tools]
    ok = all(found)
    detail = ", ".join(f for f in found if f) if ok else \
        f"{', '.join(t for t, f in zip(tools, found) if not f)} not on PATH{why}"
    return Check(name, ok, detail)


def _driver(backend) -> list[Check]:
    """A driver's own check of what it needs here (a third-party tool's path and version),
    or none."""
    own = backend.doctor_check()
    return [] if own is None else [Check(own[0], own[1].ok, own[1].reason)]


def _throttle():
    kind, why = device.throttle_backend()
    return Check("block throttling", kind is not None, why)


def _rapl():
    zones = sorted(glob.glob("/sys/class/powercap/intel-rapl*"))
    return Check("RAPL energy", bool(zones),
                 f"{len(zones)} powercap zones" if zones else
                 "no /sys/class/powercap/intel-rapl*: energy comes from a power model")


def _files():
    """Where abtlab's programs, scripts and notebooks are: the checkout, or the installed
    package's copy in the cache folder (abtlab.about)."""
    if not about.INSTALLED:
        return Check("abtlab files", True, f"checkout {about.ROOT}")
    if about.ROOT == about.DATA:
        return Check("abtlab files", False, f"installed; {about.CACHE} cannot be written, so the "
                     f"guest build cannot write beside its scripts in {about.DATA} (set ABTLAB_CACHE)")
    return Check("abtlab files", True, f"installed package; its programs, build scripts, "
                 f"notebooks and examples used from {about.ROOT}")


def _left_out(missing) -> str:
    """Why the package's build left programs out: its make output (setup.py's build.log)."""
    log = NATIVE / "build.log"
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    why = [next((ln.strip() for ln in lines if m in ln), "") for m in missing]
    return "; ".join(w for w in dict.fromkeys(why) if w)


def _backends():
    if not NATIVE.is_dir():
        return Check("C programs", False, f"no C backends directory at {NATIVE}")
    want = [Path(s).with_suffix("") for s in glob.glob(str(NATIVE / "*/abt-*.c"))]
    want += [Path(s).with_suffix(".so") for s in glob.glob(str(NATIVE / "*/lib*.c"))]
    missing = sorted(p.name for p in want if not p.exists())
    if not want:
        return Check("C programs", False, f"no sources under {NATIVE}")
    if not missing:
        return Check("C programs", True, f"{len(want)} built")
    why = _left_out(missing)
    return Check("C programs", False, f"not built: {missing}" + (f": {why}" if why else "")
                 + f" (then make -C {NATIVE})")


FIRST_QEMU = "~90 MB"
QEMU = "qemu-system-x86_64"


def _cache(var, default) -> Path:
    """A build script's cache folder: its variable, else its default (backends/kernel/*.sh)."""
    return Path(os.environ.get(var) or about.SYSTEM_CACHE / default)


def _qemu_version(binary) -> tuple[int, str]:
    try:
        head = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=20).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return 0, ""
    text = head[0].removeprefix("QEMU emulator version ").split(" (")[0] if head else ""
    return (int(text.split(".")[0]) if text[:1].isdigit() else 0), text


def _qemu():
    """The qemu backends/kernel/qemu.sh would pick (the system's if 8+, else the cached
    bookworm-backports one, else the system's older one), without fetching anything."""
    cache = _cache("ABTLAB_QEMU_CACHE", "qemu")
    found = [(p, *_qemu_version(p)) for p in (shutil.which(QEMU), cache / "root/usr/bin" / QEMU)
             if p and os.access(p, os.X_OK)]
    best = next((f for f in found if f[1] >= ICOUNT_SMP_MAJOR), found[0] if found else None)
    fetch = (f"the first guest run fetches qemu {ICOUNT_SMP_MAJOR}+ from bookworm-backports "
             f"into {cache} ({FIRST_QEMU}, as root)")
    if best is None:
        return Check("qemu", False, f"no {QEMU}: {fetch}, or installs Debian's qemu-system-x86")
    path, major, text = best
    if major >= ICOUNT_SMP_MAJOR:
        return Check("qemu", True, f"QEMU {text} ({path})")
    return Check("qemu", True, f"QEMU {text or '?'} ({path}): one vCPU under clock=virtual; {fetch}")


def _kernels() -> list[Check]:
    """Each guest kernel build (the 6.1 rows share one), as its row says."""
    builds = {row.build: row for row in KERNELS.values()}
    return [Check(f"guest kernel {name}", *row.build_check()) for name, row in builds.items()]


def _initramfs():
    image = NATIVE / "kernel" / "out" / "initramfs.cpio.gz"
    if image.is_file():
        return Check("guest initramfs", True, f"built {image} ({image.stat().st_size / 1e6:.1f} MB)")
    return Check("guest initramfs", False, f"not built: the first guest run builds it in {image.parent} "
                 "(busybox, the workloads linked statically, fio when installed: ~1 min, ~40 MB)")


def guest_checks() -> list[Check]:
    """The qemu guest machine (abtlab.machines.guest): can it boot here, with which qemu,
    and what is built already or costs a first build."""
    ok, why = guest.available()
    checks = [Check("guest machine", ok, why or "x86_64 Linux guests under qemu TCG (no KVM)")]
    if not ok:
        return checks
    kernels = _kernels()
    return checks + [_qemu(), kernels[0], _initramfs(), *kernels[1:]]


def _facts():
    f = collect()
    disks = [f"{p.device} on {p.mountpoint} ({p.fstype})"
             for p in psutil.disk_partitions(all=False)
             if not p.mountpoint.startswith(("/var/tmp/abtlab-", "/tmp"))][:8]
    return [
        Check("CPU", True, f"{f['cpu_model']}: {f['cpu_logical']} logical, "
                           f"{f['cpu_physical']} physical cores", "fact"),
        Check("memory", True, f"{f['memory_bytes'] / 2**30:.1f} GiB", "fact"),
        Check("kernel", True, f["kernel"], "fact"),
        Check("disks", True, "; ".join(disks) or "none listed", "fact"),
    ]


def report(drivers=()) -> list[Check]:
    """Every check, then the machine facts; drivers: the workload drivers (Backend
    instances) whose own checks are listed (abtlab doctor passes every registered one)."""
    ok_tr, why_tr = tracefs.available()
    ok_cf, why_cf = cpufreq.available()
    checks = [
        _root(), _loop(),
        _which("mkfs.ext4", "mkfs.ext4", why=" (Debian: e2fsprogs)"),
        Check("tracefs + jbd2 events", ok_tr, why_tr),
        _throttle(),
        Check("cpufreq", ok_cf, why_cf + ("" if ok_cf else "; frequency is emulated")),
        _rapl(),
        _which("perf", "perf", why=" (Debian: linux-perf)"),
        *(c for d in drivers for c in _driver(d)),
        _which("MPI", "mpicc", "mpirun", why=" (Debian: openmpi-bin libopenmpi-dev; "
               "mdtest runs one rank without it)"),
        _files(), _backends(), *guest_checks(),
    ]
    return checks + _facts()


def render(checks: list[Check]) -> str:
    """Aligned text: checks with ok/NO, then facts."""
    width = max((len(c.name) for c in checks), default=0)
    lines = ["abtlab doctor"]
    for c in checks:
        if c.kind == "check":
            lines.append(f"  {'ok' if c.ok else 'NO':2}  {c.name:<{width}}  {c.detail}")
    facts = [c for c in checks if c.kind == "fact"]
    if facts:
        lines.append("machine")
        lines += [f"      {c.name:<{width}}  {c.detail}" for c in facts]
    return "\n".join(lines)
