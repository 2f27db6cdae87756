"""Backend registry: a name -> driver class, loaded lazily on first use.

Built-ins are listed in _BUILTIN as "module:Class"; outside packages register
through the `abtlab.backends` entry-point group. A plugin that fails to load warns,
an unknown name raises a ConfigError listing the known ones.
"""
from __future__ import annotations

import importlib
import warnings

from ..errors import ConfigError
from ..data.result import RunResult
from .base import Availability, Backend

__all__ = ["get", "names", "register", "Backend", "RunResult", "Availability"]

_BUILTIN = {
    "iozone": "abtlab.backends.iozone:IozoneBackend",
    "metarates": "abtlab.backends.metarates:MetaratesBackend",
    "sim": "abtlab.sim.backend:SimBackend",
    "dio": "abtlab.backends.dio:DioBackend",
    "locks": "abtlab.backends.locks:LocksBackend",
    "iozone-tool": "abtlab.backends.iozone_tool:IozoneToolBackend",
    "mdtest": "abtlab.backends.mdtest:MdtestBackend",
    "fio": "abtlab.backends.fio:FioBackend",
    "bps": "abtlab.bps.backend:BpsBackend",
}
_registry: dict[str, object] = {}
_entry_points_loaded = False


def register(name: str, target) -> None:
    """Register a Backend subclass (or a "module:Class" string) under name."""
    _registry[name] = target


def _load_entry_points():
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    # deferred: only a name that is not built in needs the plugins; importlib.metadata
    # (email, zipfile, ...) adds 0.06 CPU s to importing the simulator's driver
    from importlib.metadata import entry_points
    for ep in entry_points(group="abtlab.backends"):
        _registry.setdefault(ep.name, ep.value)


def names() -> list[str]:
    _load_entry_points()
    return sorted(set(_BUILTIN) | set(_registry))


def _resolve(target):
    if isinstance(target, str):
        mod, _, cls = target.partition(":")
        return getattr(importlib.import_module(mod), cls)
    return target


def get(name: str) -> Backend:
    """Return an instance of the backend called name (the entry points are read only
    for a name neither registered nor built in: a scan costs a new process 0.05-0.08 CPU s)."""
    target = _registry.get(name) or _BUILTIN.get(name)
    if target is None:
        _load_entry_points()
        target = _registry.get(name)
    if target is None:
        raise ConfigError("backend", name, ", ".join(names()))
    try:
        return _resolve(target)()
    except (ImportError, AttributeError) as exc:
        warnings.warn(f"backend {name!r} failed to load: {exc}")
        raise ConfigError("backend", name, f"a backend that loads ({exc})") from exc
