"""Host seconds per point of the virtual-time guest, and its independence of host load.

    .venv/bin/python -m benchmarks.guest [--points 8] [--machine guest] [--device hdd7200]
        [--no-hog] [--repeat N] [--workers N]

Runs one boot holding --points repetitions of IOzone (256 threads, 128k files, 32k
records) and one of Metarates (16 workers x 4 files), each point on a fresh in-guest
filesystem, and prints host seconds per point with the boot amortized (target: <= 3 s).
Then runs the same two-point IOzone batch with and without two host CPU hogs (busy
processes, one per core of a 2-core machine) and prints each point's virtual elapsed time
and a hash of its op records: identical under the virtual clock. Run it under the lock.

--workers N instead runs N x --points repetitions of each as a sweep (abtlab.sweep.loop)
on a dask LocalCluster of N workers, --points to a boot: virtual-time guest boots need no
turn on the host's devices, so N of them run side by side, and it prints host seconds
per point of the whole sweep (cluster start included) next to one worker's.

--dilation instead prices the emulated frequency's spin: for a small IOzone cell (16 threads)
and the paper's (256 threads), both 128k files in 32k records, one boot of --points points at
3.3 GHz (factor f_ref/f = 1: no spin) and one at 1.6 GHz (factor 2.06: each op's guest CPU
time spun once more), `--freq emulated:1.6,3.3`, and prints host and virtual seconds per
point of each and the difference the spin makes.

--repeat N instead boots the same two-point batch N times (every other boot beside two CPU
hogs) and counts the distinct results: 1 for one vCPU; with several vCPUs the host can
force qemu's round-robin to switch vCPUs at an instruction it picks (attr `repeatable`),
and this is how often that shows.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from abtlab.backends import get
from abtlab.backends.base import RunContext
from abtlab.machines.guest_point import run_batch
from abtlab.machines.spec import parse_machine
from abtlab.system import cleanup

POINTS = {"iozone 256x128k/32k": ("iozone", {"policy": "ext4", "threads": 256, "file_size": 128 * 1024,
                                             "record_size": 32 * 1024}),
          "metarates 16x4": ("metarates", {"policy": "ext4", "threads": 16, "files": 4})}


DILATION_CELLS = {"iozone 16x128k/32k": 16, "iozone 256x128k/32k": 256}
F_REF = 3.3


def _items(backend, point, n, device, machine, workdir, freq_mode="native"):
    be = get(backend)
    point = {**point, "device": device, "machine": machine.label}
    items = []
    for i in range(n):
        ctx = RunContext(Path(workdir), rep=i, seed=i, quiet=True, options={"guest_timeout": 1800},
                         f_ref_ghz=F_REF, freq_mode=freq_mode)
        prep = be.prepare(point, ctx)
        items.append((prep.argv_for, point, ctx, prep.data_bytes, prep.trace_from_go))
    return items


def _batch(items, machine, workdir):
    t0 = time.monotonic()
    results = run_batch(items, machine, workdir)
    wall = time.monotonic() - t0
    for r in results:
        if isinstance(r, Exception):
            raise r
    return wall, results


def _digest(res) -> tuple:
    ops = res.ops
    elapsed = int(ops["t_end_ns"].max() - ops["t_start_ns"].min())
    return elapsed, hashlib.sha256(ops.tobytes()).hexdigest()[:12], len(res.commits["tid"])


@contextlib.contextmanager
def _hogs(n):
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    token = cleanup.push(lambda: [p.kill() for p in procs], "kill the benchmark's CPU hogs")
    try:
        yield
    finally:
        cleanup.pop(token)
        for p in procs:
            p.kill()
            p.wait()


def _repeat(machine, device, n) -> int:
    """Boot the same two-point batch n times; print each boot's digests and the count of
    distinct results."""
    name, (backend, point) = next(iter(POINTS.items()))
    seen = {}
    with tempfile.TemporaryDirectory(prefix="abtlab-bench-guest-") as work:
        items = _items(backend, point, 2, device, machine, work)
        for i in range(n):
            with _hogs(2) if i % 2 else contextlib.nullcontext():
                _, res = _batch(items, machine, work)
            key = tuple(map(_digest, res))
            seen.setdefault(key, []).append(i)
            print(f"  boot {i} ({'2 CPU hogs' if i % 2 else 'idle host'}): "
                  + "; ".join(f"elapsed {e} ns, ops {h}, {c} commits" for e, h, c in key), flush=True)
    print(f"machine {machine.label}, {name}, device {device}: {len(seen)} distinct result(s) "
          f"in {n} boots ({machine.repeatable.split(':')[0]} repeatable)")
    return 0


def _sweep(backend, point, n, device, machine, workers) -> float:
    """Host seconds of a sweep of n repetitions of one point, boots of `per` points."""
    from abtlab.sweep.loop import run
    levels = {**{k: [v] for k, v in point.items()}, "device": [device], "machine": [machine.label]}
    t0 = time.monotonic()
    run(backend, levels, reps=n, seed=1, quiet=True, scheduler="local" if workers > 1 else None,
        workers=workers, options={"guest_batch": -(-n // workers), "guest_timeout": 1200})
    return time.monotonic() - t0


def _workers(machine, device, points, workers) -> int:
    print(f"machine {machine.label}, device {device}, {points} points per boot, sweeps of "
          f"{workers} boots")
    for name, (backend, point) in POINTS.items():
        n = points * workers
        one = _sweep(backend, point, n, device, machine, 1)
        side = _sweep(backend, point, n, device, machine, workers)
        print(f"  {name:22s} {one / n:6.2f} host s/point one boot at a time, {side / n:6.2f} "
              f"with {workers} side by side ({n} points)", flush=True)
    return 0


def _dilation(machine, device, points, cells) -> int:
    """Host and virtual seconds per point at 3.3 GHz (no spin) and 1.6 GHz (spun), a boot each."""
    from abtlab.machines import guest
    guest.ensure_built(row=machine.guest_kernel)     # a build is not a boot's cost
    print(f"machine {machine.label}, device {device}, {points} points per boot, "
          f"--freq emulated:1.6,3.3 (f_ref {F_REF} GHz)")
    with tempfile.TemporaryDirectory(prefix="abtlab-bench-guest-") as work:
        for name, threads in DILATION_CELLS.items():
            if threads not in cells:
                continue
            row = {}
            for f in (F_REF, 1.6):
                point = {**POINTS["iozone 256x128k/32k"][1], "threads": threads, "freq_ghz": f}
                wall, res = _batch(_items("iozone", point, points, device, machine, work, "emulated"),
                                   machine, work)
                row[f] = (wall / points, sum(_digest(r)[0] for r in res) / len(res) / 1e9)
                print(f"  {name} at {f} GHz (factor {F_REF / f:.2f}): {row[f][0]:7.2f} host s/point "
                      f"(boot amortized), {row[f][1]:.3f} virtual s/point", flush=True)
            (h0, v0), (h1, v1) = row[F_REF], row[1.6]
            print(f"  {name}: the spin costs {h1 - h0:+.2f} host s/point ({h1 / h0:.2f}x) and "
                  f"{v1 - v0:+.3f} virtual s/point", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.guest")
    ap.add_argument("--points", type=int, default=8)
    ap.add_argument("--machine", default="guest")
    ap.add_argument("--device", default="hdd7200")
    ap.add_argument("--no-hog", dest="hog", action="store_false")
    ap.add_argument("--repeat", type=int, default=0)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--dilation", action="store_true")
    ap.add_argument("--cells", default="16,256", help="--dilation: IOzone thread counts")
    args = ap.parse_args(argv)
    machine = parse_machine(args.machine)
    if args.dilation:
        return _dilation(machine, args.device, args.points,
                         {int(c) for c in args.cells.split(",")})
    if args.workers:
        return _workers(machine, args.device, args.points, args.workers)
    if args.repeat:
        return _repeat(machine, args.device, args.repeat)
    with tempfile.TemporaryDirectory(prefix="abtlab-bench-guest-") as work:
        print(f"machine {machine.label}, device {args.device}, {args.points} points per boot")
        for name, (backend, point) in POINTS.items():
            wall, res = _batch(_items(backend, point, args.points, args.device, machine, work),
                               machine, work)
            virt = sum(_digest(r)[0] for r in res) / len(res) / 1e9
            print(f"  {name:22s} {wall / args.points:6.2f} host s/point (boot of {wall:.1f} s "
                  f"amortized), {virt:.3f} virtual s/point")
        if args.hog:
            name, (backend, point) = next(iter(POINTS.items()))
            items = _items(backend, point, 2, args.device, machine, work)
            _, quiet = _batch(items, machine, work)
            with _hogs(2):
                _, loaded = _batch(items, machine, work)
            for label, res in (("idle host", quiet), ("2 CPU hogs", loaded)):
                print(f"  {name} {label:10s}: " + "; ".join(
                    f"elapsed {e} ns, ops {h}, {c} commits" for e, h, c in map(_digest, res)))
            same = [_digest(a) == _digest(b) for a, b in zip(quiet, loaded)]
            print(f"  identical with and without the hogs: {all(same)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
