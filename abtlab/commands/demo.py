"""`abtlab demo --out DIR [--sim] [--quiet]`: the end-to-end demo behind `make demo`."""
__all__ = ["register"]


def register(sub):
    p = sub.add_parser("demo", help="run the study notebooks into an HTML report (DIR/index.html; "
                                    "pip install 'abtlab[notebooks]')")
    p.add_argument("--out", default="demo-out")
    p.add_argument("--sim", action="store_true", help="use the simulator even where root is available")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..present.demo import run_demo_report
    outcomes, page = run_demo_report(args.out, quiet=args.quiet, force_sim=args.sim)
    ok = sum(o.status == "ok" for o in outcomes)
    print(f"report: {page} ({ok} of {len(outcomes)} notebooks ran without error)")
    return 0 if ok == len(outcomes) else 1
