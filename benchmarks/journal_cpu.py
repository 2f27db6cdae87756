"""The journal thread's CPU per commit, measured on this host's kernel (not simulated).

    .venv/bin/python -m benchmarks.journal_cpu [--threads 256] [--file-size 128k]
        [--record 32k] [--reps 5] [--start poll|barrier] [--fsync untimed|none]

The simulator's `commit_cpu_us` is the CPU the journal thread (jbd2) spends on one commit.
Here the paper's IOzone cell runs on a fresh ext4 (a loop device, as the host backend
uses) and the jbd2 task of that filesystem is read before and after each run: its
`/proc/<pid>/schedstat` on-CPU nanoseconds (the scheduler's own sum_exec_runtime, not
sampled) and the journal's commit count (`/proc/fs/jbd2/<dev>/info`). CPU per commit is
their ratio; the commits of a run are its own (a fresh filesystem each repetition).
Needs root and loop devices. The CPU's model and clock are printed beside the result:
the paper's machine is another CPU, so this gives the order of magnitude, not its value.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from abtlab import about
from abtlab.factors.levels import parse_size
from abtlab.system.scratchfs import ScratchFS, jbd2_commits

PROG = about.NATIVE / "iozone" / "abt-iozone"


def jbd2_task(jbd2_name: str) -> int:
    """The pid of the kernel thread `jbd2/<jbd2_name>` (e.g. jbd2/loop3-8)."""
    want = f"jbd2/{jbd2_name}"
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == want:
                    return int(d.name)
            except OSError:
                continue
    raise SystemExit(f"journal_cpu: no task named {want}")


def on_cpu_ns(pid: int) -> int:
    """The task's on-CPU time so far (schedstat's first field, ns)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def run_once(a, size_mb: int) -> dict:
    with ScratchFS(size_mb=size_mb) as fs:
        pid = jbd2_task(fs.jbd2_name)
        c0, t0, w0 = jbd2_commits(fs.jbd2_name), on_cpu_ns(pid), time.monotonic_ns()
        argv = [str(PROG), "--dir", str(fs.mountpoint), "--no-record", "--threads", str(a.threads),
                "--file-size", a.file_size, "--record-size", a.record, "--start", a.start,
                "--fsync" if a.fsync == "untimed" else "--no-fsync"]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        os.sync()       # the last commit of the run's data, if the workload left one open
        time.sleep(0.05)
        c1, t1, w1 = jbd2_commits(fs.jbd2_name), on_cpu_ns(pid), time.monotonic_ns()
    return {"commits": c1 - c0, "cpu_us": (t1 - t0) / 1e3, "wall_ms": (w1 - w0) / 1e6}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--file-size", default="128k")
    ap.add_argument("--record", default="32k")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--start", choices=("poll", "barrier"), default="poll")
    ap.add_argument("--fsync", choices=("untimed", "none"), default="untimed")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("journal_cpu: needs root (loop devices, mount)", file=sys.stderr)
        return 2
    if not PROG.exists():
        subprocess.run(["make", "-s", "-C", str(about.NATIVE), "iozone/abt-iozone"], check=True)
    size_mb = max(64, 2 * a.threads * parse_size(a.file_size, "file-size") // (1 << 20) + 64)
    runs = [run_once(a, size_mb) for _ in range(a.reps)]
    commits = np.array([r["commits"] for r in runs], float)
    cpu = np.array([r["cpu_us"] for r in runs])
    per = cpu / np.maximum(commits, 1)
    print(f"jbd2 CPU per commit on {cpu_model()} ({os.cpu_count()} CPUs), "
          f"{a.threads} x {a.file_size} in {a.record} records, start={a.start}, fsync={a.fsync}, "
          f"{a.reps} runs (real, this host):")
    for r in runs:
        print(f"  commits {r['commits']:4d}  jbd2 on-CPU {r['cpu_us']:9.0f} us  "
              f"per commit {r['cpu_us'] / max(r['commits'], 1):7.0f} us  run {r['wall_ms']:7.0f} ms")
    print(f"median per commit {np.median(per):.0f} us (min {per.min():.0f}, max {per.max():.0f}); "
          f"commits a run median {np.median(commits):.0f}; load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
