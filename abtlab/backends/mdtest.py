"""mdtest's file-creation phase (IOR's metadata benchmark), as abt-metarates runs it.

`mpirun -np N mdtest -F -C -n F -u [-w B -y] -d <data>`: N ranks each create F files in
their own directory (-u), writing B bytes and fsyncing each (-w B -y; mdtest fsyncs only
files it wrote into, so write_bytes=0 means no fsync at all, unlike the paper's test).
Without mpirun only one rank runs. mdtest's creation rate is an aggregate (all files /
the phase time between barriers): it is `fcr_aggregate` here, not eq. (9)'s `fcr`.
"""
from __future__ import annotations

import os
import shutil

from .. import policies
from ..errors import ConfigError
from ..data.result import RunResult
from ..machines.host import SCRATCH_OPTIONS
from ..machines.tool_runner import (CREATE, FSYNC, WRITE_END, ToolJob, check_tool_options,
                                    trace_scalars)
from .base import ToolBackend
from .metarates import write_bytes
from .tool_output import parse_mdtest

__all__ = ["MdtestBackend", "mdtest_argv", "forward_flags", "unique_dirs"]

ENV = "ABTLAB_MDTEST"
HOW = "build IOR (github.com/hpc/ior) with Open MPI; see docs/guide/tools.md"


def mdtest_argv(exe, ranks, files, data_dir, nbytes, mpirun=None, unique=True) -> list:
    """mdtest's command line; under mpirun when ranks > 1 (as root it needs
    --allow-run-as-root, and --oversubscribe for more ranks than cores). unique=False
    drops -u: every rank creates its files in one shared directory, as abt-metarates."""
    argv = [exe, "-F", "-C", "-n", files, "-u", "-d", data_dir]
    if not unique:
        argv.remove("-u")
    if nbytes:
        argv[5:5] = ["-w", nbytes, "-y"]
    if mpirun is None:
        return argv
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return [mpirun, *root, "--oversubscribe", "-np", ranks, *argv]


def forward_flags(policy) -> list:
    """mpirun -x flags that pass the delayJC preload's variables on to every rank."""
    pol = policies.parse(policy)
    if not pol.needs_preload:
        return []
    names = ["LD_PRELOAD", "ABT_DELAYJC_STATS", *sorted(pol.preload_env())]
    return [a for k in names for a in ("-x", k)]


def unique_dirs(value) -> int:
    """The unique_dirs option as 0 or 1; ConfigError naming it."""
    if str(value).strip().lower() in ("1", "true", "yes"):
        return 1
    if str(value).strip().lower() in ("0", "false", "no"):
        return 0
    raise ConfigError("unique_dirs", value, "1 (mdtest -u, one directory per rank) or 0 "
                      "(one shared directory)")


class MdtestBackend(ToolBackend):
    name = "mdtest"
    tool, tool_env, tool_how = "mdtest", ENV, HOW
    description = ("mdtest -F -C -u (file creation, one directory per rank) under mpirun "
                   "on the scratch ext4; found on PATH, in $ABTLAB_MDTEST or -o exe=")
    factors = {"policy": "ext4", "freq_ghz": None, "threads": 4, "files": 4, "device": "none"}
    options = {"write_bytes": "bytes written and fsynced into each file (mdtest -w B -y); "
                              "0 = no write and no fsync; default 4096",
               "unique_dirs": "1 = one directory per rank (mdtest -u, default); 0 = all "
                              "ranks in one directory, as abt-metarates lays its files out",
               "exe": "path of the mdtest executable", **SCRATCH_OPTIONS}

    def validate_options(self, options):
        options = {**options, "write_bytes": write_bytes(options.get("write_bytes", 4096)),
                   "unique_dirs": unique_dirs(options.get("unique_dirs", 1))}
        return check_tool_options(options, "mdtest", ENV)

    def validate_point(self, point):
        self.check_policy(point, "mdtest")
        if point["threads"] > 1 and shutil.which("mpirun") is None:
            raise ConfigError("threads", point["threads"],
                              "1 without mpirun (Debian: openmpi-bin) for more ranks")
        return point

    def tool_job(self, point, ctx) -> ToolJob:
        nbytes = int(ctx.options.get("write_bytes", 4096))
        n, files = point["threads"], point["files"]
        mpirun = shutil.which("mpirun") if n > 1 else None
        fwd = forward_flags(point["policy"]) if mpirun else []

        def argv_for(exe, d):
            argv = mdtest_argv(exe, n, files, d, nbytes, mpirun,
                               bool(ctx.options.get("unique_dirs", 1)))
            return argv[:1] + fwd + argv[1:]
        ends = (*WRITE_END, *FSYNC) if nbytes else ()
        return ToolJob("mdtest", ENV, argv_for, n * files * max(4096, nbytes), CREATE, ends,
                       exe=ctx.options.get("exe"))

    def tool_result(self, run, point, ctx) -> RunResult:
        n, files = point["threads"], point["files"]
        out = parse_mdtest(run.stdout)
        if out["tasks"] != n:
            raise ConfigError("threads", n, f"what mdtest ran ({out['tasks']} tasks)")
        scalars = {**trace_scalars(run.commits, run.fsyncs, run.window),
                   "fcr_aggregate": out["create_rate_mean"],
                   "jbd2_info_commits": run.jbd2_info_commits}
        fsync_s = (run.fsyncs["exit"] - run.fsyncs["enter"]).sum() * 1e-9
        scalars["fcr_approx"] = n * files / fsync_s if fsync_s > 0 else float("nan")
        if run.batches is not None:
            scalars["batches"] = float(len(run.batches["open"]))
        attrs = {**run.attrs, "tool": "mdtest", "tool_version": out["version"],
                 "fcr_aggregate_definition": "mdtest's File creation rate: all ranks' files / "
                 "the phase time between MPI barriers (rank 0's clock)",
                 "fcr_approx_definition": "eq. (10) from tracefs fsync durations "
                 "(ext4_sync_file enter to exit)",
                 "elapsed_definition": "tracefs window (first regular-file create to last "
                 "write or fsync on the device)"}
        return RunResult(scalars=scalars, commits=run.commits, batches=run.batches, attrs=attrs)
