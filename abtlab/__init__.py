"""abtlab: measure, model, predict and fix the ABT slowdown (faster CPU, slower parallel I/O)."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load", "save", "run", "backends", "errors", "policies", "schema", "trace"]

from . import backends, errors, policies, schema, trace  # noqa: E402  (all light)


def load(path):
    """Read a run dataset written by `abtlab run`, `abtlab sweep` or `save`."""
    from .store import load as _load
    return _load(path)


def save(ds, path):
    """Write a run dataset (NetCDF, or Zarr when path ends in .zarr), atomically."""
    from .store import save as _save
    return _save(ds, path)


def run(backend, out=None, **factors):
    """Run a backend over the lists in factors; return (and optionally save) the dataset."""
    from .runner import run as _run
    return _run(backend, out=out, **factors)
