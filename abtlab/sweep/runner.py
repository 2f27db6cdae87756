"""`abtlab.run` / `abtlab run`: turn user-facing options into factor levels and sweep."""
from __future__ import annotations

from ..backends import get as get_backend
from ..errors import ConfigError
from ..factors.levels import check_real_freq, parse_freq
from ..factors.typed import PARSERS
from . import loop as sweep
from .plan import split_settings

__all__ = ["build_levels", "run"]


def _freq_axis(be, freq):
    """A simulator's frequencies are simulated whatever the prefix; a real backend's must
    say emulated:, real: or native."""
    if be.simulated:
        axis = parse_freq(freq if freq is not None else "2.0", default_mode="simulated")
        axis.mode = "simulated"
        return axis
    axis = parse_freq(freq if freq is not None else "native")
    if axis.mode == "simulated":
        raise ConfigError("freq", freq, "emulated:... | real:... | native for a real backend")
    check_real_freq(axis, freq)
    return axis


def build_levels(backend, freq=None, **factors):
    """Return (levels, options) for a backend from user values (strings or lists)."""
    be = get_backend(backend) if isinstance(backend, str) else backend
    levels, options = {}, {}
    for name, default in be.factors.items():
        if name == "freq_ghz":
            axis = _freq_axis(be, freq)
            levels[name] = axis.levels
            options["freq_mode"] = axis.mode
            continue
        value = factors.pop(name, None)
        parse = {**PARSERS, **be.factor_parsers}.get(name)
        if value is None:
            levels[name] = [default]
        elif parse is not None:
            levels[name] = parse(value)
        else:
            levels[name] = be.parse_factor(name, value)
    for key in factors:
        if key != "freq_mode" and not be.accepts_option(key):
            raise ConfigError(key, factors[key], f"a factor ({', '.join(be.factors)}) or option "
                              f"({be.option_names()}) of backend {be.name}")
    options.update(factors)
    if options.get("freq_mode") == "virtual":
        be.check_virtual_freq(levels)
    return levels, options


# abtlab.run's keywords that are the sweep's settings (abtlab.sweep.plan), not factors
RUN_SETTINGS = ("reps", "seed", "resume", "quiet", "warmup", "command", "scheduler", "workers",
                "order", "force", "wait", "dataset", "keep_going")


def run(backend, out=None, freq=None, **kw):
    """Run backend over every combination of the given factor lists.

    Example: abtlab.run("iozone", threads="16,64", policy="ext4,nojc",
                        freq="emulated:1.6,3.3", device="none", reps=5, out="r.nc")
    Keywords in RUN_SETTINGS are the sweep's (reps=3, seed=0, order="random", warmup=0,
    resume, force, quiet, command, scheduler, workers=2, wait=True, dataset=True,
    keep_going: abtlab.sweep.loop.run); the backend's factor names take levels; the
    rest (fsync, direct, processes, workload, ...) are backend options.
    force: replace what is at `out`; wait=False: fail at once if another real run holds
    the machine; keep_going: a failed run is left missing and the sweep goes on.
    dataset=False: the written dataset may come back as its RunArrays
    (abtlab.data.arrays), without importing xarray.
    """
    settings, factors = split_settings(kw, RUN_SETTINGS)
    be = get_backend(backend) if isinstance(backend, str) else backend
    levels, options = build_levels(be, freq=freq, **factors)
    freq_mode = options.pop("freq_mode", None)
    return sweep.run(be.name if isinstance(backend, str) else be, levels, out=out,
                     options=options, freq_mode=freq_mode, **settings)
