"""Run a system command; failures become RunError with the command and its stderr."""
from __future__ import annotations

import subprocess

from ..errors import RunError


def sh(*args, check=True, timeout=120) -> str:
    """Run args (no shell); return stdout stripped; raise RunError when it fails."""
    try:
        proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RunError(f"{' '.join(map(str, args))}: {exc}") from exc
    if check and proc.returncode != 0:
        raise RunError(f"{' '.join(map(str, args))} failed ({proc.returncode}): "
                       f"{proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip()


def write(path, text) -> None:
    """Write a sysfs/tracefs/cgroup file in one write() call, as the kernel expects."""
    with open(path, "w") as f:
        f.write(str(text))


def read(path) -> str:
    with open(path) as f:
        return f.read().strip()
