"""The tables `abtlab stats` prints, in the units a person reads (abtlab.data.display),
and their three renderings: text within 100 columns, markdown, JSON."""
from __future__ import annotations

import json
import math

from .. import stats
from ..data.display import WIDTH, frame_text, number, to_display, wrap
from ..stats.iozone_view import has_both_throughputs, iozone_view
from ..stats.ratios import format_ratio

__all__ = ["stats_tables", "compare_table", "render", "frame_markdown", "frame_records"]


def _drop_constant(df, keep=()):
    """Hide factor columns with one level: they say nothing in a printed table."""
    return df[[c for c in df.columns if c in keep or df[c].nunique(dropna=False) > 1]]


def _per_point(ds, var, level):
    cols = ("mean", "ci_low", "ci_high", "rsd", "n")
    summ = stats.point_summary(ds, var, level).to_dataframe().reset_index()
    units = ds[var].attrs.get("units", "") if var in ds else ""
    summ = to_display(summ, {c: units for c in ("mean", "ci_low", "ci_high")})
    return (f"per point: mean, {level:.0%} CI, RSD, n",
            _drop_constant(summ, [c for c in summ.columns if c.split(" [")[0] in cols]))


def stats_tables(ds, args) -> list[tuple[str, object]]:
    """(title, DataFrame) of each table asked for by the `abtlab stats` options in args."""
    var, level = args.var, args.level
    out = [_per_point(ds, var, level)]
    if args.slowdown:
        sd = stats.slowdown_table(stats.slowdown(ds, var, args.ref, level, args.ci, seed=args.seed))
        out.append((f"ratio to {sd.attrs['ref_freq_ghz']} GHz, {args.ci} CI (below 1 = slower at "
                    f"that frequency)",
                    _drop_constant(sd.drop(columns=["ratio", "ci_low", "ci_high"]), ("slowdown",))))
    if args.test:
        t = stats.test_slowdown(ds, var, args.f_low, args.f_high, args.alpha, args.correction,
                                level, args.ci)
        out.append((f"test: {var} at {t.attrs['f_high']} GHz < at {t.attrs['f_low']} GHz "
                    f"({t.attrs['test']}, {args.correction}, alpha={args.alpha})",
                    _drop_constant(t, ("p", "p_adj", "reject"))))
    if (args.slowdown or args.test) and var == "throughput" and has_both_throughputs(ds):
        v = iozone_view(ds, args.f_low, args.f_high, level, args.ci)
        out.append((f"as the paper measures: throughput {v.attrs['f_high']:g}/{v.attrs['f_low']:g} "
                    f"GHz with the write op timed (eq. 3; IOzone's default report, without and "
                    f"with stonewalling) and with fsync timed (IOzone -e), {level:.0%} {args.ci} "
                    f"CIs, below 1 = slower at the faster clock; unblocked threads (eq. 4, mean) "
                    f"per clock, and the ratio eq. 3 gives from them (clock ratio x unblocked ratio)",
                    _drop_constant(v, tuple(c for c in v.columns if "/" in c or "unblocked" in c))))
    if args.anova:
        out.append((f"ANOVA (type 2) of log({var})", stats.anova(ds, var, order=args.order)))
    return out


def compare_table(df):
    """(title, table) of abtlab.stats.compare.compare_runs' frame, in display units: the
    factors with several levels, the two means, B/A [CI], p (Holm) and the verdict."""
    a = df.attrs
    shown = to_display(df, {"A": a["units"], "B": a["units"]})
    shown["B/A"] = [format_ratio(r, lo, hi) if math.isfinite(r) else "-"
                    for r, lo, hi in zip(df["B/A"], df["ci_low"], df["ci_high"])]
    shown = shown.drop(columns=["ci_low", "ci_high", "p"]).rename(
        columns={"B/A": f"B/A [{a['level']:.0%} CI]", "p_adj": "p (Holm)"})
    keep = [c for c in shown.columns if c in df.columns[-8:] or c.startswith(("A", "B", "p ", "verdict"))]
    factors = [c for c in shown.columns if c not in keep]
    differ = "".join(f"; {d}: A {x}, B {y}" for d, (x, y) in a.get("differ", {}).items())
    return (f"{a['var']}: B over A per shared point, two-sided Welch t on logs, "
            f"alpha={a['alpha']}{differ}", _drop_constant(shown[factors + keep], keep))


def _cell(v):
    return number(v) if isinstance(v, float) else str(v)


def frame_markdown(df) -> str:
    """A GitHub markdown table of df (its index too when it is not 0..n-1)."""
    default = list(df.index) == list(range(len(df)))
    head = ([] if default else [str(n or "") for n in df.index.names]) + [str(c) for c in df.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for idx, row in zip(df.index, df.itertuples(index=False)):
        keys = [] if default else [_cell(k) for k in (idx if isinstance(idx, tuple) else (idx,))]
        lines.append("| " + " | ".join(keys + [_cell(v) for v in row]) + " |")
    return "\n".join(lines)


def _plain(v):
    if hasattr(v, "item"):          # numpy scalars
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def frame_records(df) -> list[dict]:
    """df's rows as JSON-ready dicts (its index as columns; NaN as null)."""
    flat = df if list(df.index) == list(range(len(df))) else df.reset_index()
    return [{str(k): _plain(v) for k, v in row.items()} for row in flat.to_dict("records")]


def render(head: dict, tables, fmt: str = "text") -> str:
    """The run's header (run, var, backend, data, freq_mode, note) and its tables, as
    text (within abtlab.data.display.WIDTH columns), markdown or JSON."""
    if fmt == "json":
        return json.dumps({**head, "tables": [{"title": t, "rows": frame_records(df)}
                                              for t, df in tables]}, indent=1)
    first = (f"{head['run']}: {head['var']}, backend {head['backend']}"
             + (f", {head['data']}" if head.get("data") else "") + f" (freq_mode={head['freq_mode']})")
    note = [f"note: {head['note']}"] if head.get("note") else []
    if fmt == "markdown":
        parts = [f"**{first}**", *note]
        parts += [f"\n#### {t}\n\n{frame_markdown(df)}" for t, df in tables]
        return "\n".join(parts)
    parts = [wrap(first, WIDTH), *(wrap(n, WIDTH) for n in note)]
    parts += ["\n" + wrap(f"== {t}", WIDTH, indent="   ") + "\n" + frame_text(df, WIDTH)
              for t, df in tables]
    return "\n".join(parts)
