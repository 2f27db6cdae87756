"""`abtlab sera table|lookup|libsera|compare`: SERA-IO target-frequency tables and policies."""
from __future__ import annotations

from ..errors import ConfigError

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("sera", help="SERA-IO frequency tables, libsera, policy comparison")
    acts = p.add_subparsers(dest="sera_action", metavar="ACTION", required=True)
    t = acts.add_parser("table", help="target frequencies of a profile CSV (Ge, Feng and Sun, 'SERA-IO', "
                                          "IEEE/ACM CCGrid 2012, Table III)")
    t.add_argument("profile", help="CSV: pattern,[type],freq_ghz,time_ms,avg_power_w")
    t.add_argument("--threshold-ms", type=float, default=1.0, help="type I below this (1 ms)")
    t.set_defaults(func=_table)
    lk = acts.add_parser("lookup", help="look an access up in a table file")
    lk.add_argument("table")
    lk.add_argument("op")
    lk.add_argument("size", help="e.g. 2MB")
    lk.add_argument("--locality", default="contiguous")
    lk.add_argument("--collective", default="no")
    lk.add_argument("--blocking", default="yes")
    lk.set_defaults(func=_lookup)
    lb = acts.add_parser("libsera", help="write a table file for backends/sera/libsera.so")
    lb.add_argument("table")
    lb.add_argument("--out", required=True)
    lb.add_argument("--guard-ns", type=int, default=1_000_000)
    lb.add_argument("--hold-ns", type=int, default=0)
    lb.set_defaults(func=_libsera)
    c = acts.add_parser("compare", help="fixed-high, fixed-low, ondemand, sera, abt-aware")
    c.add_argument("--source", choices=("sim", "emulated"), default="sim",
                   help="sim: abtlab.sim (simulated); emulated: real ext4, emulated frequency")
    c.add_argument("--workloads", default="iozone,metarates,fio-seq,mixed")
    c.add_argument("--freqs", default="0.8,1.3,1.8,2.5", help="GHz (the cluster of Ge, Feng and Sun, CCGrid 2012)")
    c.add_argument("--reps", type=int, default=3)
    c.add_argument("--threads", type=int, help="emulated: threads/workers (default 64)")
    c.add_argument("--out", help="also write the rows as CSV")
    c.set_defaults(func=_compare)


def _table(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..sera import load_profile, target_frequency
    for label, prof in load_profile(args.profile).items():
        f, kind = target_frequency(prof, args.threshold_ms / 1e3)
        edp = ", ".join(f"{p.freq_ghz:g} GHz {p.edp:.4g} J*s" for p in prof.points)
        print(f"{label}: type {kind} -> {f:g} GHz  (EDP {edp}; {prof.time_mode} data)")
    return 0


def _lookup(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..sera import IOPattern, load
    table = load(args.table)
    pattern = IOPattern.make(args.op, args.size, args.locality, args.collective, args.blocking)
    f, entry = table.lookup(pattern)
    print(f"{pattern.describe()}: {f:g} GHz" + ("" if entry else " (no entry: highest)"))
    return 0


def _libsera(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..sera import load, write_table
    path = write_table(load(args.table), args.out, guard_ns=args.guard_ns, hold_ns=args.hold_ns)
    print(f"wrote {path}")
    return 0


def _compare(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from .. import sera
    try:
        freqs = [float(f) for f in args.freqs.split(",")]
    except ValueError:
        raise ConfigError("--freqs", args.freqs, "comma-separated GHz, e.g. 0.8,1.3,2.5") from None
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if args.source == "sim":
        wl = sera.sim_workloads(names, freqs, reps=args.reps)
    else:
        wl = sera.emulated_workloads(names, freqs, reps=args.reps, threads=args.threads)
    df = sera.compare(wl, freqs)
    cols = ["workload", "policy", "time_s", "io_time_s", "energy_j", "edp", "freqs_ghz",
            "time_s_vs_fixed-high", "io_time_s_vs_fixed-high", "energy_j_vs_fixed-high",
            "edp_vs_fixed-high", "time_mode", "energy_mode"]
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"energy: {df.attrs['power_model']} ({df.attrs['power_model_source']}); "
          f"time: {', '.join(sorted(set(df.time_mode)))}")
    if args.out:
        df.to_csv(args.out, index=False)
    return 0
