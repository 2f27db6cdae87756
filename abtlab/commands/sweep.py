"""`abtlab sweep SPEC.toml --out PATH [--resume]`: run a sweep spec."""
import sys

from .run import _points, failed_runs

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("sweep", help="run a sweep spec (TOML): factors, repetition rule, execution",
                       description="See abtlab/sweep/spec.py for the format. Each finished run is "
                                   "written atomically; --resume continues after a crash or kill -9.")
    p.add_argument("spec")
    p.add_argument("--out", help="output NetCDF (overrides the spec's out)")
    p.add_argument("--machine", help="overrides the spec's machine factor: host or "
                   "guest[:key=value,...], ';'-separated")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--keep-going", dest="keep_going", action="store_true", default=None,
                   help="a run that fails is left missing (listed in the dataset's failed_runs "
                        "and on stderr) and the sweep goes on; exit status 1 when any failed "
                        "(the spec's [execution] keep_going = true does the same)")
    p.add_argument("--force", action="store_true",
                   help="replace what is at --out (a finished dataset, unfinished parts, a file)")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="fail at once if another real run holds this machine (default: wait)")
    p.add_argument("--sitting", type=int, metavar="K",
                   help="run only the spec's sitting K (from 1; [[sittings]]) into --out, as it "
                        "is kept beside a pooled output")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..sweep.spec import load_spec, run_spec
    from ..sweep.sittings import only_sitting
    spec = load_spec(args.spec)
    if args.sitting is not None:
        spec = only_sitting(spec, args.sitting)
    if args.machine is not None:
        spec.factors["machine"] = args.machine
    ds = run_spec(spec, out=args.out, resume=args.resume, quiet=args.quiet,
                  command="abtlab " + " ".join(sys.argv[1:]), force=args.force, wait=args.wait,
                  dataset=False, keep_going=args.keep_going)   # written and summarised without xarray
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..present.summary import summary_text
    print(summary_text(ds))
    print(f"wrote {args.out or spec.out}: {_points(ds)}")
    return failed_runs(ds, "abtlab sweep")
