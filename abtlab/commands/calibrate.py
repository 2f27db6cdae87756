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
    p.set_defaults(func=main)


def main(args):
    import pathlib

    from ..errors import ConfigError
    from ..sim.calibration import calibrate, to_toml
    from ..store import load
    if not pathlib.Path(args.run).is_file():
        raise ConfigError("run", args.run, "an existing run dataset file (.nc)")
    text = to_toml(calibrate(load(args.run)))
    if args.out:
        pathlib.Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0
