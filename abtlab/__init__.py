"""abtlab: measure, model, predict and fix the ABT slowdown (faster CPU, slower parallel I/O)."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load", "save", "run", "sweep_spec", "backends", "errors", "policies",
           "schema", "trace", "model", "sim", "stats", "bps", "delayjc", "syscalls", "sera",
           "bayes", "widgets", "report", "plots"]

# heavier subpackages load on first use, so `import abtlab` stays fast
_LAZY = {"model", "sim", "stats", "bps", "bps_study", "delayjc", "syscalls", "sera", "bayes",
         "widgets", "report", "plots", "store", "sweep", "spec", "system", "readers", "recorder"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'abtlab' has no attribute {name!r}")

from . import backends, errors, policies, schema, trace  # noqa: E402  (all light)


def load(path):
    """Read a run dataset written by `abtlab run`, `abtlab sweep` or `save`."""
    from .store import load as _load
    return _load(path)


def save(ds, path):
    """Write a run dataset (NetCDF, or Zarr when path ends in .zarr), atomically."""
    from .store import save as _save
    return _save(ds, path)


def sweep_spec(spec, out=None, resume=False, quiet=False):
    """Run a sweep spec (TOML path or dict); see abtlab.spec."""
    from .spec import run_spec
    return run_spec(spec, out=out, resume=resume, quiet=quiet)


def run(backend, out=None, **factors):
    """Run a backend over the lists in factors; return (and optionally save) the dataset."""
    from .runner import run as _run
    return _run(backend, out=out, **factors)
