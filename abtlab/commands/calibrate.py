"""`abtlab calibrate RUN.nc [--out params.toml]`: fit simulator parameters from a run."""
from __future__ import annotations

import pathlib
import sys

from ..errors import ConfigError

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("calibrate", help="fit the simulator's parameters from a run's traces",
                       description="Fits CPU time per op (at the reference frequency, on "
                                   "the write op's quiet durations), the commit's device cost "
                                   "and lock time, the journal thread's CPU and wake-up, and "
                                   "the data flush time from every run's op and commit "
                                   "traces; takes the start, cores, slices and disk from the "
                                   "run's settings; prints or writes TOML for abtlab.sim "
                                   "(params=FILE, -o params=FILE), whose [calibration] table "
                                   "names what was measured and what is a default.")
    p.add_argument("run", help="a run dataset (NetCDF) with op and commit traces")
    p.add_argument("--out", help="write the parameters to this TOML file (default: print)")
    p.add_argument("--validate", action="store_true",
                   help="then simulate the run's points with them and print the relative "
                        "error of each point's mean (both throughputs, unblocked writers, "
                        "commits) and the fast/slow clock ratios, measured vs simulated "
                        "(abtlab.sim.validate)")
    p.add_argument("--sel", action="append", default=[], metavar="FACTOR=VALUE",
                   help="fit (and validate) only the runs at this level of a factor, e.g. "
                        "machine=guest:kernel=6.1-legacy or policy=ext4; repeatable")
    p.add_argument("--reps", type=int, default=20, help="simulated repetitions per point (--validate)")
    p.add_argument("--seed", type=int, default=0, help="simulator seed (--validate)")
    p.set_defaults(func=main)


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..sim.calibration import calibrate, to_toml
    from ..data.store import load
    if not pathlib.Path(args.run).is_file():
        raise ConfigError("run", args.run, "an existing run dataset file (.nc)")
    if args.validate and args.reps < 1:
        raise ConfigError("reps", args.reps, "an integer >= 1 (simulated repetitions per point)")
    real = load(args.run)
    sel = _selection(real, args.sel)
    params = calibrate(real, **sel)
    if defaults := params["calibration"]["defaults"]:
        print("abtlab calibrate: warning: not fitted from these runs, the simulator's defaults "
              "apply: " + ", ".join(defaults), file=sys.stderr)
    real = real.sel({k: [v] for k, v in sel.items()})
    text = to_toml(params)
    if args.out:
        pathlib.Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    elif not args.validate:
        print(text, end="")
    if args.validate:
        # deferred: every command module loads for `abtlab --help` (see commands/__init__)
        from ..sim.validate import compare, format_ratios, format_table, ratios, simulate_like
        sim = simulate_like(real, params, reps=args.reps, seed=args.seed)
        cmp = compare(real, sim)
        print(format_table(cmp))
        if cmp.sizes.get("freq_ghz", 0) >= 2:
            print(format_ratios(ratios(cmp)))
    return 0


def _selection(ds, items) -> dict:
    """{factor: level} of --sel FACTOR=VALUE items, each a level of the dataset."""
    out = {}
    for item in items:
        key, _, text = item.partition("=")
        key = key.strip()
        if key not in ds.dims or key not in ds.coords:
            raise ConfigError("sel", item, "FACTOR=VALUE with a factor of the run: "
                              + ", ".join(d for d in ds.dims if d in ds.coords))
        levels = [v.item() for v in ds[key].values]
        match = [v for v in levels if str(v) == text.strip() or _same_number(v, text)]
        if not match:
            raise ConfigError("sel", item, f"a level of {key}: " + ", ".join(map(str, levels)))
        out[key] = match[0]
    return out


def _same_number(level, text) -> bool:
    try:
        return not isinstance(level, str) and float(level) == float(text)
    except ValueError:
        return False
