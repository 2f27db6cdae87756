"""fio on the scratch ext4: a job file of the user's, or IOzone's initial-write pattern.

The pattern (`-o job=iozone`, the default): N jobs as threads, each writes its own
S-byte file in R-byte records with psync and fsyncs it at the end (end_fsync=1).
`-o job=PATH` runs a job file instead, with `directory=` set to the scratch filesystem.
The pattern's `-o direct=true` (O_DIRECT), `-o rw=randwrite` and `-o fsync_every=N` (an
fsync every N records) make it a disk benchmark on host and guest alike (docs/device.md).
fio reports per-job bandwidth over a runtime counted in whole milliseconds, so for the
small files of the paper `throughput` (the sum of the jobs' write bandwidths, eq. 3's
shape) is coarse; the commits and fsyncs come from tracefs as for every tool.
`--machine guest` runs the same command in the qemu guest, with the guest's fio: Debian's
/usr/bin/fio and its libraries, in backends/kernel/out/fio.cpio.gz (appended to the
guest's initramfs for fio points only) when the host had fio at the guest's build.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError
from ..data.result import RunResult
from ..machines.host import SCRATCH_OPTIONS
from ..machines.tool_runner import (CREATE, FSYNC, WRITE_BEGIN, WRITE_END, ToolInGuest, ToolJob,
                                    check_tool_options, trace_scalars)
from .base import ToolBackend
from .iozone import check_file_sizes
from .tool_output import parse_fio

__all__ = ["FioBackend", "fio_argv"]

ENV = "ABTLAB_FIO"
HOW = "Debian: fio (make setup installs it)"
GUEST_FIO = "/usr/bin/fio"
OVERLAY = "fio.cpio.gz"
NOT_IN_GUEST = ("fio is not in the guest's initramfs: install fio (apt) and rebuild "
                "(make -C backends/kernel)")
IN_GUEST = ToolInGuest(GUEST_FIO, OVERLAY, NOT_IN_GUEST)


def fio_argv(exe, point, data_dir, job="iozone", pattern=None) -> list:
    """fio's command line: the iozone-like pattern, or a job file run in data_dir.
    pattern: the checked -o direct/rw/fsync (pattern_options)."""
    common = [exe, "--output-format=json", f"--directory={data_dir}"]
    if job != "iozone":
        return [*common, str(job)]
    pat = pattern or {}
    extra = (["--direct=1"] if pat.get("direct") else []) + (
        [f"--fsync={pat['fsync_every']}"] if pat.get("fsync_every") else []) + (
        ["--randrepeat=1", "--norandommap"] if pat.get("rw", "write") != "write" else [])
    return [*common, "--name=iozone", "--thread", f"--numjobs={point['threads']}",
            f"--rw={pat.get('rw', 'write')}", f"--size={point['file_size']}",
            f"--bs={point['record_size']}", "--ioengine=psync", "--end_fsync=1",
            "--create_on_open=1", *extra]


def _starts(pattern) -> tuple:
    """Events that open the traced window: an O_DIRECT write passes no page-cache
    write_begin, so there the file's creation (create_on_open) opens it."""
    return (*WRITE_BEGIN, *CREATE) if pattern.get("direct") else WRITE_BEGIN


def pattern_options(options) -> dict:
    """-o direct, rw, fsync_every of the iozone pattern, checked: ConfigError naming the
    option."""
    out = {}
    direct = options.get("direct")
    if direct is not None:
        if not isinstance(direct, bool):
            raise ConfigError("direct", direct, "true (O_DIRECT) or false (buffered, the default)")
        out["direct"] = direct
    rw = options.get("rw")
    if rw not in (None, ""):
        if rw not in ("write", "randwrite"):
            raise ConfigError("rw", rw, "write (the default) or randwrite")
        out["rw"] = rw
    every = options.get("fsync_every")
    if every not in (None, ""):
        if isinstance(every, bool) or not str(every).isdigit():
            raise ConfigError("fsync_every", every, "a whole number N >= 0: an fsync every N "
                              "records (0, the default: only the end's)")
        out["fsync_every"] = int(every)
    return out


def _job(value):
    if value in (None, "", "iozone"):
        return "iozone"
    if not Path(str(value)).is_file():
        raise ConfigError("job", value, "iozone (the default pattern) or the path of a fio job file")
    return str(Path(str(value)).resolve())


class FioBackend(ToolBackend):
    name = "fio"
    tool, tool_env, tool_how = "fio", ENV, HOW
    tool_version = (("--version",), r"fio-([\w.]+)")
    description = ("fio on the scratch ext4: IOzone's initial-write pattern or a job file "
                   "(-o job=PATH); found on PATH, in $ABTLAB_FIO or -o exe=")
    factors = {"policy": "ext4", "freq_ghz": None, "threads": 16, "file_size": 128 * 1024,
               "record_size": 32 * 1024, "device": "none", "machine": "host"}
    options = {"job": "iozone (default) or the path of a fio job file (host only)",
               "direct": "true: the pattern's writes with O_DIRECT (time the disk, not the page cache)",
               "rw": "write (default) or randwrite: the order of each job's records",
               "fsync_every": "N: the pattern fsyncs every N records (default 0: at the end only)",
               "exe": "path of the fio executable (host only)", **SCRATCH_OPTIONS}

    def validate_options(self, options):
        options = {**options, "job": _job(options.get("job"))}
        pattern_options(options)
        return check_tool_options(options, "fio", ENV)

    def validate_point(self, point):
        self.check_policy(point, "fio", guest=True)
        check_file_sizes(point)
        return point

    def tool_job(self, point, ctx) -> ToolJob:
        job = _job(ctx.options.get("job"))
        pat = pattern_options(ctx.options)
        # the guest runs its own fio on the iozone pattern: no job file of the host's
        host_only = {} if job == "iozone" else {"job": (ctx.options["job"], (
            "iozone with --machine guest (a job file is on the host, not in the guest)"))}
        return ToolJob("fio", ENV, lambda exe, d: fio_argv(exe, point, d, job, pat),
                       point["threads"] * point["file_size"], _starts(pat), (*WRITE_END, *FSYNC),
                       exe=ctx.options.get("exe"), guest=IN_GUEST, host_only=host_only)

    def tool_result(self, run, point, ctx) -> RunResult:
        return _result(run, _job(ctx.options.get("job")))


def _result(run, job) -> RunResult:
    """fio's output and the traced window -> the point's RunResult."""
    out = parse_fio(run.stdout)
    scalars = {**run.scalars, **trace_scalars(run.commits, run.fsyncs, run.window),
               "throughput": sum(j["bytes_per_s"] for j in out["jobs"]),
               "jbd2_info_commits": run.jbd2_info_commits}
    if run.batches is not None:
        scalars["batches"] = float(len(run.batches["open"]))
    attrs = {**run.attrs, "tool": "fio", "tool_version": out["version"],
             "fio_job": job if job == "iozone" else os.path.basename(job),
             "throughput_definition": "sum of fio's per-job write bw_bytes (bytes over a "
             "runtime in whole ms, end_fsync included): eq. (3)'s shape, coarse for small files",
             "elapsed_definition": "tracefs window (first write to last write or fsync)"}
    return RunResult(scalars=scalars, commits=run.commits, batches=run.batches, attrs=attrs)
