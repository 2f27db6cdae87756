"""`abtlab cleanup`: undo what killed abtlab runs left (mounts, loop devices, ..., output
locks and torn dataset files)."""
import os

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("cleanup", help="undo what abtlab runs killed with kill -9 left behind "
                       "(every real run also does this before it starts), and remove their "
                       "output locks and torn dataset files (.OUT.tmp-PID) beside their outputs")
    p.add_argument("--dry-run", action="store_true", help="only list what would be undone")
    p.add_argument("--dir", action="append", default=[],
                   help="also look in this work directory (a run's -o workdir)")
    p.set_defaults(func=main)


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..system import leftovers, runlock
    roots = (*leftovers.default_roots(), *args.dir)
    machine = leftovers.find(roots=roots).describe()
    # output locks of killed writers and the torn dataset files beside their outputs:
    # the user's own files, which need no root
    outputs = runlock.stale_outputs()
    found = machine + [line for o in outputs for line in o.describe()]
    if not found:
        print("nothing left by killed abtlab processes")
        return 0
    if args.dry_run:
        print("left by killed abtlab processes:\n" + "\n".join(f"  {line}" for line in found))
        return 0
    done, failed = [], []
    if machine and os.geteuid() == 0:
        done += leftovers.reclaim(roots=roots, quiet=True, failed=failed)
    for o in outputs:
        try:
            runlock.remove_stale(o)
            done += o.describe()
        except OSError as exc:         # every other step still runs
            failed.append(f"{o.lock}: {exc}")
    _say("undone", done)
    _say("failed", failed)
    if machine and os.geteuid() != 0:
        _say("left by killed abtlab processes (root can undo it)", machine)
        return 1
    return 1 if failed else 0


def _say(head, lines):
    if lines:
        print(f"{head}:\n" + "\n".join(f"  {line}" for line in lines))
