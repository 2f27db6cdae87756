"""`abtlab compare A.nc B.nc [--var V]`: two runs side by side, pyperf compare_to style."""
from __future__ import annotations

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("compare", help="compare two runs point by point: ratio B/A, CI, test",
                       description="For every point the two runs share: the means of --var, the "
                                   "ratio B/A with its Fieller CI, a two-sided Welch t-test on logs "
                                   "(Holm over the points) and a verdict: faster, slower or not "
                                   "significant (as pyperf compare_to).")
    p.add_argument("a", metavar="A", help="the reference run (.nc or .zarr)")
    p.add_argument("b", metavar="B", help="the run compared with it")
    p.add_argument("--var", help="variable (default: A's own, throughput or fcr)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--alpha", type=float, default=0.05, help="test level (default 0.05)")
    p.add_argument("--format", default="text", choices=("text", "markdown", "json"))
    p.set_defaults(func=main)


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..data.checks import check_abtlab_dataset
    from ..data.store import load
    from ..errors import ConfigError
    from ..model.remeasure import upgrade
    from ..present.stats_tables import compare_table, render
    from ..present.summary import headline
    from ..stats.compare import compare_runs
    from ..stats.values import provenance_label
    if not 0 < args.alpha < 1:
        raise ConfigError("--alpha", args.alpha, "a number between 0 and 1")
    a, b = load(args.a), load(args.b)
    check_abtlab_dataset(a, args.a, "A")
    check_abtlab_dataset(b, args.b, "B")
    a, b = upgrade(a), upgrade(b)
    var = args.var or headline(a) or "throughput"
    df = compare_runs(a, b, var, args.level, args.alpha)
    head = {"run": f"A={args.a} ({provenance_label(a)}) vs B={args.b} ({provenance_label(b)})",
            "var": var, "backend": f"{a.attrs.get('backend', '?')}/{b.attrs.get('backend', '?')}",
            "data": "", "freq_mode": f"{a.attrs.get('freq_mode', '?')}/{b.attrs.get('freq_mode', '?')}"}
    print(render(head, [compare_table(df)], args.format))
    return 0
