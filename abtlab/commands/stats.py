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
    p.add_argument("--format", default="text", choices=("text", "markdown", "json"),
                   help="text (default: tables within 100 columns), markdown (GitHub tables) "
                        "or json (one object: the run, the variable, its unit, the tables)")
    p.set_defaults(func=main)


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..data.checks import check_abtlab_dataset, check_frequencies
    from ..data.store import load
    from ..model.remeasure import upgrade
    from ..present.stats_tables import render, stats_tables
    from ..present.summary import headline
    from ..stats.values import provenance_label
    ds = load(args.run)
    check_abtlab_dataset(ds, args.run)
    ds = upgrade(ds)
    args.var = args.var or headline(ds) or "throughput"
    if args.slowdown or args.test:
        check_frequencies(ds, args.var, "--slowdown" if args.slowdown else "--test")
    head = {"run": str(args.run), "var": args.var, "backend": ds.attrs.get("backend", "?"),
            "data": provenance_label(ds), "freq_mode": ds.attrs.get("freq_mode", "?"),
            "note": ds.attrs.get("remeasured", "")}
    print(render(head, stats_tables(ds, args), args.format))
    if args.pyperf:
        # deferred: every command module loads for `abtlab --help` (see commands/__init__)
        from ..present.pyperf_export import export_pyperf
        r = export_pyperf(ds, args.pyperf, args.var)
        print(f"\nwrote {r['path']}: {r['benchmarks']} benchmarks, {r['runs']} runs"
              + (f", {len(r['skipped'])} points without data skipped" if r["skipped"] else ""))
    return 0
