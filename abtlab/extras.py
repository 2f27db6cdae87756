"""abtlab's optional parts (pip extras) and the one way to import what they bring.

`pip install abtlab` is the core: running, sweeping, the simulator (numba compiles it;
plain Python without numba is ~7x slower), the model, statistics (statsmodels), plots and
stored runs. The extras add what only some features use:

    bayes      pymc, arviz         the Bayesian predictors (`abtlab fit`, abtlab.bayes)
    fast       nutpie              the faster NUTS sampler of those predictors
    dask       dask[distributed]   sweeps on a dask.distributed cluster (scheduler=...)
    notebooks  papermill, nbconvert, ipykernel, ipywidgets, jupyter, ...
                                   `abtlab report`, `abtlab lab`, `abtlab demo`, live widgets
    all        every one of them

`require(module, extra, feature)` imports a module of an extra where a feature first
needs it and, when it is missing, raises MissingExtra (an UnavailableError, and an
ImportError for code that falls back) naming the module, the feature and the install
command. Nothing here imports an extra's module at `import abtlab`.
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from .errors import UnavailableError

__all__ = ["EXTRAS", "Extra", "MissingExtra", "require", "check", "install_command", "missing", "status"]


@dataclass(frozen=True)
class Extra:
    name: str
    modules: tuple[str, ...]     # import names, checked by `missing` (not the pip names)
    feature: str


EXTRAS = {e.name: e for e in (
    Extra("bayes", ("pymc", "arviz"), "the Bayesian predictors (abtlab fit, abtlab.bayes)"),
    Extra("fast", ("nutpie",), "nutpie, the faster sampler of the Bayesian predictors"),
    Extra("dask", ("dask", "distributed"), "sweeps on a dask.distributed cluster (scheduler=local "
                                           "or an address)"),
    Extra("notebooks", ("papermill", "nbclient", "nbconvert", "nbformat", "ipykernel", "ipywidgets",
                        "jupyter_client"),
          "the notebooks: abtlab report, lab and demo, and the live widgets"),
)}


class MissingExtra(UnavailableError, ImportError):
    """A module of an optional part is not installed (or does not import); the message
    names it, what needs it and the pip command that installs it."""

    def __init__(self, module, extra, feature, cause=None):
        self.extra, self.feature = extra, feature
        top = module.split(".")[0]
        gone = (getattr(cause, "name", None) or "").split(".")[0]
        if isinstance(cause, ModuleNotFoundError) and gone in (top, *_modules(extra)):
            module, why = gone, "is not installed"      # e.g. dask.distributed: distributed
        else:
            why = "is not installed" if cause is None else f"does not import ({cause})"
        self.module = module
        super().__init__(f"{module} {why}; it is needed for {feature}. Install abtlab's "
                         f"{extra!r} extra: {install_command(extra)}; [all] instead of "
                         f"[{extra}] installs every optional part", name=module.split(".")[0])


def install_command(extra: str) -> str:
    """The pip command that installs an extra, as a user types it; from a checkout, the
    editable install of that checkout beside it."""
    if extra != "all" and extra not in EXTRAS:
        from .errors import ConfigError
        raise ConfigError("extra", extra, " | ".join([*EXTRAS, "all"]))
    from . import about
    cmd = f"pip install 'abtlab[{extra}]'"
    if about.INSTALLED:
        return cmd
    return f"{cmd}, or from this checkout pip install -e '{about.PACKAGE.parent}[{extra}]'"


def _modules(extra: str) -> tuple[str, ...]:
    if extra == "all":
        return tuple(m for e in EXTRAS.values() for m in e.modules)
    return EXTRAS[extra].modules


def _feature(extra: str) -> str:
    return EXTRAS[extra].feature if extra in EXTRAS else "every optional part of abtlab"


def require(module: str, extra: str, feature: str | None = None):
    """Import and return `module` (e.g. "pymc", "pytensor.tensor"), which `extra`
    installs; raise MissingExtra naming it and the install command when it does not
    import. feature: what needs it, for the message (default: what the extra is for)."""
    install_command(extra)                    # ConfigError: an extra abtlab does not have
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(module, extra, feature or _feature(extra), exc) from exc


def check(extra: str, feature: str | None = None) -> None:
    """Raise MissingExtra for the first module of `extra` that is not installed, without
    importing any: before work that would need them only half-way through (a batch of
    notebooks whose HTML comes last)."""
    gone = missing(extra)
    if gone:
        raise MissingExtra(gone[0], extra, feature or _feature(extra))


def missing(extra: str) -> list[str]:
    """The modules of `extra` that are not installed (found without importing them)."""
    install_command(extra)                    # ConfigError: an extra abtlab does not have
    out = []
    for m in _modules(extra):
        try:
            found = importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):     # a parent that does not import, a None in sys.modules
            found = False
        if not found:
            out.append(m)
    return out


def status() -> list[tuple[str, list[str], str]]:
    """(extra, its missing modules, what it is for) for every extra, for `abtlab doctor`."""
    return [(e.name, missing(e.name), e.feature) for e in EXTRAS.values()]
