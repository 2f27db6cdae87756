"""abtlab's own workloads against the real IOzone and mdtest, interleaved on fresh filesystems.

    python -m benchmarks.agreement [--part iozone|mdtest|layout|all] [--reps 8] [--json out.json]

Each repetition runs every configuration once with abtlab's program and once with the
real tool, back to back (which goes first alternates by repetition), each on a fresh
scratch ext4 of the same geometry (4 KiB blocks, 32 MiB journal, the default image size
of the workload) after the same `mkdir data; sync` preparation, with the same parameters:
  IOzone: abt-iozone (--start=poll, IOzone's start) vs `iozone -i 0 -t N -s 128k -r 32k
          -+n` in each of IOzone's modes (MODES: its default, -x, -x -T, -e -x -T), N = 64
          and 256, ext4 and nojc; IOzone's "Children see throughput" against abt-iozone's
          eq. (3) of the same definition (throughput_stonewall with stonewalling,
          throughput without, throughput_fsync with -e). abt-iozone runs threads; against
          IOzone's forked children the table says what a process start costs.
  mdtest: abt-metarates --processes --write-bytes 4096 vs `mdtest -F -C -n F -u -w 4096 -y`
          under mpirun, 4 x 16 and 16 x 4; fcr_aggregate (files / first open to last close)
          vs mdtest's File creation rate (files / phase time between barriers).
Prints the medians, ranges, commits in the timed window (and over the tool's whole
process) and the ratio abtlab / tool of the means with a 95% CI (abtlab.stats.ratio_ci,
Fieller, paired by repetition); for mdtest also its files over its tracefs window, the
definition of abtlab's rate. Needs root and both tools (`abtlab doctor`); run it under
the machine's lock. `--from-json FILE` prints the tables of a saved run again.
`--part layout` looks for the cause of the mdtest gap: abt-metarates, mdtest -u and
mdtest in one directory (abt-metarates' layout), order rotated, with each run's journal
blocks, commit phases and CPU time, rates relative to mdtest -u.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile

import numpy as np

from abtlab import backends
from abtlab.backends.base import RunContext
from abtlab.stats import format_ratio, ratio_ci
from abtlab.system import cleanup
from abtlab.system.runlock import MachineLock

IOZONE = [dict(threads=t, policy=p, file_size=128 * 1024, record_size=32 * 1024)
          for t in (64, 256) for p in ("ext4", "nojc")]
MDTEST = [dict(threads=n, files=f, policy="ext4") for n, f in ((4, 16), (16, 4))]
# IOzone's modes: (label, iozone-tool options, the variable both sides report)
MODES = [("default (processes, stonewall)", {}, "throughput_stonewall"),
         ("-x", {"stonewall": "false"}, "throughput"),
         ("-x -T", {"stonewall": "false", "threads": "true"}, "throughput"),
         ("-e -x -T", {"fsync": "true", "stonewall": "false", "threads": "true"}, "throughput_fsync")]
PARTS = {"iozone": ("iozone", "iozone-tool", "throughput", IOZONE, {"start": "poll"}, {}),
         "mdtest": ("metarates", "mdtest", "fcr_aggregate", MDTEST,
                    {"processes": True, "write_bytes": 4096}, {"write_bytes": 4096})}


def window_rate(cfg, scalars):
    """mdtest's files over its tracefs window (first file create to last fsync): the
    definition of abtlab's fcr_aggregate, without mdtest's barriers and MPI start-up."""
    return cfg["threads"] * cfg["files"] / scalars["elapsed"]


def _point(be, cfg):
    point = {**be.factors, **cfg, "device": "none", "freq_ghz": None}
    return be.validate_point({k: point[k] for k in be.factors})


def run_once(name, cfg, options, rep):
    """One run of one backend on a fresh scratch filesystem: (value dict, attrs)."""
    be = backends.get(name)
    opts = be.validate_options(dict(options))
    with tempfile.TemporaryDirectory(prefix="abtlab-agree-") as tmp:
        res = be.run_point(_point(be, cfg), RunContext(workdir=tmp, rep=rep, quiet=True,
                                                       options=opts))
    return res.scalars, res.attrs


def _configs(threads: str):
    try:
        ns = [int(t) for t in str(threads).split(",")]
    except ValueError:
        raise SystemExit(f"--threads: got {threads!r}; accepted: comma-separated integers") from None
    return [dict(c, threads=n) for n in ns for c in IOZONE if c["threads"] == IOZONE[0]["threads"]]


def measure(part, reps, log=print, tool_opt=None, var=None, configs=None):
    """{config label: {"abtlab": [...], "tool": [...], "commits_*": [...]}} for a part;
    tool_opt/var/configs override the part's (IOzone's modes)."""
    own, tool, var0, configs0, own_opt, tool_opt0 = PARTS[part]
    var, configs = var or var0, configs or configs0
    tool_opt = tool_opt0 if tool_opt is None else tool_opt
    for name in (own, tool):
        if not (av := backends.get(name).available()):
            raise SystemExit(f"{name} is not available here: {av.reason}")
    keys = ("abtlab", "tool", "commits_abtlab", "commits_tool", "process_commits_tool",
            "tool_window")
    rows = {_label(c): {k: [] for k in keys} for c in configs}
    for rep in range(reps):
        for cfg in configs:
            sides = [("abtlab", own, own_opt), ("tool", tool, tool_opt)]
            for side, name, opts in sides if rep % 2 == 0 else sides[::-1]:
                scalars, _ = run_once(name, cfg, opts, rep)
                row = rows[_label(cfg)]
                row[side].append(scalars[var])
                row[f"commits_{side}"].append(scalars.get("commits", np.nan))
                if side == "tool":   # /proc/fs/jbd2 over the tool's whole process
                    row["process_commits_tool"].append(scalars.get("jbd2_info_commits", np.nan))
                    if part == "mdtest":
                        row["tool_window"].append(window_rate(cfg, scalars))
            log(f"  rep {rep + 1}/{reps} {_label(cfg)}: abtlab {row['abtlab'][-1]:.4g}, "
                f"tool {row['tool'][-1]:.4g}", flush=True)
    return {"var": var, "own": own, "tool": tool, "rows": rows}


LAYOUT = [("abt-metarates", "metarates", {"processes": True, "write_bytes": 4096}),
          ("mdtest -u", "mdtest", {"write_bytes": 4096, "unique_dirs": 1}),
          ("mdtest, one dir", "mdtest", {"write_bytes": 4096, "unique_dirs": 0})]


# a commit's phases (jbd2 tracepoints): start to locking, waiting for running handles
# (locking to flushing), writing ordered data (flushing to logging), the log (to end)
PHASES = {"to_lock_ms": ("start", "locking"), "handles_ms": ("locking", "flushing"),
          "data_ms": ("flushing", "logging"), "log_ms": ("logging", "end")}


def run_full(name, cfg, options, rep):
    """As run_once, with the commits table (blocks per commit)."""
    be = backends.get(name)
    opts = be.validate_options(dict(options))
    with tempfile.TemporaryDirectory(prefix="abtlab-agree-") as tmp:
        return be.run_point(_point(be, cfg), RunContext(workdir=tmp, rep=rep, quiet=True,
                                                        options=opts))


def measure_layout(reps, log=print):
    """abt-metarates (one directory) vs mdtest -u (a directory per rank) vs mdtest in one
    directory: rate, mean fsync, commits and journal blocks per commit, order rotated."""
    rows = {f"{_label(c)}|{side}": {k: [] for k in ("rate", "mean_fsync", "commits", "blocks", "commit_ms", "cpu_s", *PHASES)}
            for c in MDTEST for side, _, _ in LAYOUT}
    for rep in range(reps):
        for cfg in MDTEST:
            order = LAYOUT[rep % 3:] + LAYOUT[:rep % 3]
            for side, name, opts in order:
                t0 = os.times()
                res = run_full(name, cfg, opts, rep)
                t1 = os.times()   # CPU time of the program's processes (and mkfs, mount)
                row = rows[f"{_label(cfg)}|{side}"]
                row["cpu_s"].append(t1.children_user + t1.children_system
                                    - t0.children_user - t0.children_system)
                blocks = np.asarray(res.commits.get("blocks", []), float)
                row["rate"].append(res.scalars["fcr_aggregate"])
                row["mean_fsync"].append(res.scalars["mean_fsync"])
                row["commits"].append(res.scalars["commits"])
                row["blocks"].append(float(blocks[blocks >= 0].sum()))
                c = res.commits
                ok = np.asarray(c["start"]) >= 0
                dur = (np.asarray(c["end"]) - np.asarray(c["start"]))[ok] * 1e-6
                row["commit_ms"].append(float(dur.mean()) if dur.size else np.nan)
                for k, (a, b) in PHASES.items():
                    d = (np.asarray(c[b]) - np.asarray(c[a]))[(np.asarray(c[a]) >= 0)
                                                             & (np.asarray(c[b]) >= 0)] * 1e-6
                    row[k].append(float(d.mean()) if d.size else np.nan)
            log(f"  rep {rep + 1}/{reps} {_label(cfg)}", flush=True)
    return rows


def layout_table(rows) -> str:
    lines = [f"{'config, program':34s} {'fcr_aggregate':>30s} {'mean_fsync ms':>26s} "
             f"{'commits':>8s} {'jbd2 blocks':>12s} {'commit ms':>9s} {'phases ms':>23s} {'cpu s':>6s}  rate ratio / mdtest -u [95% CI]"]
    for key, row in rows.items():
        label, side = key.split("|")
        ref = rows[f"{label}|mdtest -u"]["rate"]
        r, lo, hi = ratio_ci(row["rate"], ref, paired=True)
        ms = np.asarray(row["mean_fsync"]) * 1e3
        lines.append(f"{label + ', ' + side:34s} {_range(row['rate']):>30s} {_range(ms):>26s} "
                     f"{np.median(row['commits']):8.0f} {np.median(row['blocks']):12.0f} "
                     f"{np.nanmedian(row.get('commit_ms', [np.nan])):9.2f} "
                     f"{'/'.join(f'{np.nanmedian(row[k]):.2f}' for k in PHASES):>23s} "
                     f"{np.nanmedian(row.get('cpu_s', [np.nan])):6.2f}  "
                     f"{format_ratio(r, lo, hi)}")
    return "\n".join(lines)


def _label(cfg):
    if "files" in cfg:
        return f"{cfg['threads']}x{cfg['files']} {cfg['policy']}"
    return f"{cfg['threads']} threads {cfg['policy']}"


def _range(x):
    x = np.asarray(x, float)
    return f"{np.median(x):10.4g} [{x.min():.4g}-{x.max():.4g}]"


def table(result) -> str:
    var, lines = result["var"], []
    lines.append(f"{result['own']} vs {result['tool']}: {var}, median [min-max]; commits: median "
                 f"in the timed window, abtlab/tool (tool's whole process); ratio abtlab/tool "
                 f"of means, 95% CI (paired Fieller)")
    lines.append(f"{'config':18s} {'abtlab':>30s} {'tool':>30s} {'commits':>11s}  ratio [95% CI]")
    for label, row in result["rows"].items():
        r, lo, hi = ratio_ci(row["abtlab"], row["tool"], paired=True)
        inside = "" if lo <= 1 <= hi else "  (CI excludes 1)"
        commits = (f"{np.nanmedian(row['commits_abtlab']):.0f}/{np.nanmedian(row['commits_tool']):.0f}"
                   f" ({np.nanmedian(row['process_commits_tool']):.0f})")
        lines.append(f"{label:18s} {_range(row['abtlab']):>30s} {_range(row['tool']):>30s} "
                     f"{commits:>11s}  {format_ratio(r, lo, hi)}{inside}")
        if row["tool_window"]:
            r, lo, hi = ratio_ci(row["abtlab"], row["tool_window"], paired=True)
            lines.append(f"{'  tool, files/window':18s} {'':>30s} {_range(row['tool_window']):>30s} "
                         f"{'':>11s}  {format_ratio(r, lo, hi)}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("iozone", "mdtest", "layout", "all"), default="all")
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--mode", choices=("all", *(m[0] for m in MODES)), default="all",
                    help="IOzone's mode (--part iozone): default all")
    ap.add_argument("--threads", default="64,256", help="IOzone's -t values, comma-separated")
    ap.add_argument("--json", help="write every measured value here")
    ap.add_argument("--from-json", help="print the tables of a --json file, measure nothing")
    a = ap.parse_args(argv)
    if a.from_json:
        with open(a.from_json) as f:
            print("\n\n".join(table(r) for r in json.load(f).values()))
        return 0
    if a.reps < 2:
        ap.error("--reps: at least 2 (a CI needs two values per side)")
    if a.part == "layout":
        with cleanup.installed(), MachineLock("python -m benchmarks.agreement --part layout"):
            rows = measure_layout(a.reps)
        print(layout_table(rows))
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"layout": rows}, f, indent=1)
        return 0
    parts = ("iozone", "mdtest") if a.part == "all" else (a.part,)
    results = {}
    with cleanup.installed(), MachineLock("python -m benchmarks.agreement"):
        for part in parts:
            if part != "iozone":
                results[part] = measure(part, a.reps)
                continue
            for label, tool_opt, var in MODES if a.mode == "all" else \
                    [m for m in MODES if m[0] == a.mode]:
                print(f"IOzone mode {label}", flush=True)
                results[f"iozone {label}"] = measure(part, a.reps, tool_opt=tool_opt, var=var,
                                                     configs=_configs(a.threads))
    for key in results:
        print(f"{key}\n" + table(results[key]) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
