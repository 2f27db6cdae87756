"""`abtlab stats RUN.nc`: per-point summary, slowdown ratios, tests, ANOVA, pyperf export."""
from __future__ import annotations

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("stats", help="statistics of a run: CIs, slowdown ratios, tests, ANOVA",
                       description="Prints the per-point mean, CI and RSD of --var; more tables "
                                   "with --slowdown, --test, --anova; --pyperf writes a pyperf "
                                   "JSON suite for `python -m pyperf compare_to`.")
    p.add_argument("run", help="a run dataset (.nc or .zarr) written by `abtlab run` or a sweep")
    p.add_argument("--var", help="variable to analyse (default: the run's own, throughput for "
                                 "IOzone-like runs, fcr for Metarates)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--slowdown", action="store_true",
                   help="ratio of the mean at each freq_ghz to the mean at --ref, with CI")
    p.add_argument("--ref", type=float, help="reference freq_ghz (default: the lowest)")
    p.add_argument("--ci", default="fieller", help="ratio CI: fieller | delta | bootstrap")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--test", action="store_true",
                   help="one-sided Welch test on logs of 'var at --f-high < var at --f-low'")
    p.add_argument("--f-low", dest="f_low", type=float, help="default: lowest freq_ghz")
    p.add_argument("--f-high", dest="f_high", type=float, help="default: highest freq_ghz")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--correction", default="holm", help="holm | fdr_bh | bonferroni | ...")
    p.add_argument("--anova", action="store_true", help="type-2 ANOVA of log(var) on the factors")
    p.add_argument("--order", type=int, help="highest interaction order in the ANOVA (default: all)")
    p.add_argument("--pyperf", metavar="OUT.json", help="write a pyperf JSON suite of --var")
    p.set_defaults(func=main)


def _show(title, frame):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    import pandas as pd
    print(f"\n== {title}")
    with pd.option_context("display.max_rows", 500, "display.max_columns", 50,
                           "display.width", 200):
        print(frame.to_string())


def _drop_constant(df, keep=()):
    """Hide factor columns with one level: they say nothing in a printed table."""
    return df[[c for c in df.columns if c in keep or df[c].nunique(dropna=False) > 1]]


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from .. import stats
    from ..data.store import load
    from ..model.remeasure import upgrade
    from ..stats.iozone_view import has_both_throughputs, iozone_view
    from ..stats.values import provenance_label
    from ..present.summary import headline
    ds = upgrade(load(args.run))
    args.var = args.var or headline(ds) or "throughput"
    print(f"{args.run}: {args.var}, backend {ds.attrs.get('backend', '?')}, "
          f"{provenance_label(ds)} (freq_mode={ds.attrs.get('freq_mode', '?')})")
    if "remeasured" in ds.attrs:
        print(f"note: {ds.attrs['remeasured']}")
    cols = ("mean", "ci_low", "ci_high", "rsd", "n")
    summ = stats.point_summary(ds, args.var, args.level).to_dataframe().reset_index()
    units = ds[args.var].attrs.get("units", "") if args.var in ds else ""
    _show(f"per point: mean, {args.level:.0%} CI ({units or 'no units'}), RSD, n",
          _drop_constant(summ, cols))
    if args.slowdown:
        sd = stats.slowdown_table(stats.slowdown(ds, args.var, args.ref, args.level,
                                                 args.ci, seed=args.seed))
        _show(f"ratio to {sd.attrs['ref_freq_ghz']} GHz, {args.ci} CI (below 1 = slower at that "
              f"frequency)",
              _drop_constant(sd.drop(columns=["ratio", "ci_low", "ci_high"]), ("slowdown",)))
    if args.test:
        t = stats.test_slowdown(ds, args.var, args.f_low, args.f_high, args.alpha,
                                args.correction, args.level, args.ci)
        _show(f"test: {args.var} at {t.attrs['f_high']} GHz < at {t.attrs['f_low']} GHz "
              f"({t.attrs['test']}, {args.correction}, alpha={args.alpha})",
              _drop_constant(t, ("p", "p_adj", "reject")))
    if (args.slowdown or args.test) and args.var == "throughput" and has_both_throughputs(ds):
        v = iozone_view(ds, args.f_low, args.f_high, args.level, args.ci)
        _show(f"as the paper measures: throughput {v.attrs['f_high']:g}/{v.attrs['f_low']:g} GHz "
              f"with the write op timed (eq. 3; IOzone's default report, without and "
              f"with stonewalling) and with fsync timed (IOzone -e), {args.level:.0%} {args.ci} CIs, below 1 = slower at the faster "
              f"clock; unblocked threads (eq. 4, mean) per clock, and the ratio eq. 3 gives from "
              f"them (clock ratio x unblocked ratio)", _drop_constant(v, tuple(c for c in v.columns if "/" in c or "unblocked" in c)))
    if args.anova:
        _show(f"ANOVA (type 2) of log({args.var})", stats.anova(ds, args.var, order=args.order))
    if args.pyperf:
        # deferred: every command module loads for `abtlab --help` (see commands/__init__)
        from ..present.pyperf_export import export_pyperf
        r = export_pyperf(ds, args.pyperf, args.var)
        print(f"\nwrote {r['path']}: {r['benchmarks']} benchmarks, {r['runs']} runs"
              + (f", {len(r['skipped'])} points without data skipped" if r["skipped"] else ""))
    return 0
