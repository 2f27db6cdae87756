"""delayJC vs ext4: throughput of many threads doing create/write/fsync/close/unlink
(backends/fsyncers/abt-fsyncers) on one scratch loop ext4, the policies interleaved
rep by rep so drift hits all alike. Prints median throughputs and ratios to ext4.

    .venv/bin/python -m benchmarks.delayjc [--threads 64] [--files 4] [--size 128k]
        [--reps 5] [--device none|hdd7200] [--flush both] [--policies "ext4;delayjc:window=16ms,max_resets=64;delayjc:adaptive"]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from abtlab.policies import delayjc
from abtlab import policies, trace
from abtlab.machines.programs import parse_result
from abtlab.machines.host import scratch_on_device

PROG = Path(__file__).resolve().parents[1] / "backends" / "fsyncers" / "abt-fsyncers"
DEFAULT = "ext4;delayjc:window=16ms,max_resets=64;delayjc:adaptive"


def run_once(pol, flush, mnt, args, stats):
    env = dict(os.environ)
    if pol.kind == "delayjc":
        env.update(delayjc.preload_env(pol, stats), ABT_DELAYJC_FLUSH=flush)
    cmd = [str(PROG), "--dir", str(mnt), "--threads", str(args.threads),
           "--files", str(args.files), "--size", args.size]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=True).stdout
    kv = parse_result(out)
    if int(kv["errors"]):
        raise RuntimeError(f"{pol.label}: {kv['errors']} sync errors")
    mean_members = None
    if pol.kind == "delayjc":
        mean_members = delayjc.summary(delayjc.load_batches(stats))["mean_members"]
        recs = trace.read(stats, kind=trace.Kind.BATCHES)
        windowed = np.mean(recs["tid"][recs["op"] == trace.Op.BATCH] > 0)  # BATCH.tid = window us
        mean_members = (mean_members, float(windowed))
    return int(kv["bytes"]) / (int(kv["elapsed_ns"]) / 1e9), mean_members


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--size", default="128k")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--policies", default=DEFAULT)
    ap.add_argument("--device", default="none", help="device profile (abtlab.system.device)")
    ap.add_argument("--flush", choices=("syncfs", "fsync", "both"), default="both",
                    help="how a delayJC batch is flushed (ABT_DELAYJC_FLUSH)")
    args = ap.parse_args(argv)
    pols = policies.parse_list(args.policies)
    if any(p.kind not in ("ext4", "delayjc") for p in pols):
        ap.error("--policies: only ext4 and delayjc specs run on the same filesystem here")
    subprocess.run(["make", "-s", "-C", str(PROG.parents[1])], check=True)
    flushes = ("syncfs", "fsync") if args.flush == "both" else (args.flush,)
    cases = [(p, f) for p in pols for f in (flushes if p.kind == "delayjc" else ("-",))]
    tput = {_name(*c): [] for c in cases}
    members = {_name(*c): [] for c in cases}
    with tempfile.TemporaryDirectory() as tmp, \
            scratch_on_device(args.device, 512, True, "", tmp) as (fs, _dev):
        for rep in range(args.reps):
            for pol, flush in (cases if rep % 2 == 0 else cases[::-1]):
                t, m = run_once(pol, flush, fs.mountpoint, args, Path(tmp) / "stats.bin")
                tput[_name(pol, flush)].append(t)
                if m is not None:
                    members[_name(pol, flush)].append(m)
    base = statistics.median(tput[_name(*cases[0])])
    print(f"threads={args.threads} files/thread={args.files} size={args.size} reps={args.reps} "
          f"device={args.device} (scratch loop ext4 data=ordered, real runs)")
    for c in cases:
        name = _name(*c)
        med = statistics.median(tput[name])
        mm = ""
        if members[name]:
            mm = (f" mean_members={statistics.median(m for m, _ in members[name]):.1f}"
                  f" windowed_batches={statistics.median(w for _, w in members[name]):.2f}")
        print(f"{name:62s} median {med / 2**20:8.2f} MiB/s  ratio {med / base:5.2f}{mm}")


def _name(pol, flush):
    return pol.label if flush == "-" else f"{pol.label} flush={flush}"


if __name__ == "__main__":
    main()
