"""Backend `sim`: the discrete-event simulator of abtlab.sim as a sweep driver.

Runs anywhere (no root, no kernel features); every result is labelled
freq_mode="simulated". Options (ctx.options): workload (iozone | metarates), cores,
and any other abtlab.sim.SimParams field."""
from __future__ import annotations

from .base import Availability, Backend, RunResult

__all__ = ["SimBackend"]


class SimBackend(Backend):
    name = "sim"
    description = "discrete-event simulator of the ABT mechanism (threads, cores, jbd2-like journal)"
    factors = {"policy": "ext4", "freq_ghz": 3.3, "threads": 64, "file_size": 128 * 1024,
               "record_size": 32 * 1024, "files": 1, "device": "loop"}
    options = {"workload": "iozone", "cores": 4}

    def available(self) -> Availability:
        from ..sim.state import HAVE_NUMBA
        return Availability(True, "" if HAVE_NUMBA else "numba missing: the simulator runs slowly")

    def _params(self, point: dict, options: dict):
        from ..sim.params import make
        return make(**{**self.factors, **self.options, **(options or {}), **point})

    def validate_point(self, point: dict) -> dict:
        self._params(point, {})
        return point

    def run_point(self, point: dict, ctx) -> RunResult:
        from ..sim.core import run_once
        p = self._params(point, getattr(ctx, "options", {}))
        return run_once(p, int(getattr(ctx, "seed", 0)))
