"""delayJC vs ext4: throughput of many threads doing create/write/fsync/close/unlink
(backends/delayjc/abt-fsyncers) on one scratch loop ext4, the policies interleaved
rep by rep so drift hits all alike. Prints median throughputs and ratios to ext4.

    .venv/bin/python -m benchmarks.delayjc [--threads 64] [--files 4] [--size 128k]
        [--reps 5] [--policies "ext4;delayjc:window=16ms,max_resets=64;delayjc:adaptive"]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from abtlab import delayjc, policies
from abtlab.system.scratchfs import ScratchFS

PROG = Path(__file__).resolve().parents[1] / "backends" / "delayjc" / "abt-fsyncers"
DEFAULT = "ext4;delayjc:window=16ms,max_resets=64;delayjc:adaptive"


def run_once(pol, mnt, args, stats):
    env = dict(os.environ)
    if pol.kind == "delayjc":
        env.update(delayjc.preload_env(pol, stats))
    cmd = [str(PROG), "--dir", str(mnt), "--threads", str(args.threads),
           "--files", str(args.files), "--size", args.size]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=True).stdout
    kv = dict(re.findall(r"(\w+)=(\d+)", out))
    if int(kv["errors"]):
        raise RuntimeError(f"{pol.label}: {kv['errors']} sync errors")
    mean_members = None
    if pol.kind == "delayjc":
        mean_members = delayjc.summary(delayjc.load_batches(stats))["mean_members"]
    return int(kv["bytes"]) / (int(kv["elapsed_ns"]) / 1e9), mean_members


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--size", default="128k")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--policies", default=DEFAULT)
    args = ap.parse_args(argv)
    pols = policies.parse_list(args.policies)
    if any(p.kind not in ("ext4", "delayjc") for p in pols):
        ap.error("--policies: only ext4 and delayjc specs run on the same filesystem here")
    subprocess.run(["make", "-s", "-C", str(PROG.parents[1])], check=True)
    tput = {p.label: [] for p in pols}
    members = {p.label: [] for p in pols}
    with tempfile.TemporaryDirectory() as tmp, ScratchFS(size_mb=512, journal=True, workdir=tmp) as fs:
        for rep in range(args.reps):
            for pol in (pols if rep % 2 == 0 else pols[::-1]):
                t, m = run_once(pol, fs.mountpoint, args, Path(tmp) / "stats.bin")
                tput[pol.label].append(t)
                if m is not None:
                    members[pol.label].append(m)
    base = statistics.median(tput[pols[0].label])
    print(f"threads={args.threads} files/thread={args.files} size={args.size} reps={args.reps} "
          f"(scratch loop ext4 data=ordered, real runs)")
    for p in pols:
        med = statistics.median(tput[p.label])
        mm = f" mean_members={statistics.median(members[p.label]):.1f}" if members[p.label] else ""
        print(f"{p.label:48s} median {med / 2**20:8.2f} MiB/s  ratio_to_{pols[0].label} "
              f"{med / base:5.2f}{mm}")


if __name__ == "__main__":
    main()
