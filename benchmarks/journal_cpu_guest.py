"""The journal thread's CPU per commit on the paper's machine in the guest (virtual time).

    .venv/bin/python -m benchmarks.journal_cpu_guest [--mhz 1600,3300] [--reps 2]
        [--threads 256] [--file-size 128k] [--record 32k] [--start poll|barrier]
        [--kernel 3.4.2] [--cpus 4] [--seed 5]

benchmarks.journal_cpu measures this host's jbd2; this runs IOzone's cell in the guest
(`guest:kernel=K,clock=lockstep,cpus=N,mhz=F`: every vCPU at the clock, kernel threads
too) and reads the journal thread's `se.sum_exec_runtime` from `/proc/PID/sched` right
before and after the workload, and the journal's commit count from
`/proc/fs/jbd2/<dev>/info`: CPU per commit at each clock, the simulator's
`commit_cpu_us` as this machine spends it. One boot per clock, its repetitions each on
a fresh filesystem at their own seeded start phase.
"""
from __future__ import annotations

import argparse
import re
import shlex
import sys
import tempfile
from pathlib import Path

from abtlab.backends.base import RunContext
from abtlab.factors.levels import parse_size
from abtlab.machines import guest, guest_point
from abtlab.machines.spec import parse_machine

_SCHED = re.compile(r"sum_exec_runtime\s*:\s*([0-9.]+)")


def _runs(machine, mhz: int, a) -> list:
    fsize, rsize = parse_size(a.file_size, "--file-size"), parse_size(a.record, "--record")
    point = {"policy": "ext4", "freq_ghz": mhz / 1000, "threads": a.threads, "file_size": fsize,
             "record_size": rsize, "device": "hdd7200", "machine": machine.label}
    runs = []
    for rep in range(a.reps):
        ctx = RunContext(Path(tempfile.gettempdir()), rep=rep, seed=a.seed, freq_mode="virtual",
                         f_ref_ghz=mhz / 1000, options={"start": a.start})
        argv = lambda d, dil, tp: ["/x/abt-iozone", "--threads", a.threads, "--file-size", fsize,
                                   "--record-size", rsize, "--dir", d, "--dilate", f"{dil:.6f}",
                                   "--trace", tp, "--fsync", "--start", a.start]
        run, _ = guest_point.guest_run(argv, point, ctx, a.threads * fsize, machine, rep + 1,
                                       trace_from_go=a.start == "poll")
        read = "p=$(pidof jbd2/ram0-8 jbd2/nullb%d-8); grep sum_exec_runtime /proc/$p/sched" % (rep + 1)
        run.argv = ["/bin/sh", "-c", f"{read}; {' '.join(shlex.quote(str(x)) for x in run.argv)}; {read}"]
        runs.append(run)
    return runs


def measure(mhz: int, a) -> list:
    """[(jbd2 CPU ms, commits)] per repetition at one clock."""
    machine = parse_machine(f"guest:kernel={a.kernel},clock=lockstep,cpus={a.cpus},mhz={mhz}")
    with tempfile.TemporaryDirectory(prefix="abtlab-jcpu-") as work:
        res = guest.boot_batch(_runs(machine, mhz, a), machine, Path(work), timeout=3600)
    out = []
    for p in res.points:
        ms = [float(x) for x in _SCHED.findall(p.stdout)]
        if p.status != "ok" or p.rc != 0 or len(ms) < 2:
            raise SystemExit(f"{mhz} MHz: point failed ({p.status}, rc {p.rc}): {p.stderr[-300:]}")
        out.append((ms[-1] - ms[0], p.info_after["transactions"] - p.info_before["transactions"]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.journal_cpu_guest", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mhz", default="1600,3300")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--file-size", default="128k")
    ap.add_argument("--record", default="32k")
    ap.add_argument("--start", choices=("poll", "barrier"), default="poll")
    ap.add_argument("--kernel", default="3.4.2")
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args(argv)
    print(f"jbd2's CPU per commit, guest:kernel={a.kernel},clock=lockstep,cpus={a.cpus} (VIRTUAL time), "
          f"IOzone {a.threads} x {a.file_size}/{a.record}, ext4, {a.start} start, hdd7200")
    for mhz in (int(m) for m in a.mhz.split(",")):
        rows = measure(mhz, a)
        cpu, commits = sum(r[0] for r in rows), sum(r[1] for r in rows)
        each = ", ".join(f"{ms * 1000:.0f} us / {n}" for ms, n in rows)
        print(f"{mhz / 1000:g} GHz: {cpu * 1000 / max(commits, 1):.0f} us a commit "
              f"({each} per repetition: CPU / commits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
