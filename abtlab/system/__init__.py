"""What touches the machine: scratch filesystems, device throttling, jbd2 tracing,
cpufreq, the undo stack that puts everything back, doctor checks and facts.

Submodules are imported on use (`from abtlab.system.scratchfs import ScratchFS`), so
`import abtlab` stays fast and never probes the machine.
"""
import importlib

__all__ = ["cleanup", "scratchfs", "device", "tracefs", "cpufreq", "doctor", "facts", "leftovers"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
