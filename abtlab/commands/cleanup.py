"""`abtlab cleanup`: undo what killed abtlab runs left (mounts, loop devices, ...)."""
__all__ = ["register"]


def register(sub):
    p = sub.add_parser("cleanup", help="undo what abtlab runs killed with kill -9 left behind "
                       "(every real run also does this before it starts)")
    p.add_argument("--dry-run", action="store_true", help="only list what would be undone")
    p.add_argument("--dir", action="append", default=[],
                   help="also look in this work directory (a run's -o workdir)")
    p.set_defaults(func=main)


def main(args):
    import os
    import warnings
    from ..system import leftovers
    roots = (*leftovers.default_roots(), *args.dir)
    found = leftovers.find(roots=roots).describe()
    if not found:
        print("nothing left by killed abtlab processes")
        return 0
    if args.dry_run or os.geteuid() != 0:
        print("left by killed abtlab processes" + ("" if args.dry_run else " (root can undo it)") + ":")
        print("\n".join(f"  {line}" for line in found))
        return 0 if args.dry_run else 1
    failed: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        done = leftovers.reclaim(roots=roots, quiet=True, failed=failed)
    print("undone:\n" + "\n".join(f"  {line}" for line in done))
    if failed:              # every other step still ran
        print("failed:\n" + "\n".join(f"  {line}" for line in failed))
    return 1 if failed else 0
