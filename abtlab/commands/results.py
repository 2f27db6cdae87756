"""`abtlab results list | show NAME | check NAME [--quick] | add NAME FILE | render |
gallery`: the stored results every page quotes (data/results/index.toml), and the
gallery's executed notebooks."""
from __future__ import annotations

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("results", help="the stored results pages quote: list, show, re-check, "
                                       "add, render the pages",
                       description="Every number a page quotes comes from a stored result in "
                                   "data/results/ (index.toml names each, its file, the command "
                                   "that regenerates it and what it shows).")
    p.add_argument("--root", help="the registry's folder (default: $ABTLAB_RESULTS, else "
                                  "data/results of this checkout)")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    acts.add_parser("list", help="each result: name, file, what it shows")
    s = acts.add_parser("show", help="a result's command, provenance and quoted numbers")
    s.add_argument("name")
    c = acts.add_parser("check", help="re-run a result's command and compare point by point")
    c.add_argument("name")
    c.add_argument("--quick", action="store_true", help="run its smaller quick version")
    c.add_argument("--level", type=float, default=0.95, help="family confidence level")
    a = acts.add_parser("add", help="register a result from an existing run dataset")
    a.add_argument("name")
    a.add_argument("file", help="the run's dataset (.nc or .zarr)")
    a.add_argument("--command", required=True,
                   help="the command that regenerates it, {out} for its output path")
    a.add_argument("--says", required=True, help="one sentence: what it shows")
    a.add_argument("--var", default="throughput", help="the quantity it is about")
    a.add_argument("--quick", default="", help="a smaller version of --command, with {out}")
    r = acts.add_parser("render", help="rewrite the numbers between result markers in "
                                       "README.md and docs/ from the stored results")
    r.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 when a page is out of date or quotes a CI "
                        "no stored result gives")
    g = acts.add_parser("gallery", help="execute gallery notebooks into docs/gallery/ (the docs "
                                        "build shows these copies and runs nothing)")
    g.add_argument("names", nargs="*", help="notebook names (default: every executed one)")
    p.set_defaults(func=main)


def main(args):
    from ..results import registry
    folder = args.root or registry.root()
    return {"list": _list, "show": _show, "check": _check, "add": _add,
            "render": _render, "gallery": _gallery}[args.action](args, folder)


def _gallery(args, folder):
    from ..results.gallery import PARAMETERS, execute
    for name in args.names or PARAMETERS:
        print(f"executed {execute(name)}")
    return 0


def _list(args, folder):
    from ..results import registry
    for r in registry.read(folder).values():
        print(f"{r.name:28s} {r.file:34s} {'quick ' if r.quick else '      '}{r.says}")
    return 0


def _show(args, folder):
    from ..data.store import load
    from ..results import registry
    from ..results.quotes import quote
    r = registry.get(args.name, folder)
    ds = load(r.path(folder))
    print(f"{r.name}: {r.says}\n  file     {r.path(folder)}\n  command  {r.command}")
    if r.quick:
        print(f"  quick    {r.quick}")
    for key in ("abtlab_commit", "seed", "machine", "clock", "freq_mode", "kernel",
                "host_minutes", "date", "reduced_from"):
        if key in ds.attrs:
            print(f"  {key:8s} {ds.attrs[key]}")
    if "freq_ghz" not in ds[r.var].dims:        # a lab's table, or a grid without a clock
        from ..results.table_quotes import summary
        for line in summary(ds, r.var):
            print(f"    {line}")
        return 0
    dims = [d for d in ds[r.var].dims if d not in ("rep", "freq_ghz") and ds.sizes[d] > 1]
    print(f"  {r.var} at the highest / the lowest clock, 95% CI:")
    for where in _configs(ds, dims):
        label = ", ".join(f"{k}={v}" for k, v in where.items()) or "all"
        print(f"    {label}: {quote(ds, 'ratio', r.var, **where)}")
    return 0


def _configs(ds, dims):
    import itertools
    levels = [[str(v) for v in ds[d].values] for d in dims]
    return [dict(zip(dims, combo)) for combo in itertools.product(*levels)]


def _check(args, folder):
    from ..results.check import check, verdict
    r, claims, points = check(args.name, args.quick, folder, args.level)
    print(f"{r.name}: re-ran {'the quick version' if args.quick else 'its command'}: "
          f"{r.quick if args.quick else r.command}")
    if claims:
        print(f"  the claim: {r.var} at the highest / the lowest clock, new / stored, "
              f"{args.level:.0%} family CI (Bonferroni over {len(claims)}):")
        for c in claims:
            print(f"    {_label(c.where)}: stored {c.stored:.3f}, new {c.new:.3f}, new/stored "
                  f"{c.new / c.stored:.3f} [{c.low:.3f}, {c.high:.3f}] "
                  f"{'holds' if c.holds else 'CHANGED'}")
    print(f"  point by point: {r.var}, new - stored, {args.level:.0%} family CI (Bonferroni "
          f"over {len(points)}){'; a level that moved does not change a ratio that held' if claims else ''}:")
    for p in points:
        rel = (p.new - p.stored) / p.stored if p.stored else float("nan")
        print(f"    {_label(p.where)}: stored {p.stored:.4g} (n={p.n_stored}), new {p.new:.4g} "
              f"(n={p.n_new}), {rel:+.1%} [{p.low:.4g}, {p.high:.4g}] "
              f"{'same' if p.holds else 'moved' if claims else 'CHANGED'}")
    v = verdict(claims, points)
    print(f"{r.name}: {v}")
    return 0 if v == "holds" else 1


def _label(where):
    """The factors that vary, and the clock: one-level factors say nothing here."""
    return ", ".join(f"{k}={v}" for k, v in where.items()
                     if k in ("policy", "freq_ghz", "machine", "threads", "file_size")) or "all"


def _add(args, folder):
    from ..results.stored import add
    r = add(args.name, args.file, args.command, args.says, args.var, args.quick, folder)
    print(f"stored {args.file} as {r.path(folder)} and registered {r.name} in {folder}/index.toml")
    return 0


def _render(args, folder):
    from ..results import render
    from ..results.check import CHECKOUT
    pages = render.pages(CHECKOUT)
    if args.check:
        bad = render.stale(pages, folder) + [f"{u}: a CI outside any result marker"
                                             for u in render.unsourced(pages)]
        print("\n".join(bad) or "every quoted result is rendered from its stored file")
        return 1 if bad else 0
    changed = render.render_files(pages, folder)
    print(f"rendered {len(pages)} pages from {folder}: {len(changed)} changed"
          + "".join(f"\n  {p}" for p in changed))
    return 0
