"""Buffered vs O_DIRECT file workloads (Petersen, University of Wisconsin-Madison, Figs. 1-4; backends/dio/abt-dio).

Workloads: 1 sequential appends + syncfs, 2 random reads of a 16 MiB file, 3 single-block
overwrite with syncfs between, 4 single-block write, syncfs, read. Where the run goes:
options.directory if given; else, where loop devices work, a fresh scratch ext4 per run
(options.scratch, default on), so syncfs flushes this run and nothing else; else the
run's work directory. The filesystem used is always recorded in the attrs.
"""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from .. import trace
from ..errors import ConfigError
from ..data.result import RunResult
from ..system import mounts
from ..system.scratchfs import ScratchFS, loop_devices
from .base import Backend
from ..machines import programs
from .locks import int_in, run_kv
from ..machines.programs import program

__all__ = ["DioBackend", "MODES", "WORKLOADS", "MIN_BLOCK", "MAX_BLOCK", "mount_of"]

MODES = ("buffered", "direct")
WORKLOADS = {1: "sequential appends + syncfs", 2: "random reads of a file",
             3: "single-block overwrite + syncfs", 4: "single-block write + syncfs + read"}
MIN_BLOCK, MAX_BLOCK = 512, 16 << 20
_FIELDS = {"--workload": "workload", "--block-size": "block_size", "--direct": "mode",
           "--dir": "directory", "--count": "count", "--file-size": "file_size"}


def mount_of(path) -> dict:
    """Filesystem type, options and source of the mount holding path (/proc/self/mountinfo)."""
    m = mounts.holding(path)
    if m is None:
        return {"filesystem": "unknown", "mount_options": "", "block_device": ""}
    return {"filesystem": m.fstype, "mount_options": f"{m.mount_options},{m.super_options}",
            "block_device": m.source}


def default_count(workload: int, block_size: int, max_bytes: int):
    """Ops per run for a grid: the paper's 256 appends (capped at max_bytes of data), 64
    overwrites; None for random reads (the program reads file_size / block_size blocks)."""
    if workload == 1:
        return max(1, min(256, max_bytes // block_size))
    return None if workload == 2 else 64


def _count(point, opts):
    """--count: the option, else default_count when the max_bytes option is given."""
    if opts.get("count"):
        return int(opts["count"])
    if opts.get("max_bytes"):
        return default_count(point["workload"], point["block_size"], int(opts["max_bytes"]))
    return None


def _data_bytes(point, opts) -> int:
    bs, w = point["block_size"], point["workload"]
    if w == 1:
        return int(_count(point, opts) or 256) * bs
    return int(opts.get("file_size") or 16 << 20) if w == 2 else bs


class DioBackend(Backend):
    name = "dio"
    description = ("one of Petersen's (University of Wisconsin-Madison) four file workloads, buffered or O_DIRECT, at one "
                   "block size (4 KiB to 16 MiB in the paper)")
    factors = {"workload": 3, "mode": "buffered", "block_size": 4096}

    def available(self):
        return programs.availability("abt-dio")

    def validate_point(self, point):
        if point.get("mode") not in MODES:
            raise ConfigError("mode", point.get("mode"), " | ".join(MODES))
        return {**point, "workload": int_in(point, "workload", 1, 4),
                "block_size": int_in(point, "block_size", MIN_BLOCK, MAX_BLOCK)}

    def run_point(self, point, ctx):
        """options: directory, scratch (bool), count (or max_bytes: default_count),
        file_size, seed, verify, trace (default True), timeout (s, default 600)."""
        point = self.validate_point(point)
        opts = ctx.options
        with contextlib.ExitStack() as stack:
            where, attrs = self._place(stack, point, ctx)
            tdir = stack.enter_context(tempfile.TemporaryDirectory(dir=ctx.workdir))
            tpath = Path(tdir) / "dio.trace"
            traced = bool(opts.get("trace", True))
            out = run_kv(self._argv(point, ctx, where, tpath if traced else None), _FIELDS,
                         {**opts, **point}, timeout=float(opts.get("timeout", 600)))
            ops = trace.read(tpath, kind=trace.Kind.OPS) if traced else None
        elapsed = int(out["elapsed_ns"]) * 1e-9
        moved = int(out["bytes_written"]) + int(out["bytes_read"])
        attrs.update({"freq_mode": "real", "dio_offset_align": int(out["dio_align"]),
                      "ops_per_run": int(out["count"]), "verified": out["verified"],
                      "traced": int(traced)})
        return RunResult(scalars={"elapsed": elapsed, "throughput": moved / elapsed,
                                  "ops_per_run": float(out["count"])},
                         ops=ops, attrs=attrs)

    def _place(self, stack, point, ctx):
        """Directory to run in and its filesystem attrs; a scratch ext4 if asked for."""
        opts = ctx.options
        if opts.get("directory") is not None:
            d = Path(opts["directory"])
            if not d.is_dir():
                raise ConfigError("directory", str(d), "an existing directory")
            return d, mount_of(d)
        if opts.get("scratch", True) and loop_devices()[0]:
            size = max(128, 2 * _data_bytes(point, opts) // 2**20 + 64)
            fs = stack.enter_context(ScratchFS(size_mb=size, journal=True, workdir=ctx.workdir))
            return Path(fs.mountpoint), fs.describe()
        return Path(ctx.workdir), mount_of(ctx.workdir)

    @staticmethod
    def _argv(point, ctx, where, tpath):
        o = ctx.options
        argv = [program("abt-dio"), "--workload", point["workload"],
                "--block-size", point["block_size"], "--dir", where,
                "--seed", int(o.get("seed", ctx.seed)) % 2**62 + 1]
        argv += ["--direct"] if point["mode"] == "direct" else []
        count = _count(point, o)
        argv += ["--count", count] if count else []
        argv += ["--file-size", o["file_size"]] if o.get("file_size") else []
        argv += ["--verify"] if o.get("verify") else []
        return argv + (["--trace", tpath] if tpath else [])


