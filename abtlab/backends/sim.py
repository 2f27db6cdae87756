"""Backend `sim`: the discrete-event simulator of abtlab.sim as a sweep driver.

Runs anywhere (no root, no kernel features); every result is labelled
freq_mode="simulated". Options (ctx.options): workload (iozone | metarates), cores,
and any other abtlab.sim.SimParams field."""
from __future__ import annotations

from ..factors.levels import parse_words
from ..data.result import RunResult
from .base import Availability, Backend

__all__ = ["SimBackend"]


class SimBackend(Backend):
    name = "sim"
    description = "discrete-event simulator of the ABT mechanism (threads, cores, jbd2-like journal)"
    factors = {"policy": "ext4", "freq_ghz": 3.3, "threads": 64, "file_size": 128 * 1024,
               "record_size": 32 * 1024, "files": 1, "device": "loop"}
    options = {"workload": "iozone", "cores": 4, "params": None}
    simulated = True
    # device levels are simulator presets, checked by validate_point, not machine profiles
    factor_parsers = {"device": lambda v: parse_words(v, "device")}

    def available(self) -> Availability:
        from ..sim.state import HAVE_NUMBA
        return Availability(True, "" if HAVE_NUMBA else "numba missing: the simulator runs slowly")

    def _params(self, point: dict, options: dict):
        """Backend defaults < a params file (-o params=FILE) < options < the point."""
        from ..sim.params import load_params, make
        opts = {k: _typed(k, v) for k, v in (options or {}).items()}
        src = opts.pop("params", None)
        base = load_params(src) if src else {}
        defaults = {k: v for k, v in {**self.factors, **self.options}.items()
                    if k not in base and k != "params"}
        return make(params=base, **{**defaults, **opts, **point})

    def validate_point(self, point: dict) -> dict:
        self._params(point, {})
        return point

    def run_point(self, point: dict, ctx) -> RunResult:
        from ..sim.core import run_once
        p = self._params(point, getattr(ctx, "options", {}))
        return run_once(p, int(getattr(ctx, "seed", 0)))


def _typed(name, value):
    """A command-line option string as the type of the SimParams field it sets."""
    from ..sim.params import SimParams
    default = getattr(SimParams(), name, None)
    if not isinstance(value, str) or default is None or isinstance(default, str):
        return value
    if isinstance(default, bool):
        return value.strip().lower() in ("1", "true", "yes", "on")
    try:
        return type(default)(value)
    except ValueError:
        return value                       # make() rejects it, naming the field
