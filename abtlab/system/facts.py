"""Facts about the machine for a run dataset's attrs (kernel, CPU, memory, versions)."""
from __future__ import annotations

import os
import platform

from ..about import __version__

__all__ = ["collect", "cpu_model"]


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() as a fallback)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# Cores and memory are read as psutil reads them on Linux, without importing psutil
# (0.02-0.03 CPU s of every new process that writes a dataset); psutil answers where
# /sys or /proc does not.
_CPUS = "/sys/devices/system/cpu"


def _physical_cores() -> int:
    """psutil.cpu_count(logical=False) or 0: the distinct sibling lists of the CPUs
    (core_cpus_list, else the older thread_siblings_list)."""
    try:
        cpus = [d for d in os.listdir(_CPUS) if d.startswith("cpu") and d[3:].isdigit()]
    except OSError:
        cpus = []
    for name in ("core_cpus_list", "thread_siblings_list"):
        lists = set()
        for cpu in cpus:
            try:
                with open(f"{_CPUS}/{cpu}/topology/{name}", "rb") as f:
                    lists.add(f.read().strip())
            except OSError:
                pass
        if lists:
            return len(lists)
    # deferred: psutil is optional or only for this
    import psutil
    return psutil.cpu_count(logical=False) or 0


def _memory_bytes() -> int:
    """psutil.virtual_memory().total: MemTotal of /proc/meminfo."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    # deferred: psutil is optional or only for this
    import psutil
    return int(psutil.virtual_memory().total)


def collect() -> dict:
    """Flat dict of str/int facts, ready to be dataset attrs."""
    # os.cpu_count() is what psutil.cpu_count() reads (sysconf, online CPUs)
    logical = os.cpu_count() or 0
    return {
        "kernel": platform.release(),
        "cpu": f"{cpu_model()} x {logical}",
        "cpu_model": cpu_model(),
        "cpu_logical": logical,
        "cpu_physical": _physical_cores(),
        "hostname": platform.node(),      # socket.gethostname(): uname's nodename
        "memory_bytes": _memory_bytes(),
        "python": platform.python_version(),
        "abtlab_version": __version__,
    }
