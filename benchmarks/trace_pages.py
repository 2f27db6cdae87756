"""The guest's trace clock across the trace's buffer pages: markers after an idle gap.

    .venv/bin/python -m benchmarks.trace_pages [--kernel 3.4.2] [--markers 300] [--gap-us 5000]

On `guest:clock=lockstep,cpus=4,mhz=1600,kernel=K` (virtual time) it runs abt-clockmark
(backends/kernel/abt-clockmark.c, built from this checkout into an overlay) writing N trace
markers GAP_US apart, each between two CLOCK_MONOTONIC reads, and prints how many markers the
trace stamps outside their reads, by how much, and whether a CPU's trace steps back
(abtlab.machines.guest_point.cpu_step_back). Linux 3.4.2 before k342/10 stamps the first
event on a new buffer page, and every later event on that page, late by the gap before it;
run it with PYTHONPATH naming a checkout with and one without that patch to compare.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from abtlab.machines import guest, guest_disk, guest_point
from abtlab.machines.host import scratch_geometry
from abtlab.machines.spec import parse_machine
from abtlab.system.tracefs import parse_line

PROGRAM = "abt-clockmark-gap"
SOURCE = Path(__file__).resolve().parents[1] / "backends" / "kernel" / "abt-clockmark.c"


def overlay(workdir: Path) -> Path:
    exe = workdir / PROGRAM
    subprocess.run(["gcc", "-O2", "-std=gnu11", "-static", "-o", str(exe), str(SOURCE)], check=True)
    path = workdir / "clockmark.cpio.gz"
    path.write_bytes(guest.run_cpio({PROGRAM: exe.read_bytes()}, executables={PROGRAM}))
    return path


def offsets(point) -> tuple[list, str | None]:
    """(marker, cpu, ns outside its two clock reads) per marker, and the step-back check."""
    reads = {}
    for line in point.stdout.splitlines():
        name, before, after = line.split()
        reads[name] = (int(before), int(after))
    events = [e for e in map(parse_line, guest_point.trace_lines(point.files)) if e]
    rows = [(e["msg"], e["cpu"], max(0, e["ts"] - reads[e["msg"]][1], reads[e["msg"]][0] - e["ts"]))
            for e in events if e.get("msg") in reads]
    check = getattr(guest_point, "cpu_step_back", None)   # a checkout before the check has none
    return rows, check(events) if check else "not checked by this checkout"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="3.4.2")
    ap.add_argument("--markers", type=int, default=300)
    ap.add_argument("--gap-us", type=int, default=5000)
    args = ap.parse_args(argv)
    machine = parse_machine(f"guest:clock=lockstep,cpus=4,mhz=1600,kernel={args.kernel}")
    with tempfile.TemporaryDirectory(prefix="abt-tracepages-") as tmp:
        disk = guest_disk.for_profile("none", 256, machine.depth, machine.mem, machine.guest_kernel)
        mkfs = scratch_geometry({}).mkfs_args(True, zeroed=True, features=machine.guest_kernel.mkfs_features)
        runs = [guest.GuestRun(argv=[f"/abt/{PROGRAM}", str(args.markers), str(args.gap_us)], disk=disk,
                               mkfs_args=mkfs)]
        res = guest.boot_batch(runs, machine, Path(tmp), overlays=[overlay(Path(tmp))], timeout=1800)
    point = res.points[0]
    if point.rc != 0:
        log = point.files.get("mkfs.log", b"").decode(errors="replace")[-300:]
        raise SystemExit(f"{PROGRAM} failed in the guest ({point.status}, rc {point.rc}): {point.stderr}{log}")
    rows, back = offsets(point)
    slack = guest_point.clock_slack_ns(machine)
    off = [r for r in rows if r[2] > slack]
    print(f"{machine.label}, kernel build {guest.kernel_build(machine.guest_kernel)} "
          f"(VIRTUAL time): {len(rows)} markers {args.gap_us} us apart, {len(off)} stamped outside "
          f"their CLOCK_MONOTONIC reads by more than {slack / 1e3:.1f} us"
          + (f" (by {min(r[2] for r in off) / 1e3:.1f}-{max(r[2] for r in off) / 1e3:.1f} us, "
             f"on CPUs {sorted({r[1] for r in off})})" if off else "")
          + f"; a CPU's trace stepping back: {back or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
