"""`abtlab demo --out DIR`: the end-to-end demo behind `make demo`."""
__all__ = ["register"]


def register(sub):
    p = sub.add_parser("demo", help="small end-to-end study ending in an HTML page")
    p.add_argument("--out", default="demo-out")
    p.add_argument("--sim", action="store_true", help="use the simulator even where root is available")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def main(args):
    from ..demo import run_demo
    page = run_demo(args.out, quiet=args.quiet, force_sim=args.sim)
    print(f"report: {page}")
    return 0
