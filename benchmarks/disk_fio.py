"""fio through abt-slowdisk against the drive model's own prediction (docs/device.md).

    python -m benchmarks.disk_fio [--profiles hdd7200,hdd7200-nocache,fixed:12.67ms,ssd-sata]
                                  [--jobs seq-write,...] [--reps 3]

Each profile: abt-slowdisk mounted fresh, a sparse 16 GiB image on it attached as a loop
device with direct I/O (as abtlab's scratch file systems are), and four fio jobs on the
loop device, depth 1, O_DIRECT:
  seq-write   1 MiB writes from offset 0 (the outer zone), 256 MiB     -> MB/s
  rand-write  4 KiB writes uniformly over the first 8 GiB, 1500 of them -> IOPS
  append+fsync 4 KiB appends, an fsync after each (the FLUSH), 512     -> fsyncs/s
  flush-after-32 4 KiB writes over 8 GiB, an fsync after every 32     -> ms per fsync
The prediction replays the same kind of requests back to back through the same C model
(libabtdisk.so, abtlab.system.disk_model) on a clock of its own; the host's FUSE and loop
overhead per request is not in it. Needs root, fuse3 and fio.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile

from abtlab.system import cleanup
from abtlab.system.device import parse_profile
from abtlab.system.disk_model import DiskModel
from abtlab.system.slowdisk import SlowDisk

GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10
SPAN = 8 * GiB
JOBS = {
    "seq-write": ["--rw=write", "--bs=1M", "--size=256M"],
    "rand-write": ["--rw=randwrite", "--bs=4k", f"--size={SPAN}", "--number_ios=1500"],
    "append+fsync": ["--rw=write", "--bs=4k", "--size=2M", "--fsync=1"],
    "flush-after-32": ["--rw=randwrite", "--bs=4k", f"--size={SPAN}", "--number_ios=640",
                       "--fsync=32"],
}
UNITS = {"seq-write": "MB/s", "rand-write": "IOPS", "append+fsync": "fsync/s",
         "flush-after-32": "ms/fsync"}


def fio(dev: str, job: str) -> float:
    argv = ["fio", "--name=" + job, f"--filename={dev}", "--direct=1", "--ioengine=psync",
            "--iodepth=1", "--randrepeat=1", "--norandommap", "--output-format=json",
            *JOBS[job]]
    j = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)["jobs"][0]
    w = j["write"]
    if job == "seq-write":
        return w["bw_bytes"] / 1e6
    if job == "rand-write":
        return w["iops"]
    if job == "append+fsync":
        return j["sync"]["total_ios"] / (j["job_runtime"] / 1e3)
    return j["sync"]["lat_ns"]["mean"] / 1e6


def predict(profile: str, job: str, seed: int = 1) -> float:
    prof = parse_profile(profile)
    d, r, t = DiskModel(prof.disk, fixed_ns=prof.fixed_ns), random.Random(seed), 0
    if job == "seq-write":
        n = 256
        for k in range(n):
            t = d.write(k * MiB, MiB, t)
        return n * MiB / (t / 1e9) / 1e6
    if job == "rand-write":
        n = 1500
        for _ in range(n):
            t = d.write(r.randrange(SPAN // 4096) * 4096, 4096, t)
        return n / (t / 1e9)
    if job == "append+fsync":
        n = 512
        for k in range(n):
            t = d.flush(d.write(k * 4096, 4096, t))
        return n / (t / 1e9)
    flush_ns = []
    for _ in range(20):
        for _ in range(32):
            t = d.write(r.randrange(SPAN // 4096) * 4096, 4096, t)
        t1 = d.flush(t)
        flush_ns.append(t1 - t)
        t = t1
    return sum(flush_ns) / len(flush_ns) / 1e6


def _flush(dev: str):
    fd = os.open(dev, os.O_WRONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def measure(profile: str, jobs, reps: int) -> dict:
    out = {job: [] for job in jobs}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp, SlowDisk(profile, tmp) as disk:
        img = os.path.join(disk.mountpoint, "disk.img")
        with open(img, "wb") as f:
            f.truncate(16 * GiB)
        dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", img], check=True,
                             capture_output=True, text=True).stdout.strip()
        try:
            for _ in range(reps):
                for job in jobs:
                    out[job].append(fio(dev, job))
                    _flush(dev)   # the next job starts with a clean cache, as predicted
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
            os.unlink(img)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", default="hdd7200,hdd7200-nocache,fixed:12.67ms,ssd-sata")
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    jobs = a.jobs.split(",")
    print(f"{'profile':16s} {'job':15s} {'unit':9s} {'model':>9s} {'fio median':>11s} "
          f"{'fio min-max':>17s} {'fio/model':>9s}")
    with cleanup.installed():
        for prof in a.profiles.split(","):
            got = measure(prof, jobs, a.reps)
            for job in jobs:
                m, v = predict(prof, job), sorted(got[job])
                med = v[len(v) // 2]
                print(f"{prof:16s} {job:15s} {UNITS[job]:9s} {m:9.1f} {med:11.1f} "
                      f"{v[0]:8.1f}-{v[-1]:<8.1f} {med / m:9.2f}", flush=True)


if __name__ == "__main__":
    main()
