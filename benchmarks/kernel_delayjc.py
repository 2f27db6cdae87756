"""Kernel delayJC vs the LD_PRELOAD delayJC vs stock jbd2, side by side in one qemu (TCG) guest.

    python -m benchmarks.kernel_delayjc [--workers 16,64] [--window 2ms] [--reps 3] [--iops 0]

Metarates (N workers x 8 create+fsync) in the guest kernel built from backends/kernel;
prints median jbd2 commits and file creation rate per policy and the ratios to stock.
All rates are under TCG software emulation: compare them only with each other.
"""
from __future__ import annotations

import argparse

import numpy as np

import abtlab


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="16,64")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--window", default="2ms")
    ap.add_argument("--resets", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iops", type=int, default=0, help="qemu disk throttling (0: none)")
    a = ap.parse_args(argv)
    pols = f"ext4;kdelayjc:window={a.window},max_resets={a.resets};delayjc:window={a.window},max_resets={a.resets}"
    opts = {"guest": True, **({"guest_iops": a.iops} if a.iops else {})}
    ds = abtlab.run("metarates", threads=a.workers, files=a.files, policy=pols, reps=a.reps,
                    warmup=0, quiet=True, **opts)
    print(f"guest kernel: {ds.attrs.get('kernel')} ; reps={a.reps} ; iops={a.iops or 'unthrottled'} (TCG)")
    for w in ds.threads.values:
        sel = ds.sel(threads=w).squeeze()
        base_c = np.nanmedian(sel["jbd2_info_commits"].sel(policy="ext4").values)
        base_f = np.nanmedian(sel["fcr"].sel(policy="ext4").values)
        print(f"workers={w}")
        for p in ds.policy.values:
            c = np.nanmedian(sel["jbd2_info_commits"].sel(policy=p).values)
            f = np.nanmedian(sel["fcr"].sel(policy=p).values)
            print(f"  {p.split(',max_age')[0]:40s} commits {c:6.1f} ({c / base_c:4.2f}x)  "
                  f"FCR {f:8.1f} files/s ({f / base_f:4.2f}x)")
    return 0


if __name__ == "__main__":
    main()
