"""Cost of recording: a 4 KiB buffered-write fio job bare, under libabtrace, under strace.

    .venv/bin/python -m benchmarks.tracer [--size 128m] [--reps 5] [--dir DIR]

Runs are interleaved (bare, libabtrace, strace, bare, ...) so drift hits all
alike; each line gives the median over --reps of the fio process's wall time,
of fio's own job runtime (JSON, ms) and of the CPU time (user + sys) of fio and
its job processes, and the overhead of each against bare fio. The
target for libabtrace is < 2 %. strace (`-f -T -o FILE`) is skipped with a reason
when it is not installed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from abtlab.trace.recorder import library_path


def fio_cmd(directory, size, out_json):
    return ["fio", "--name=w4k", f"--directory={directory}", "--rw=write", "--bs=4k",
            f"--size={size}", "--ioengine=psync", "--unlink=1", "--disk_util=0",
            "--output-format=json", f"--output={out_json}"]


def one(mode, directory, size, lib):
    out = os.path.join(directory, f"fio.{mode}.json")
    cmd, env = fio_cmd(directory, size, out), dict(os.environ)
    if mode == "libabtrace":
        env.update(LD_PRELOAD=str(lib), ABT_TRACE_DIR=directory)
    elif mode == "strace":
        cmd = ["strace", "-f", "-T", "-o", os.path.join(directory, "strace.out")] + cmd
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    _, status, ru = os.wait4(proc.pid, 0)   # CPU time of fio and its jobs: less noisy than wall
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{mode}: fio exited with {proc.returncode}")
    cpu = ru.ru_utime + ru.ru_stime
    with open(out) as f:
        job_ms = json.load(f)["jobs"][0]["job_runtime"]
    for name in os.listdir(directory):                      # traces and logs of this run
        os.remove(os.path.join(directory, name))
    return wall, job_ms / 1e3, cpu


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="128m")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where fio writes (default: a temporary directory)")
    a = ap.parse_args(argv)
    if shutil.which("fio") is None:
        print("fio not installed: nothing to measure (make installs it)")
        return 1
    modes = ["bare", "libabtrace"]
    if shutil.which("strace"):
        modes.append("strace")
    else:
        print("strace column skipped: strace not installed (apt-get install strace)")
    lib = library_path()
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="abtlab-tracer.", dir=a.dir) as d:
        for _ in range(a.reps):
            for m in modes:
                res[m].append(one(m, d, a.size, lib))
    med = {m: [statistics.median(r[i] for r in res[m]) for i in range(3)] for m in modes}
    base = med["bare"]
    print(f"fio 4 KiB buffered writes, {a.size} per run, median of {a.reps} interleaved runs")
    print(f"{'mode':12s}" + "".join(f" {h:>9s} {'overhead':>9s}" for h in ("wall s", "fio job s", "CPU s")))
    for m in modes:
        cells = "".join(f" {v:9.3f} {100 * (v / b - 1):8.1f}%" for v, b in zip(med[m], base))
        print(f"{m:12s}{cells}")
    over = [100 * (v / b - 1) for v, b in zip(med["libabtrace"], base)]
    print(f"libabtrace overhead: wall {over[0]:.1f}%, fio job {over[1]:.1f}%, CPU {over[2]:.1f}% "
          f"(target < 2%); run-to-run spread of bare wall time: "
          f"{min(r[0] for r in res['bare']):.3f}..{max(r[0] for r in res['bare']):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
