"""`abtlab trace [--out PATH] -- COMMAND ...`: record every POSIX I/O call of a program."""
from __future__ import annotations

import sys

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("trace", help="run a program under libabtrace and write one I/O trace",
                       description="Records read/write/pread/pwrite/readv/writev/fsync/fdatasync/"
                                   "open/close of the program, its threads and its children.")
    p.add_argument("--out", default="abtrace.trace",
                   help="trace file to write, or a directory for DIR/abtrace.trace "
                        "(default ./abtrace.trace)")
    p.add_argument("--max-records", type=int, default=None,
                   help="records kept per thread (default 1048576); further calls are counted")
    p.add_argument("command", nargs="+", help="the program and its arguments (after --)")
    p.set_defaults(func=main)


def main(args) -> int:
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..bps import metrics
    from ..trace.recorder import record
    rec = record(args.command, out=args.out, max_records=args.max_records)
    m = metrics(rec.records)
    dropped = sum(rec.dropped.values())
    print(f"abtlab trace: {rec.records.size} calls from {rec.processes} process(es), "
          f"{rec.threads} thread(s) -> {rec.path}", file=sys.stderr)
    print(f"abtlab trace: {m['ops']} data calls, {m['bytes']} bytes, BPS {m['bps']:.4g} "
          f"blocks/s over {m['overlap_s']:.6f} s of I/O", file=sys.stderr)
    if dropped:
        print(f"abtlab trace: {dropped} calls NOT recorded (buffer limit); raise --max-records",
              file=sys.stderr)
    return rec.returncode if rec.returncode >= 0 else 128 - rec.returncode
