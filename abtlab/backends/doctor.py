"""`abtlab doctor`: what can run on this machine, and why not.

Each check only looks (files, PATH, permissions); nothing is mounted or changed.
`report()` returns checks and facts; `render()` turns them into text for the CLI.
"""
from __future__ import annotations

import glob
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import about
from ..system import cpufreq, device, tracefs
from ..system.scratchfs import loop_devices

__all__ = ["Check", "report", "render"]

BACKENDS = about.BACKENDS


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
TOOLS = (("iozone-tool", "iozone", "ABTLAB_IOZONE", "build IOzone 3.4xx from iozone.org; see the README"),
         ("mdtest", "mdtest", "ABTLAB_MDTEST", "build IOR from github.com/hpc/ior; see the README"),
         ("fio", "fio", "ABTLAB_FIO", "Debian: fio"))


def _tool(backend, exe, env, how):
    """Where a real tool's backend finds it (-o exe=, $env, PATH), or why not."""
    from .toolrun import find_tool
    from ..errors import ConfigError, UnavailableError
    try:
        path = find_tool(exe, env)
    except (ConfigError, UnavailableError) as exc:
        return Check(f"{exe} (backend {backend})", False, f"{exc} ({how})")
    return Check(f"{exe} (backend {backend})", True, str(path))


def _throttle():
    kind, why = device.throttle_backend()
    return Check("block throttling", kind is not None, why)


def _rapl():
    zones = sorted(glob.glob("/sys/class/powercap/intel-rapl*"))
    return Check("RAPL energy", bool(zones),
                 f"{len(zones)} powercap zones" if zones else
                 "no /sys/class/powercap/intel-rapl*: energy comes from a power model")


def _backends():
    if not BACKENDS.is_dir():
        return Check("C backends", False, f"no backends directory at {BACKENDS}")
    want = [Path(s).with_suffix("") for s in glob.glob(str(BACKENDS / "*/abt-*.c"))]
    want += [Path(s).with_suffix(".so") for s in glob.glob(str(BACKENDS / "*/lib*.c"))]
    missing = sorted(p.name for p in want if not p.exists())
    if not want:
        return Check("C backends", False, f"no sources under {BACKENDS}")
    return Check("C backends", not missing,
                 f"{len(want)} built" if not missing else
                 f"not built: {missing} (run make -C backends)")


def _facts():
    import psutil
    from ..system.facts import collect
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
        _backends(),
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
