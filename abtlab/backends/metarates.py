"""Metarates file-creation-rate test (seed 000 Fig. 6) on a real scratch ext4."""
from __future__ import annotations

from .. import policies
from .base import Backend
from .realfs import SCRATCH_OPTIONS, program, real_available, run_and_measure

__all__ = ["MetaratesBackend"]


class MetaratesBackend(Backend):
    name = "metarates"
    description = ("N workers each create F files with open(O_CREAT)/fsync/close "
                   "(backends/metarates/abt-metarates)")
    factors = {"policy": "ext4", "freq_ghz": None, "threads": 4, "files": 4, "device": "none"}
    options = {"processes": "workers as processes instead of threads", **SCRATCH_OPTIONS}

    def available(self):
        return real_available("metarates", "abt-metarates")

    def validate_point(self, point):
        policies.parse(point["policy"])
        return point

    def run_point(self, point, ctx):
        exe = program("metarates", "abt-metarates")

        def argv(data_dir, dilate, tpath):
            a = [exe, "--workers", point["threads"], "--files", point["files"], "--dir", data_dir,
                 "--dilate", f"{dilate:.6f}", "--trace", tpath]
            if ctx.options.get("processes"):
                a.append("--processes")
            return a
        return run_and_measure(argv, point, ctx, point["threads"] * point["files"] * 4096,
                               "metarates")
