"""The lock-step guest CPU checked as a CPU: every vCPU at the clock, whatever the others do.

    .venv/bin/python -m benchmarks.lockstep [--cpus 4] [--loops 20000000] [--quantum 10000]
        [--kernel 6.1] [--json OUT]

On `guest:clock=lockstep,cpus=4` (virtual time; backends/kernel/qemu-lockstep.patch) it runs
backends/cpuclock/abt-cpuclock, a fixed integer loop per thread timed with CLOCK_MONOTONIC, and
prints the validation table with each check's target:
- 1, 2, 4 and 8 threads at 1.6 GHz: 1-4 take one thread's time (within 5%), 8 twice (10%);
- one thread at 1.6 and 3.3 GHz: 3300/1600 = 2.0625x (within 2%);
- a 10 ms clock_nanosleep loop with 0, 1 and 4 spinning threads: the same period (within 1%);
- the 1-8 thread boot twice: identical records (virtual time repeats exactly);
- host seconds per virtual second with 4 busy vCPUs, from two boots' wall times (one with
  the long 4-thread run, one with a trivial point: the boot's own cost cancels).
Every time here but the last is virtual; the last is host time on a shared machine (a rough
cost, not a target).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from abtlab import about
from abtlab.machines import guest
from abtlab.machines.spec import parse_machine

PROGRAM = "abt-cpuclock"
TARGETS = {"threads": 0.05, "threads8": 0.10, "clock": 0.02, "sleep": 0.01}


def build_overlay(workdir: Path) -> Path:
    """abt-cpuclock linked statically, in a cpio appended to the guest's initramfs."""
    src = about.NATIVE / "cpuclock" / f"{PROGRAM}.c"
    exe = workdir / PROGRAM
    subprocess.run(["gcc", "-O2", "-std=gnu11", "-pthread", f"-I{about.NATIVE / 'include'}",
                    "-static", "-o", str(exe), str(src)], check=True)
    overlay = workdir / "cpuclock.cpio.gz"
    overlay.write_bytes(guest.run_cpio({PROGRAM: exe.read_bytes()}, executables={PROGRAM}))
    return overlay


def boot(machine, argvs, workdir: Path, overlay: Path):
    runs = [guest.GuestRun(argv=[f"/abt/{PROGRAM}", *a]) for a in argvs]
    res = guest.boot_batch(runs, machine, workdir, overlays=[overlay], timeout=3600)
    out = []
    for p in res.points:
        if p.rc != 0:
            raise SystemExit(f"{PROGRAM} failed in the guest ({p.status}, rc {p.rc}): {p.stderr}")
        out.append(dict(line.split(": ", 1) for line in p.stdout.splitlines() if ": " in line))
    return out, res.wall_s


def ns(values: str) -> list[int]:
    return [int(v) for v in values.split()]


def lockstep(cpus, mhz, quantum, kernel):
    return parse_machine(f"guest:clock=lockstep,cpus={cpus},mhz={mhz},quantum={quantum},kernel={kernel}")


def measure(args, workdir: Path) -> dict:
    overlay = build_overlay(workdir)
    slow = lockstep(args.cpus, 1600, args.quantum, args.kernel)
    fast = lockstep(args.cpus, 3300, args.quantum, args.kernel)
    loops = str(args.loops)
    counts = (1, 2, 4, 8)
    sleeps = [["--sleeps", "20", "--busy", str(b)] for b in (0, 1, args.cpus)]
    first, _ = boot(slow, [["--threads", str(n), "--loops", loops] for n in counts] + sleeps,
                    workdir, overlay)
    again, _ = boot(slow, [["--threads", str(n), "--loops", loops] for n in counts] + sleeps,
                    workdir, overlay)
    at33, _ = boot(fast, [["--threads", "1", "--loops", loops]], workdir, overlay)
    _, wall_short = boot(slow, [["--threads", "1", "--loops", "1"]], workdir, overlay)
    long_run, wall_long = boot(slow, [["--threads", str(args.cpus), "--loops", str(args.loops * 5)]],
                               workdir, overlay)
    one = statistics.median(ns(first[0]["thread_ns"]))
    virtual_s = max(ns(long_run[0]["thread_ns"])) / 1e9
    return {
        "machine": slow.label, "quantum_insns": args.quantum, "loops": args.loops,
        "threads": {n: max(ns(r["thread_ns"])) / one for n, r in zip(counts, first)},
        "one_thread_ms_1.6GHz": one / 1e6,
        "clock_ratio": statistics.median(ns(first[0]["thread_ns"])) / statistics.median(ns(at33[0]["thread_ns"])),
        "sleep_period_ms": {int(r["busy"]): statistics.mean(ns(r["period_ns"])) / 1e6
                            for r in first[len(counts):]},
        "identical_reruns": first == again,
        "host_s_per_virtual_s_4busy": (wall_long - wall_short) / virtual_s,
    }


def table(m: dict) -> str:
    rows = [f"lock-step CPU check on {m['machine']} (VIRTUAL time; quantum {m['quantum_insns']} "
            f"instructions; {m['loops']} loops a thread; one thread {m['one_thread_ms_1.6GHz']:.2f} ms "
            "at 1.6 GHz)",
            f"{'check':42s} {'measured':>10s} {'target':>18s} {'ok':>4s}"]

    def row(name, value, target, ok, fmt="{:.3f}"):
        rows.append(f"{name:42s} {fmt.format(value):>10s} {target:>18s} {'yes' if ok else 'NO':>4s}")

    for n, r in m["threads"].items():
        want, tol = (1.0, TARGETS["threads"]) if n <= 4 else (2.0, TARGETS["threads8"])
        row(f"{n} threads / 1 thread (slowest thread)", r, f"{want:g} +- {tol:.0%}", abs(r / want - 1) <= tol)
    cr = m["clock_ratio"]
    row("1 thread: 1.6 GHz time / 3.3 GHz time", cr, "2.0625 +- 2%", abs(cr / 2.0625 - 1) <= TARGETS["clock"])
    base = m["sleep_period_ms"][0]
    for b, p in m["sleep_period_ms"].items():
        row(f"10 ms sleep period with {b} busy threads (ms)", p, f"{base:.3f} +- 1%",
            abs(p / base - 1) <= TARGETS["sleep"])
    row("two boots: identical records", float(m["identical_reruns"]), "1 (yes)", m["identical_reruns"], "{:.0f}")
    rows.append(f"{'host s per virtual s, 4 busy vCPUs':42s} {m['host_s_per_virtual_s_4busy']:>10.1f} "
                f"{'(host time, shared machine)':>18s}")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.lockstep", description=__doc__.splitlines()[0])
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--loops", type=int, default=20_000_000)
    ap.add_argument("--quantum", type=int, default=10_000)
    ap.add_argument("--kernel", default="6.1")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="abt-lockstep-") as tmp:
        m = measure(args, Path(tmp))
    print(table(m))
    if args.json:
        args.json.write_text(json.dumps(m, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
