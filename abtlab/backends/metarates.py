"""Metarates file-creation-rate test (seed 000 Fig. 6) on a real scratch ext4."""
from __future__ import annotations

from .. import model, policies
from .base import Backend
from .kdelayjc import mask_commit_measures, run_any
from .realfs import program, real_available

__all__ = ["MetaratesBackend"]


class MetaratesBackend(Backend):
    name = "metarates"
    description = ("N workers each create F files with open(O_CREAT)/fsync/close "
                   "(backends/metarates/abt-metarates)")
    factors = {"policy": "ext4", "freq_ghz": None, "threads": 4, "files": 4, "device": "none"}
    options = {"processes": "workers as processes instead of threads", "image_mb": "scratch image size",
               "mount_options": "extra ext4 mount options, e.g. nodelalloc or commit=1",
               "guest": "run in the qemu guest kernel (kdelayjc policies always do)",
               "guest_iops": "qemu disk throttling for the guest", "guest_smp": "guest vCPUs",
               "guest_timeout": "seconds before the guest is killed"}

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
        res = run_any(argv, point, ctx, point["threads"] * point["files"] * 4096)
        res.scalars.update(model.measures(res.ops, res.commits, "metarates"))
        mask_commit_measures(res)  # guest runs count commits without per-commit records
        if res.batches is not None:
            res.scalars["batches"] = float(len(res.batches["open"]))
        return res
