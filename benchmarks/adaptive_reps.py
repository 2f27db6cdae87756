"""Runs needed by adaptive repetitions vs a fixed 50 to reach the same CI half-width.

Side by side in one run on the same configurations: first a fixed 50 repetitions per
point (what seed 000 did), giving the CI half-width it guarantees at every point (its
widest); then adaptive repetitions with that half-width as the target. Prints runs used
by each and the ratio. Real IOzone on a scratch loop ext4 when root, else the simulator.

    python -m benchmarks.adaptive_reps [--fixed 50] [--sim]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from abtlab import runner
from abtlab.backends import get
from abtlab.stats import ci_halfwidth
from abtlab.sweep import Reps

REAL = dict(threads="16,64", file_size="128k", record_size="32k", policy="ext4,nojc",
            freq="emulated:3.3", device="none")
SIM = dict(threads="16,64", policy="ext4,nojc", freq="1.6", device="hdd7200")


def _per_point(ds, var):
    v = ds[var].stack(point=[d for d in ds[var].dims if d != "rep"]).transpose("point", "rep").values
    return [row[np.isfinite(row)] for row in v]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixed", type=int, default=50)
    ap.add_argument("--sim", action="store_true")
    ap.add_argument("--var", default="throughput")
    a = ap.parse_args(argv)
    real = not a.sim and get("iozone").available().ok
    backend, params = ("iozone", REAL) if real else ("sim", SIM)
    t0 = time.monotonic()
    fixed = runner.run(backend, reps=a.fixed, seed=1, quiet=True, **params)
    t_fixed = time.monotonic() - t0
    rows = _per_point(fixed, a.var)
    hw = [ci_halfwidth(r, 0.95) for r in rows]
    target = max(hw)
    t0 = time.monotonic()
    adapt = runner.run(backend, reps=Reps(min=3, max=a.fixed, target=target, metric=a.var),
                       seed=2, quiet=True, **params)
    t_adapt = time.monotonic() - t0
    arows = _per_point(adapt, a.var)
    ahw = [ci_halfwidth(r, 0.95) for r in arows]
    n_fixed, n_adapt = sum(len(r) for r in rows), sum(len(r) for r in arows)
    print(f"backend={backend} ({'real loop ext4, emulated frequency' if real else 'SIMULATED'}), "
          f"var={a.var}, points={len(rows)}")
    print(f"target relative 95% CI half-width = {target:.4f} (the widest a fixed {a.fixed} gives)")
    print(f"{'point':>5} {'RSD':>7} {'fixed n':>8} {'fixed hw':>9} {'adapt n':>8} {'adapt hw':>9}")
    for i, (r, h, ar, ah) in enumerate(zip(rows, hw, arows, ahw)):
        rsd = np.std(r, ddof=1) / np.mean(r)
        print(f"{i:>5} {rsd:7.3f} {len(r):8d} {h:9.4f} {len(ar):8d} {ah:9.4f}")
    print(f"runs: fixed {n_fixed} ({t_fixed:.0f} s), adaptive {n_adapt} ({t_adapt:.0f} s); "
          f"ratio fixed/adaptive = {n_fixed / n_adapt:.2f}x")


if __name__ == "__main__":
    main()
