"""Time of `make demo` (abtlab demo) against its budget of 5 minutes on 2 cores.

    .venv/bin/python -m benchmarks.demo [--out DIR] [--sim] [--budget 300]

Runs the demo as `make demo` does (after set-up) into DIR (a temporary directory,
removed, by default), prints each notebook's run time, whether it ran alone (real I/O),
the total wall time, the load average before and after (a loaded machine is slower:
say so with the number), and exits 1 when the total is over the budget or a notebook failed.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.demo")
    ap.add_argument("--out", help="keep the report in this directory")
    ap.add_argument("--sim", action="store_true", help="abtlab demo --sim")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds (default 300)")
    args = ap.parse_args(argv)
    from abtlab.present.demo import run_demo_report
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="abtlab-demo-bench-") as tmp:
        out = Path(args.out or tmp)
        t0 = time.monotonic()
        outcomes, page = run_demo_report(out, quiet=True, force_sim=args.sim)
        total = time.monotonic() - t0
    for o in outcomes:
        print(f"{o.item.name:24s} {o.seconds:7.1f} s  {o.status}{'  (real I/O, alone)' if o.real_io else ''}")
    ok = all(o.status == "ok" for o in outcomes)
    print(f"total {total:.1f} s (budget {args.budget:.0f} s, {os.cpu_count()} CPUs); load average "
          f"{load0[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{'within' if total <= args.budget else 'OVER'} budget"
          + ("" if ok else "; a notebook FAILED") + (f"; report {page}" if args.out else ""))
    return 0 if ok and total <= args.budget else 1


if __name__ == "__main__":
    raise SystemExit(main())
