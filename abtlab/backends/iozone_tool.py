"""The real IOzone's throughput-mode initial write, in IOzone's own default mode or another.

`iozone -i 0 -t N -s S -r R -+n -C -F <N files>` on the scratch ext4, by default as IOzone
runs without options: forked children (processes), the write loop timed and each
child's fsync after its clock stops, stonewalling on (the first child done stops the
others' accounting). Options: `fsync=true` times the fsync (-e), `stonewall=false` turns
stonewalling off (-x), `threads=true` runs threads (-T). IOzone prints one throughput,
"Children see throughput" (the sum of per-child S / T_write: eq. (3) by IOzone's own
clock); it is stored as the variable of that mode: throughput_fsync with -e,
throughput_stonewall with stonewalling, throughput otherwise.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..data.result import RunResult
from ..machines.host import SCRATCH_OPTIONS
from ..machines.tool_runner import (FSYNC, WRITE_BEGIN, ToolJob, check_tool_options,
                                    first_fsyncs, trace_scalars)
from .base import ToolBackend
from .iozone import check_file_sizes
from .tool_output import parse_iozone

__all__ = ["IozoneToolBackend", "iozone_argv"]

ENV = "ABTLAB_IOZONE"
HOW = "IOzone 3.4xx from iozone.org, built with `make linux-AMD64`; see docs/guide/tools.md"


def iozone_argv(exe, threads, file_size, record_size, data_dir, fsync=False,
                stonewall=True, use_threads=False) -> list:
    """IOzone's command line for one point; sizes in bytes, given to IOzone in kB.
    fsync: time each child's fsync (-e); without it IOzone stops a child's clock after
    its write loop and fsyncs the file afterwards, untimed (thread_write_test).
    stonewall=False: -x; use_threads: -T (pthreads instead of forked children)."""
    files = [f"{data_dir}/iozone.{i}" for i in range(threads)]
    return [exe, "-i", "0", "-t", threads, "-s", f"{file_size // 1024}k",
            "-r", f"{record_size // 1024}k", *(["-e"] if fsync else []),
            "-+n", *([] if stonewall else ["-x"]), *(["-T"] if use_threads else []),
            "-C", "-F", *files]


_FLAGS = {"fsync": False, "stonewall": True, "threads": False}


def _flag(options, name) -> bool:
    return str(options.get(name, _FLAGS[name])).lower() in ("true", "1")


def _mode(options) -> dict:
    """iozone_argv's fsync, stonewall and use_threads from the run options."""
    return dict(fsync=_flag(options, "fsync"), stonewall=_flag(options, "stonewall"),
                use_threads=_flag(options, "threads"))


def reported_variable(options) -> str:
    """The dataset variable IOzone's one reported throughput is, in this mode."""
    if _flag(options, "fsync"):
        return "throughput_fsync"
    return "throughput_stonewall" if _flag(options, "stonewall") else "throughput"


class IozoneToolBackend(ToolBackend):
    name = "iozone-tool"
    tool, tool_env, tool_how = "iozone", ENV, HOW
    tool_version = (("-v",), r"Version \$Revision: ([\d.]+) \$")
    description = ("the real IOzone (throughput mode, -+n, its default mode unless -o fsync=, "
                   "stonewall=, threads= say otherwise) on the scratch ext4; found on PATH, in "
                   "$ABTLAB_IOZONE or -o exe=")
    factors = {"policy": "ext4", "freq_ghz": None, "threads": 16, "file_size": 128 * 1024,
               "record_size": 32 * 1024, "device": "none"}
    options = {"fsync": "time the fsync with the writes (IOzone -e); default false, IOzone's default "
                        "report, where each child fsyncs after its clock stops (the paper's)",
               "stonewall": "IOzone's stonewalling; default true (its default), false = -x",
               "threads": "pthreads instead of forked children (IOzone -T); default false",
               "exe": "path of the iozone executable", **SCRATCH_OPTIONS}

    def validate_options(self, options):
        for name in _FLAGS:
            value = options.get(name, _FLAGS[name])
            if str(value).lower() not in ("true", "false", "1", "0"):
                raise ConfigError(name, value, "true or false")
        return check_tool_options(options, "iozone", ENV)

    def validate_point(self, point):
        self.check_policy(point, "iozone")
        for key in ("file_size", "record_size"):
            if point[key] % 1024 or point[key] < 4096:
                raise ConfigError(key, point[key], "a multiple of 1024 bytes, at least 4k (IOzone takes kB)")
        check_file_sizes(point)
        return point

    def tool_job(self, point, ctx) -> ToolJob:
        mode = _mode(ctx.options)
        # the trace runs to the files' fsyncs either way: without -e IOzone still makes them,
        # after each child's clock stops, and their commits are what stalls the late writers
        return ToolJob("iozone", ENV, lambda exe, d: iozone_argv(
                           exe, point["threads"], point["file_size"], point["record_size"], d, **mode),
                       point["threads"] * point["file_size"], WRITE_BEGIN, FSYNC,
                       event_filter=first_fsyncs, exe=ctx.options.get("exe"))

    def tool_result(self, run, point, ctx) -> RunResult:
        mode = _mode(ctx.options)
        fsync = mode["fsync"]
        out = parse_iozone(run.stdout)
        if out["threads"] != point["threads"]:
            raise ConfigError("threads", point["threads"], f"what iozone ran ({out['threads']})")
        rate = reported_variable(ctx.options)
        scalars = {**trace_scalars(run.commits, run.fsyncs, run.window),
                   rate: out["children_bytes_per_s"], "jbd2_info_commits": run.jbd2_info_commits}
        if run.batches is not None:
            scalars["batches"] = float(len(run.batches["open"]))
        attrs = {**run.attrs, "tool": "iozone", "tool_version": out["version"],
                 f"{rate}_definition": "IOzone's 'Children see throughput' (sum of per-child "
                 "kB/s x 1024): eq. (3), timed by IOzone (gettimeofday), "
                 + ("fsync timed (-e)" if fsync else "write loop timed, fsync after the clock stops")
                 + (", stonewalling on" if mode["stonewall"] else ", no stonewalling (-x)")
                 + (", threads (-T)" if mode["use_threads"] else ", forked children"),
                 "elapsed_definition": "tracefs window (first write to last fsync on the device), "
                 "not first-op-to-last-op of an abtlab trace",
                 "jbd2_info_commits_definition": "whole iozone process, start-up and exit included",
                 "fsync_calls_definition": "each file's first fsync, the timed one (IOzone fsyncs "
                 "every file again, untimed, before close)"}
        return RunResult(scalars=scalars, commits=run.commits, batches=run.batches, attrs=attrs)
