"""`abtlab calibrate RUN.nc [--out params.toml]`: fit simulator parameters from a run."""
from __future__ import annotations

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("calibrate", help="fit the simulator's parameters from a run's traces",
                       description="Fits CPU time per op (at the reference frequency), the "
                                   "commit's device cost and lock time, and the data flush "
                                   "time from every run's op and commit traces; prints or "
                                   "writes TOML for abtlab.sim (params=FILE, -o params=FILE).")
    p.add_argument("run", help="a run dataset (NetCDF) with op and commit traces")
    p.add_argument("--out", help="write the parameters to this TOML file (default: print)")
    p.add_argument("--validate", action="store_true",
                   help="then simulate the run's points with them and print the relative "
                        "error of each point's mean (abtlab.sim.validate)")
    p.add_argument("--reps", type=int, default=20, help="simulated repetitions per point (--validate)")
    p.add_argument("--seed", type=int, default=0, help="simulator seed (--validate)")
    p.set_defaults(func=main)


def main(args):
    import pathlib

    from ..errors import ConfigError
    from ..sim.calibration import calibrate, to_toml
    from ..data.store import load
    if not pathlib.Path(args.run).is_file():
        raise ConfigError("run", args.run, "an existing run dataset file (.nc)")
    if args.validate and args.reps < 1:
        raise ConfigError("reps", args.reps, "an integer >= 1 (simulated repetitions per point)")
    real = load(args.run)
    params = calibrate(real)
    text = to_toml(params)
    if args.out:
        pathlib.Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    elif not args.validate:
        print(text, end="")
    if args.validate:
        from ..sim.validate import compare, format_table, simulate_like
        sim = simulate_like(real, params, reps=args.reps, seed=args.seed)
        print(format_table(compare(real, sim)))
    return 0
