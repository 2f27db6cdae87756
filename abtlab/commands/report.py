"""`abtlab report NOTEBOOK... [-p KEY VALUE] --out DIR` | `abtlab report --grid GRID.toml --out DIR`."""
from __future__ import annotations

from ..errors import ConfigError

__all__ = ["register"]


def register(sub):
    p = sub.add_parser("report", help="execute parameterized notebooks into HTML reports "
                                      "(pip install 'abtlab[notebooks]')",
                       description="Runs notebooks with papermill (in parallel; real-I/O ones alone), "
                                   "writes <name>.ipynb and <name>.html per item and DIR/index.html.")
    p.add_argument("notebooks", nargs="*", help="notebook paths, or names in notebooks/ (e.g. 01_slowdown)")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                   help="a notebook parameter (numbers, true/false, none are converted)")
    p.add_argument("--grid", help="TOML file of [[run]] tables (notebook, name, parameters, grid)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--workers", type=int, default=2, help="notebooks run at once (default 2)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per cell (default 900)")
    p.add_argument("--title", default="abtlab report")
    p.set_defaults(func=main)


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..present.report import Item, load_grid, parse_value, run_batch
    if bool(args.grid) == bool(args.notebooks):
        raise ConfigError("notebooks", args.notebooks or None, "notebook paths or --grid FILE (one of the two)")
    if args.grid and args.parameter:
        raise ConfigError("-p", args.parameter, "parameters in the grid file when --grid is used")
    params = {k: parse_value(v) for k, v in args.parameter}
    items = load_grid(args.grid) if args.grid else [Item(nb, params) for nb in args.notebooks]
    outcomes, index = run_batch(items, args.out, workers=args.workers, title=args.title,
                                timeout=args.timeout)
    failed = [o for o in outcomes if o.status != "ok"]
    print(f"report: {index} ({len(outcomes) - len(failed)} ok, {len(failed)} failed)")
    return 1 if failed else 0
