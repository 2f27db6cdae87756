"""fsync and jbd2 commit durations under each device profile, side by side in one run.

    python -m benchmarks.device [--n 30] [--profiles none,hdd7200,ssd-sata,hdd7200-throttle]

Each profile gets a fresh scratch ext4 (data=ordered); N x (4 KiB write + fsync) with the
journal traced; prints medians and p10-p90 and the ratio of each to `none`, and, for a
latency profile of abt-slowdisk's, the floors its model guarantees (a loaded machine only
adds): median fsync above half the model's flush + seek + rotation, median commit above
a flush.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from abtlab.machines.host import scratch_on_device
from abtlab.system.device import PROFILES
from abtlab.system import cleanup
from abtlab.system.tracefs import JournalTrace


def probe(profile, n):
    with tempfile.TemporaryDirectory() as tmp, scratch_on_device(profile, 128, True, "", tmp) as (fs, _), \
            JournalTrace(fs.dev_t) as tr:
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        fsyncs = []
        for i in range(n):
            fd = os.open(fs.mountpoint / f"f{i}", os.O_CREAT | os.O_WRONLY)
            os.write(fd, b"x" * 4096)
            t = time.monotonic()
            os.fsync(fd)
            fsyncs.append(time.monotonic() - t)
            os.close(fd)
        c = tr.commits()
        sel = c["start"] > t0
        commits = (c["end"][sel] - c["start"][sel]) / 1e9
    return np.array(fsyncs), commits


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--profiles", default="none,hdd7200,ssd-sata,hdd7200-throttle")
    a = ap.parse_args(argv)
    rows = {}
    with cleanup.installed():
        for prof in a.profiles.split(","):
            rows[prof] = probe(prof, a.n)
    base = np.median(rows[next(iter(rows))][0])
    print(f"{'profile':18s} {'fsync ms median (p10-p90)':>28s} {'commit ms median (p10-p90)':>28s} {'fsync/first':>11s}")
    for prof, (f, c) in rows.items():
        q = lambda x: f"{np.median(x) * 1e3:7.2f} ({np.percentile(x, 10) * 1e3:.2f}-{np.percentile(x, 90) * 1e3:.2f})" if len(x) else "n/a"
        print(f"{prof:18s} {q(f):>28s} {q(c):>28s} {np.median(f) / base:11.2f}")
    for prof, (f, c) in rows.items():
        if prof in PROFILES and PROFILES[prof].kind == "latency":
            floors(prof, f, c)


def floors(prof, fsyncs, commits):
    """The model's lower bounds (tests/system/test_slowdisk.py checks the counts only)."""
    m = PROFILES[prof]
    model_s = (m.flush_us + m.seek_us + m.rotation_us) / 1e6
    ok_f = np.median(fsyncs) > 0.5 * model_s
    ok_c = len(commits) >= 3 and np.median(commits) > m.flush_us / 1e6
    c_ms = np.median(commits) * 1e3 if len(commits) else float("nan")
    print(f"{prof}: fsync median {np.median(fsyncs) * 1e3:.2f} ms > {0.5 * model_s * 1e3:.2f} ms "
          f"(half the model's flush + seek + rotation): {'yes' if ok_f else 'NO'}; commit median "
          f"{c_ms:.2f} ms > a flush {m.flush_us / 1e3:.2f} ms: {'yes' if ok_c else 'NO'}")


if __name__ == "__main__":
    main()
