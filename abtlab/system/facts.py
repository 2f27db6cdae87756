"""Facts about the machine for a run dataset's attrs (kernel, CPU, memory, versions)."""
from __future__ import annotations

import os
import platform
import socket

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


def collect() -> dict:
    """Flat dict of str/int facts, ready to be dataset attrs."""
    import psutil

    logical = psutil.cpu_count(logical=True) or os.cpu_count() or 0
    physical = psutil.cpu_count(logical=False) or 0
    return {
        "kernel": platform.release(),
        "cpu": f"{cpu_model()} x {logical}",
        "cpu_model": cpu_model(),
        "cpu_logical": logical,
        "cpu_physical": physical,
        "hostname": socket.gethostname(),
        "memory_bytes": int(psutil.virtual_memory().total),
        "python": platform.python_version(),
        "abtlab_version": __version__,
    }
