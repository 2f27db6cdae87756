"""abtlab: measure, model, predict and fix the ABT slowdown (faster CPU, slower parallel I/O)."""
from __future__ import annotations

from .about import __version__

__all__ = ["__version__", "load", "save", "run", "sweep_spec", "backends", "errors", "policies",
           "data", "trace", "model", "sim", "stats", "bps", "syscalls", "sera", "bayes", "present",
           "sweep", "factors", "system"]

# subpackages load on first use, so `import abtlab` stays fast: the backends' registry
# and the trace reader bring numpy (~0.2 s), which the command line loads only after
# its signal handlers are in place
_LAZY = {"model", "sim", "stats", "bps", "syscalls", "sera", "bayes", "present", "sweep", "system",
         "factors", "backends", "data", "policies", "trace"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'abtlab' has no attribute {name!r}")

from . import errors  # noqa: E402


def load(path):
    """Read a run dataset written by `abtlab run`, `abtlab sweep` or `save`."""
    from .present import accessor  # noqa: F401  (registers ds.abt)
    from .data.store import load as _load
    return _load(path)


def save(ds, path):
    """Write a run dataset (NetCDF, or Zarr when path ends in .zarr), atomically."""
    from .data.store import save as _save
    return _save(ds, path)


def sweep_spec(spec, out=None, resume=False, quiet=False):
    """Run a sweep spec (TOML path or dict); see abtlab.sweep.spec."""
    from .present import accessor  # noqa: F401  (registers ds.abt)
    from .sweep.spec import run_spec
    return run_spec(spec, out=out, resume=resume, quiet=quiet)


def run(backend, out=None, **factors):
    """Run a backend over the lists in factors; return (and optionally save) the dataset."""
    from .present import accessor  # noqa: F401  (registers ds.abt)
    from .sweep.runner import run as _run
    return _run(backend, out=out, **factors)
