"""The same fio job on the host (abt-slowdisk) and in the 6.1 guest (null_blk with
nullblk-disk.patch): both disks are the drive model of abt_disk.h (docs/device.md).

    python -m benchmarks.disk_machines [--device hdd7200] [--reps 3] [--rows 1x64m/1m,...]

Each row is fio's IOzone pattern (`abtlab run fio`: N threads, each writes its S-byte file
in R-byte records, fsync at the end) on a fresh scratch ext4, run with
`--machine 'host;guest'`; prints throughput and the mean fsync per machine, the
guest/host ratio of the medians, and the command it ran.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import xarray as xr

ROWS = "1x64m/1m,4x4m/128k,16x64k/32k"


def run_row(row: str, device: str, reps: int, out: Path) -> list[str]:
    threads, rest = row.split("x")
    size, record = rest.split("/")
    argv = [sys.executable, "-m", "abtlab", "run", "fio", "--machine", "host;guest",
            "--device", device, "--threads", threads, "--file-size", size, "--record", record,
            "--reps", str(reps), "--out", str(out), "--quiet"]
    subprocess.run(argv, check=True, capture_output=True, text=True)
    return argv


def medians(path: Path) -> dict:
    ds = xr.open_dataset(path)
    out = {}
    for m in ds["machine"].values:
        sel = ds.sel(machine=m)
        tp = [float(v) for v in sel["throughput"].values.ravel() if v == v]
        fs = [float(v) for v in sel["mean_fsync"].values.ravel() if v == v]
        out[str(m)] = (tp, fs)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="hdd7200")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rows", default=ROWS)
    a = ap.parse_args(argv)
    print(f"{'row':12s} {'machine':28s} {'MB/s median (min-max)':>24s} "
          f"{'fsync ms median (min-max)':>28s}")
    with tempfile.TemporaryDirectory() as tmp:
        for row in a.rows.split(","):
            path = Path(tmp) / f"{row.replace('/', '_')}.nc"
            cmd = run_row(row, a.device, a.reps, path)
            got = medians(path)
            meds = {}
            for m, (tp, fs) in got.items():
                q = lambda v, k: f"{statistics.median(v) * k:8.2f} ({min(v) * k:.2f}-{max(v) * k:.2f})"
                meds[m] = (statistics.median(tp), statistics.median(fs))
                print(f"{row:12s} {m[:28]:28s} {q(tp, 1e-6):>24s} {q(fs, 1e3):>28s}")
            hosts = [v for m, v in meds.items() if m.startswith("host")]
            guests = [v for m, v in meds.items() if m.startswith("guest")]
            if hosts and guests:
                (th, fh), (tg, fg) = hosts[0], guests[0]
                print(f"{row:12s} {'guest / host':28s} {tg / th:24.2f} {fg / fh:28.2f}")
            print("  " + " ".join(c if " " not in c and ";" not in c else repr(c) for c in cmd[1:]),
                  flush=True)


if __name__ == "__main__":
    main()
