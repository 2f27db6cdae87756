"""`abtlab doctor`: what can run here and why not."""
__all__ = ["register"]


def register(sub):
    p = sub.add_parser("doctor", help="what can run on this machine, and why not")
    p.add_argument("--host", action="store_true",
                   help="only how quiet the host is for a measurement: CPU load, frequency "
                        "governor, other abtlab runs, swap (exit status 1 when it is not)")
    p.set_defaults(func=main)


def _host():
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..system.quietness import check
    q = check()
    print(f"host: {q.line()}")
    warnings = q.warnings()
    for w in warnings:
        print(f"  not quiet: {w}")
    print("  quiet enough for a host run" if not warnings else
          "  a host run now would be disturbed (its dataset records this line: attr host_quiet)")
    return 1 if warnings else 0


def main(args):
    if args.host:
        return _host()
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..backends import get, names
    from ..machines.doctor import render, report
    from ..system import leftovers
    drivers = []
    for n in names():
        try:
            drivers.append(get(n))
        except Exception:   # reported with the backends below
            pass
    print(render(report(drivers)))
    left = leftovers.find().describe()
    if left:
        print("\nleft by killed abtlab processes (`abtlab cleanup` undoes it):")
        print("\n".join(f"  {line}" for line in left))
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..extras import status
    print("\noptional parts (pip install 'abtlab[NAME]'; 'abtlab[all]': every one):")
    for extra, gone, feature in status():
        print(f"  {'no ' if gone else 'ok '} {extra:10s} {feature}"
              + (f" (missing: {', '.join(gone)})" if gone else ""))
    print("\nbackends:")
    for n in names():
        try:
            a = get(n).available()
            print(f"  {'ok ' if a.ok else 'no '} {n:10s} {a.reason}")
        except Exception as exc:  # a backend that fails to load is reported, not fatal
            print(f"  no  {n:10s} failed to load: {exc}")
    return 0
