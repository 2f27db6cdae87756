"""Backend `sim`: the discrete-event simulator of abtlab.sim as a sweep driver.

Runs anywhere (no root, no kernel features); every result is labelled
freq_mode="simulated". Options (ctx.options): workload (iozone | metarates), cores,
and any other abtlab.sim.SimParams field."""
from __future__ import annotations

import platform
from dataclasses import fields

from ..errors import ConfigError
from ..factors.levels import parse_words
from ..backends.base import Availability, Backend
from ..data.result import RunResult
from .core import run_reps
from .params import SimParams, load_params, make
from .state import HAVE_NUMBA

__all__ = ["SimBackend"]


class SimBackend(Backend):
    name = "sim"
    description = "discrete-event simulator of the ABT mechanism (threads, cores, jbd2-like journal)"
    factors = {"policy": "ext4", "freq_ghz": 3.3, "threads": 64, "file_size": 128 * 1024,
               "record_size": 32 * 1024, "files": 1, "device": "loop"}
    options = {"workload": "iozone", "cores": 4, "params": None, "traces": True}
    simulated = True
    # device levels are simulator presets, checked by validate_point, not machine profiles
    factor_parsers = {"device": lambda v: parse_words(v, "device")}

    def available(self) -> Availability:
        return Availability(True, "" if HAVE_NUMBA else "numba missing: the simulator runs slowly")

    def _params(self, point: dict, options: dict):
        """Backend defaults < a params file (-o params=FILE) < options < the point."""
        opts = {k: _typed(k, v) for k, v in (options or {}).items() if k != "traces"}
        src = opts.pop("params", None)
        base = load_params(src) if src else {}
        defaults = {k: v for k, v in {**self.factors, **self.options}.items()
                    if k not in base and k not in ("params", "traces")}
        return make(params=base, **{**defaults, **opts, **point})

    def accepts_option(self, name: str) -> bool:
        return name in self.options or name in _param_fields()

    def option_names(self) -> str:
        return ", ".join(sorted(self.options)) + ", or a parameter of abtlab.sim.SimParams"

    def validate_options(self, options: dict) -> dict:
        if "traces" in options:        # op and commit tables kept (False: scalars only)
            options = {**options, "traces": _flag("traces", options["traces"])}
        return options

    def validate_point(self, point: dict) -> dict:
        self._params(point, {})
        return point

    def run_point(self, point: dict, ctx) -> RunResult:
        return self.run_group([(point, ctx)], getattr(ctx, "workdir", None))[0]

    # a point's repetitions, consecutive in a sequential sweep, share one compiled call
    group_limit = 1024

    def group_key(self, task):
        return ("sim", task.index)

    def run_group(self, runs, workdir) -> list:
        point, ctx = runs[0]
        options = dict(getattr(ctx, "options", {}))
        traces = _flag("traces", options.pop("traces", True))
        out = run_reps(self._params(point, options), [int(getattr(c, "seed", 0)) for _, c in runs])
        return out if traces else [RunResult(scalars=r.scalars, attrs=r.attrs) for r in out]

    def dataset_labels(self, attrs: dict) -> dict:
        return {"kernel": f"simulated (host {platform.release()})",
                "cpu": f"simulated, {attrs.get('sim_cores', '?')} cores"}


def _param_fields() -> set:
    return {f.name for f in fields(SimParams)} - set(SimBackend.factors) - {"freq_ghz"}


def _typed(name, value):
    """A command-line option string as the type of the SimParams field it sets."""
    default = getattr(SimParams(), name, None)
    if not isinstance(value, str) or default is None or isinstance(default, str):
        return value
    if isinstance(default, bool):
        return _flag(name, value)
    try:
        return type(default)(value)
    except ValueError:
        return value                       # make() rejects it, naming the field


def _flag(name, value) -> bool:
    words = {"true": True, "1": True, "yes": True, "on": True,
             "false": False, "0": False, "no": False, "off": False}
    if isinstance(value, str) and value.strip().lower() in words:
        return words[value.strip().lower()]
    if isinstance(value, bool):
        return value
    raise ConfigError(name, value, "true or false")
