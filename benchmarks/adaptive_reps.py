"""Runs needed by adaptive repetitions vs a fixed 50 to reach the same CI half-width.

Side by side in one run on the same sweep: first a fixed 50 repetitions per point (what
seed 000 did), which guarantees at every point the CI half-width of its noisiest point;
then adaptive repetitions (`Reps`) with that half-width as the target. Prints, per
point, the RSD, runs and half-width of each, whether the adaptive point met the target,
and the ratio of runs. Real IOzone on scratch loop ext4 (emulated frequency) when root,
else the simulator.

Grids: `sweep` (default) is a slice of the Fig. 7 sweep, bare loop device and the
emulated 7200 rpm disk, ext4 and no journal, 64 and 256 threads: its points differ in
noise as a real sweep's do (11-55% RSD in seed 000). `uniform` is four bare-device
points of about equal noise, where adaptive repetition can save little.

    python -m benchmarks.adaptive_reps [--grid sweep|uniform] [--fixed 50] [--min 5] [--sim]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from abtlab import runner
from abtlab.backends import get
from abtlab.stats import ci_halfwidth
from abtlab.sweep import Reps

GRIDS = {
    "sweep": dict(threads="64,256", file_size="128k", record_size="32k", policy="ext4,nojc",
                  freq="emulated:3.3", device="none,hdd7200"),
    "uniform": dict(threads="16,64", file_size="128k", record_size="32k", policy="ext4,nojc",
                    freq="emulated:3.3", device="none"),
}
SIM = dict(threads="16,64,256", policy="ext4,nojc", freq="1.6", device="loop,hdd7200")


def _per_point(ds, var):
    da = ds[var].stack(point=[d for d in ds[var].dims if d != "rep"]).transpose("point", "rep")
    labels = [" ".join(str(x) for x in ix) for ix in da.indexes["point"]]
    return labels, [row[np.isfinite(row)] for row in da.values]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", choices=sorted(GRIDS), default="sweep")
    ap.add_argument("--fixed", type=int, default=50)
    ap.add_argument("--min", type=int, default=5, help="adaptive: runs before the first check")
    ap.add_argument("--sim", action="store_true")
    ap.add_argument("--var", default="throughput")
    a = ap.parse_args(argv)
    real = not a.sim and get("iozone").available().ok
    backend, params = ("iozone", GRIDS[a.grid]) if real else ("sim", SIM)
    t0 = time.monotonic()
    fixed = runner.run(backend, reps=a.fixed, seed=1, quiet=True, **params)
    t_fixed = time.monotonic() - t0
    labels, rows = _per_point(fixed, a.var)
    hw = [ci_halfwidth(r, 0.95) for r in rows]
    target = max(hw)
    t0 = time.monotonic()
    adapt = runner.run(backend, reps=Reps(min=a.min, max=a.fixed, target=target, metric=a.var),
                       seed=2, quiet=True, **params)
    t_adapt = time.monotonic() - t0
    _, arows = _per_point(adapt, a.var)
    ahw = [ci_halfwidth(r, 0.95) for r in arows]
    n_fixed, n_adapt = sum(len(r) for r in rows), sum(len(r) for r in arows)
    print(f"backend={backend} ({'real loop ext4, emulated frequency' if real else 'SIMULATED'}), "
          f"grid={a.grid if real else 'sim'}, var={a.var}, points={len(rows)}")
    print(f"target relative 95% CI half-width = {target:.4f} (the widest a fixed {a.fixed} gives)")
    w = max(len(s) for s in labels)
    print(f"{'point':<{w}} {'RSD':>6} {'fixed n':>7} {'fixed hw':>8} {'adapt n':>7} {'adapt hw':>8} met")
    for lab, r, h, ar, ah in zip(labels, rows, hw, arows, ahw):
        rsd = np.std(r, ddof=1) / np.mean(r)
        met = "yes" if ah <= target else ("max" if len(ar) >= a.fixed else "NO")
        print(f"{lab:<{w}} {rsd:6.3f} {len(r):7d} {h:8.4f} {len(ar):7d} {ah:8.4f} {met}")
    print(f"runs: fixed {n_fixed} ({t_fixed:.0f} s), adaptive {n_adapt} ({t_adapt:.0f} s); "
          f"ratio fixed/adaptive = {n_fixed / n_adapt:.2f}x runs, {t_fixed / t_adapt:.2f}x time")


if __name__ == "__main__":
    main()
