"""abtlab.bps on 10 million records (ns and s) vs He et al.'s (IPDPS Workshops 2013) Fig. 3 in plain Python vs `portion`.

    .venv/bin/python -m benchmarks.bps [--n 10000000] [--n-portion 200000]

The trace is synthetic (labelled so): 8 threads of sequential calls with random
durations and gaps, laid out three ways: per-thread blocks as libabtrace writes
them, merged by start time as `abtlab trace` writes them, and shuffled (worst
case). All implementations must agree on the overlapped time. `portion` builds
one Python object per interval, so it runs on --n-portion records and its time
is scaled linearly to --n (a lower bound: its union is O(n log n)); the printed
line says so.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from abtlab import bps
from abtlab.trace import RECORD_DTYPE, Op


def synthetic(n, threads=8, seed=0):
    rng = np.random.default_rng(seed)
    per = n // threads
    dur = rng.integers(500, 20_000, (threads, per))
    gap = rng.integers(0, 30_000, (threads, per))
    end = np.cumsum(dur + gap, axis=1)
    r = np.zeros(threads * per, RECORD_DTYPE)
    r["op"], r["bytes"] = Op.PWRITE, 4096
    r["tid"] = np.repeat(np.arange(threads), per)
    r["t_start_ns"] = (end - dur).ravel()
    r["t_end_ns"] = end.ravel()
    return r


def portion_union(starts, ends):
    import portion as P
    u = P.Interval(*[P.closed(s, e) for s, e in zip(starts, ends)])
    return sum(i.upper - i.lower for i in u)


def timed(fn, *args, repeat=1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--n-portion", type=int, default=200_000)
    ap.add_argument("--skip-python", action="store_true", help="skip the plain-Python Fig. 3 run")
    a = ap.parse_args(argv)
    recs = synthetic(a.n)
    layouts = {"per-thread (libabtrace file)": recs,
               "by start (abtlab trace)": recs[np.argsort(recs["t_start_ns"], kind="stable")],
               "shuffled (worst case)": recs[np.random.default_rng(1).permutation(recs.size)]}
    print(f"synthetic trace: {recs.size:,} records, 8 threads (not measured I/O)")
    times = {}
    for name, r in layouts.items():
        times[name], m = timed(bps.metrics, r, repeat=3)
        print(f"  abtlab.bps.metrics, {name:30s} {times[name]:7.3f} s  (best of 3; "
              f"overlap {m['overlap_s']:.6f} s, target < 1 s)")
    for name, r in layouts.items():     # float seconds beside integer ns, in turns
        ns = (r["t_start_ns"], r["t_end_ns"])
        sec = (ns[0] / 1e9, ns[1] / 1e9)
        t_ns = t_s = float("inf")
        for _ in range(3):
            t_ns = min(t_ns, timed(bps.overlap_time, *ns)[0])
            t_s = min(t_s, timed(bps.overlap_time, *sec)[0])
        got = bps.overlap_time(*sec)
        assert abs(got - int(bps.overlap_time(*ns)) / 1e9) <= 1e-9 * got, got
        print(f"  abtlab.bps.overlap_time, {name:24s} int ns {t_ns:6.3f} s, float s {t_s:6.3f} s "
              f"(float/int {t_s / t_ns:4.2f}; best of 3; target < 1 s)")
    ref = times["by start (abtlab trace)"]
    s, e = recs["t_start_ns"].tolist(), recs["t_end_ns"].tolist()
    truth = int(bps.overlap_time(recs["t_start_ns"], recs["t_end_ns"]))
    if not a.skip_python:
        tp, got = timed(bps.overlap_time_fig3, s, e)
        assert got == truth, (got, truth)
        print(f"  Fig. 3 in plain Python, same {recs.size:,} records   {tp:7.3f} s   "
              f"ratio python/abtlab = {tp / ref:.1f}x")
    k = min(a.n_portion, recs.size)
    sub = layouts["by start (abtlab trace)"][:k]
    tsub, _ = timed(bps.overlap_time, sub["t_start_ns"], sub["t_end_ns"], repeat=3)
    tq, got = timed(portion_union, sub["t_start_ns"].tolist(), sub["t_end_ns"].tolist())
    assert got == int(bps.overlap_time(sub["t_start_ns"], sub["t_end_ns"]))
    print(f"  portion on {k:,} records {tq:7.3f} s (abtlab.bps.overlap_time on the same: "
          f"{tsub:.4f} s, ratio {tq / tsub:.0f}x); scaled linearly to {recs.size:,}: "
          f"{tq * recs.size / k:.1f} s, ratio portion/abtlab >= {tq * recs.size / k / ref:.0f}x (extrapolated)")


if __name__ == "__main__":
    main()
