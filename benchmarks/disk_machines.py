"""The disk's validation table: the same fio job on the host (abt-slowdisk) and in the
guests (6.1's null_blk with nullblk-disk.patch, 3.4.2's brd with k342/09): every disk is
the drive model of abt_disk.h (docs/device.md), beside the model's own prediction.

    python -m benchmarks.disk_machines [--machines 'host;guest;guest:kernel=3.4.2']
                                       [--reps 2] [--rows seq-write,...]

Each row is `abtlab run fio` (fio's IOzone pattern: N threads each write an S-byte file
in R-byte records on a fresh scratch ext4) with the options below. The writes are
O_DIRECT where the row times the disk: a buffered write costs the writer's CPU, and a
guest's CPU is virtual time (the guest writes 64 MiB into its page cache ~5x slower than
the host), so buffered throughput compares the processors, not the disks; O_DIRECT hands
each record to the disk at once, as a fio disk benchmark does. The append row stays
buffered: its fsync is the disk's cost. Rows:

  seq-write        1 x 64m / 1m, direct                      -> MB/s
  rand-write-off   1 x 32m / 4k, randwrite, direct, no cache  -> IOPS
  rand-write-on    the same with the write cache             -> IOPS
  append+fsync     1 x 1m / 4k, an fsync after each record   -> records (fsyncs) per s
  flush-after-32   1 x 8m / 4k, randwrite, direct, fsync every 32 -> mean fsync ms

The model column replays the row's requests back to back through the same C
(libabtdisk.so) as if they went to the raw disk: the file's blocks as one extent at the
image's start, and for the fsync rows a FLUSH where the fsync is; the file system's own
writes (its journal: a commit per fsync) are not in it, so those rows' model is a floor.
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import xarray as xr

from abtlab.system.disk_model import DiskModel

MiB, KiB = 1 << 20, 1 << 10
MACHINES = "host;guest;guest:kernel=3.4.2"
# name: (threads, size, record, device, options, unit)
ROWS = {
    "seq-write": (1, "64m", "1m", "hdd7200", {"direct": "true"}, "MB/s"),
    "rand-write-off": (1, "32m", "4k", "hdd7200-nocache", {"direct": "true", "rw": "randwrite"}, "IOPS"),
    "rand-write-on": (1, "32m", "4k", "hdd7200", {"direct": "true", "rw": "randwrite"}, "IOPS"),
    "append+fsync": (1, "1m", "4k", "hdd7200", {"fsync_every": 1}, "fsync/s"),
    "flush-after-32": (1, "8m", "4k", "hdd7200", {"direct": "true", "rw": "randwrite", "fsync_every": 32},
                       "ms/fsync"),
}
SIZES = {"k": KiB, "m": MiB}


def _bytes(s: str) -> int:
    return int(s[:-1]) * SIZES[s[-1]]


def run_row(name: str, machines: str, reps: int, out: Path) -> list[str]:
    threads, size, record, device, opts, _ = ROWS[name]
    argv = [sys.executable, "-m", "abtlab", "run", "fio", "--machine", machines,
            "--device", device, "--threads", str(threads), "--file-size", size,
            "--record", record, "--reps", str(reps), "--warmup", "0", "--seed", "3",
            "--out", str(out), "--quiet"]
    for k, v in opts.items():
        argv += ["-o", f"{k}={v}"]
    subprocess.run(argv, check=True, capture_output=True, text=True)
    return argv


def value(name: str, ds) -> list[float]:
    """The row's unit from each repetition of one machine's dataset slice."""
    _, size, record, _, opts, unit = ROWS[name]
    tp = [float(v) for v in ds["throughput"].values.ravel() if v == v]
    if unit == "MB/s":
        return [v / 1e6 for v in tp]
    if unit in ("IOPS", "fsync/s"):
        return [v / _bytes(record) for v in tp]
    return [float(v) * 1e3 for v in ds["mean_fsync"].values.ravel() if v == v]


def predict(name: str, seed: int = 3) -> float:
    """The model alone: the row's requests back to back on the raw disk."""
    _, size, record, device, opts, _ = ROWS[name]
    d, t, r = DiskModel(device), 0, random.Random(seed)
    n, rec = _bytes(size) // _bytes(record), _bytes(record)
    offs = [k * rec for k in range(n)]
    if opts.get("rw") == "randwrite":
        r.shuffle(offs)
    every = int(opts.get("fsync_every", 0))
    flush_ns = []
    for k, off in enumerate(offs, 1):
        t = d.write(off, rec, t)
        if every and k % every == 0:
            t1 = d.flush(t)
            flush_ns.append(t1 - t)
            t = t1
    t = d.flush(t)   # fio's end_fsync
    if ROWS[name][5] == "MB/s":
        return n * rec / (t / 1e9) / 1e6
    if ROWS[name][5] in ("IOPS", "fsync/s"):
        return n / (t / 1e9)
    return sum(flush_ns) / len(flush_ns) / 1e6


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", default=MACHINES)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rows", default=",".join(ROWS))
    a = ap.parse_args(argv)
    print(f"{'row':15s} {'unit':9s} {'model':>8s} {'machine':34s} {'median (min-max)':>26s} "
          f"{'/ host':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.rows.split(","):
            if name not in ROWS:
                raise SystemExit(f"--rows: got {name!r}; accepted: {', '.join(ROWS)}")
            path = Path(tmp) / f"{name.replace('+', '_')}.nc"
            cmd = run_row(name, a.machines, a.reps, path)
            ds = xr.open_dataset(path)
            model = predict(name)
            got = {str(m): value(name, ds.sel(machine=m)) for m in ds["machine"].values}
            host = statistics.median(got["host"]) if "host" in got else None
            for m, v in got.items():
                med = statistics.median(v)
                rel = f"{med / host:7.2f}" if host else ""
                print(f"{name:15s} {ROWS[name][5]:9s} {model:8.1f} {str(m)[:34]:34s} "
                      f"{med:10.1f} ({min(v):.1f}-{max(v):.1f}) {rel}", flush=True)
            print("  " + " ".join(c if " " not in c and ";" not in c else repr(c) for c in cmd[1:]),
                  flush=True)


if __name__ == "__main__":
    main()
