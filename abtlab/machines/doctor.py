"""`abtlab doctor`: what can run on this machine, and why not.

Each check only looks (files, PATH, permissions, `--version`); nothing is mounted,
built, fetched or changed. `report()` returns checks and facts; `render()` turns them
into text for the CLI.
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from .. import about
from ..errors import ConfigError, UnavailableError
from ..system import cpufreq, device, tracefs
from ..system.facts import collect
from ..system.scratchfs import loop_devices
from . import guest
from .guest import ICOUNT_SMP_MAJOR
from .tool_runner import find_tool

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


# the real tools abtlab drives: (backend, executable, env var, how to get it)
TOOLS = (("iozone-tool", "iozone", "ABTLAB_IOZONE", "build IOzone 3.4xx from iozone.org; see docs/guide/tools.md"),
         ("mdtest", "mdtest", "ABTLAB_MDTEST", "build IOR from github.com/hpc/ior; see docs/guide/tools.md"),
         ("fio", "fio", "ABTLAB_FIO", "Debian: fio"))
# how a tool says its version without running a workload (mdtest has no such option)
VERSIONS = {"iozone": (("-v",), r"Version \$Revision: ([\d.]+) \$"), "fio": (("--version",), r"fio-([\w.]+)")}


def _tool_version(exe, path) -> str:
    if exe not in VERSIONS:
        return ""
    args, pattern = VERSIONS[exe]
    try:
        out = subprocess.run([str(path), *args], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(pattern, out)
    return m.group(1) if m else ""


def _tool(backend, exe, env, how):
    """Where a real tool's backend finds it (-o exe=, $env, PATH) and its version, or why not."""
    try:
        path = find_tool(exe, env)
    except (ConfigError, UnavailableError) as exc:
        return Check(f"{exe} (backend {backend})", False, f"{exc} ({how})")
    version = _tool_version(exe, path)
    return Check(f"{exe} (backend {backend})", True, f"{path} ({version})" if version else str(path))


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
        return Check("C programs", False, f"no native directory at {NATIVE}")
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


# What a first guest build costs, measured on the 2-core VM this is developed on (load
# 4-6, November 2026): the trees stay in the cache, so it is paid once per machine.
FIRST_BUILD_61 = ("linux-source-6.1 (a 138 MB Debian package) unpacked into a 1.6 GB tree, "
                  "~25 CPU-minutes (13 min on 2 cores)")
FIRST_BUILD_342 = "a 0.6 GB tree beside the 0.5 GB source, ~40 CPU-minutes (20 min at -j2)"
FIRST_QEMU = "~90 MB"
QEMU = "qemu-system-x86_64"


def _cache(var, default) -> Path:
    """A build script's cache folder: its variable, else its default (native/kernel/*.sh)."""
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
    """The qemu native/kernel/qemu.sh would pick (the system's if 8+, else the cached
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


def _kernel_key(kernel_dir: Path) -> str:
    """The cache folder build-kernel.sh builds the 6.1 guest in: the series, the disk
    model null_blk includes, config and build.env hashed in its order."""
    h = hashlib.sha256()
    for name in ("delayjc.patch", "legacy.patch", "nullblk-disk.patch", "../include/abt_disk.h",
                 "guest.config", "build.env"):
        h.update((kernel_dir / name).read_bytes())
    return h.hexdigest()[:16]


def _kernel():
    kdir, cache = NATIVE / "kernel", _cache("ABTLAB_KERNEL_CACHE", "kernel")
    try:
        image = cache / _kernel_key(kdir) / "bzImage"
    except OSError as exc:
        return Check("guest kernel 6.1", False, f"native/kernel is incomplete: {exc}")
    if image.is_file():
        return Check("guest kernel 6.1", True, f"cached {image} ({image.stat().st_size / 1e6:.1f} MB)")
    need = "" if os.geteuid() == 0 or Path("/usr/src/linux-source-6.1.tar.xz").is_file() else \
        " (as root: it installs linux-source-6.1)"
    return Check("guest kernel 6.1", False, f"not built: the first guest run builds it in "
                 f"{cache}{need}: {FIRST_BUILD_61}")


def _initramfs():
    image = NATIVE / "kernel" / "out" / "initramfs.cpio.gz"
    if image.is_file():
        return Check("guest initramfs", True, f"built {image} ({image.stat().st_size / 1e6:.1f} MB)")
    return Check("guest initramfs", False, f"not built: the first guest run builds it in {image.parent} "
                 "(busybox, the workloads linked statically, fio when installed: ~1 min, ~40 MB)")


def _k342():
    """The paper's kernel: a cached build, or its source (build-kernel-3.4.2.sh --check)."""
    script = NATIVE / "kernel" / "build-kernel-3.4.2.sh"
    src = Path(os.environ.get("ABTLAB_K342_SRC") or about.SYSTEM_CACHE / "linux-3.4.2")
    try:
        proc = subprocess.run([str(script), "--check"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("guest kernel 3.4.2", False, f"{script}: {exc}")
    if proc.returncode != 0:
        return Check("guest kernel 3.4.2", False, f"no source at {src}: set ABTLAB_K342_SRC or "
                     "ABTLAB_K342_GIT (docs/journal/kernel-3.4.2.md); runs with kernel=3.4.2 are refused")
    if proc.stdout.strip():
        return Check("guest kernel 3.4.2", True, f"cached {proc.stdout.split()[-1]}")
    where = os.environ.get("ABTLAB_K342_GIT") if not (src / "Makefile").is_file() else src
    return Check("guest kernel 3.4.2", False, f"not built: the first kernel=3.4.2 run builds it "
                 f"from {where}: {FIRST_BUILD_342}")


def guest_checks() -> list[Check]:
    """The qemu guest machine (abtlab.machines.guest): can it boot here, with which qemu,
    and what is built already or costs a first build."""
    ok, why = guest.available()
    checks = [Check("guest machine", ok, why or "x86_64 Linux guests under qemu TCG (no KVM)")]
    if not ok:
        return checks
    return checks + [_qemu(), _kernel(), _initramfs(), _k342()]


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


def report() -> list[Check]:
    """Every check, then the machine facts."""
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
        *(_tool(*t) for t in TOOLS),
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
