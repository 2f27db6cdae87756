"""The numbers a page quotes from a lab whose answer is a table, not a ratio of two
clocks: the quote recomputes the table with the lab's own answer function from the stored
runs it reads, and reads one row and field of it, so the page and the lab cannot differ.

- `rank metric=M`: lab 6's ranking (abtlab.studies.lab_studies.bps_table): M's normalised
  CC with run time and its bootstrap CI, '-0.38 [-0.55, -0.21]';
- `winner`: the metric whose lead excludes 0 in that ranking, or 'none measurable';
- `policy policy=P [of=time|energy|edp]`: lab 7's table (lab_studies.sera_table): P's
  time (energy, EDP) over fixed-high's, the geometric mean over seeds with its 95% CI;
- `levels dim=D`: how many levels D has (the workloads a ranking is over)."""
from __future__ import annotations

import itertools

import numpy as np

from ..bps import METRICS
from ..data import schema
from ..errors import ConfigError
from ..stats.ratios import format_ratio
from ..studies import lab_studies

__all__ = ["FIELDS", "quote", "summary"]

FIELDS = ("rank", "winner", "policy", "levels")
OF = ("time", "energy", "edp")


def _row(table, column: str, wanted: str, what: str):
    rows = table[table[column] == wanted]
    if len(rows) != 1:
        raise ConfigError(what, wanted, ", ".join(map(str, table[column])))
    return rows.iloc[0]


def _no_more(field, where):
    if where:
        raise ConfigError(f"quote {field}", " ".join(f"{k}={v}" for k, v in where.items()),
                          "dim= (levels), metric= (rank), policy= and of= (policy)")


def quote(ds, field: str, digits: int = 2, **where) -> str:
    """The text a page shows for `field` of the stored runs ds (see the module's doc)."""
    if field == "levels":
        dim = where.pop("dim", "")
        _no_more(field, where)
        if dim not in ds.dims:
            raise ConfigError("dim", dim, ", ".join(map(str, ds.dims)))
        return str(ds.sizes[dim])
    if field in ("rank", "winner"):
        metric = where.pop("metric", "") if field == "rank" else ""
        _no_more(field, where)
        table = lab_studies.bps_table(ds)
        if field == "winner":
            return str(table.attrs["winner"] or "none measurable")
        r = _row(table, "metric", metric, "metric")
        return f"{r.normalized:+.{digits}f} [{r.ci_low:+.{digits}f}, {r.ci_high:+.{digits}f}]"
    if field == "policy":
        of, policy = where.pop("of", "energy"), where.pop("policy", "")
        _no_more(field, where)
        if of not in OF:
            raise ConfigError("of", of, " | ".join(OF))
        r = _row(lab_studies.sera_table(ds), "policy", policy, "policy")
        return format_ratio(r[f"{of}_ratio"], r[f"{of}_ratio_lo"], r[f"{of}_ratio_hi"], digits=digits)
    raise ConfigError("field", field, " | ".join(FIELDS))


def summary(ds, var: str) -> list[str]:
    """What `abtlab results show` prints of a result without a clock axis: lab 6's ranking,
    lab 7's table, else the mean of `var` at each configuration (repetitions pooled)."""
    if lab_studies.RUNTIME in ds and all(m in ds for m in METRICS):
        return [f"{m}: normalised CC with run time {quote(ds, 'rank', metric=m)} (95% bootstrap CI, "
                f"{quote(ds, 'levels', dim=schema.RUN)} runs)" for m in METRICS] + \
            [f"winner: {quote(ds, 'winner')}"]
    if all(v in ds for v in lab_studies.SERA_VARS):
        return [f"{p}: time x{quote(ds, 'policy', policy=p, of='time')}, energy "
                f"x{quote(ds, 'policy', policy=p, of='energy')} over fixed-high's (95% CI)"
                for p in map(str, ds[schema.POLICY].values)]
    dims = [d for d in ds[var].dims if d != schema.REP and ds.sizes[d] > 1]
    units = ds[var].attrs.get("units", "")
    out = []
    for combo in itertools.product(*(range(ds.sizes[d]) for d in dims)):
        da = ds[var].isel(dict(zip(dims, combo)))
        label = ", ".join(f"{d}={ds[d].values[i]}" for d, i in zip(dims, combo)) or "all"
        out.append(f"{label}: mean {var} {float(np.nanmean(da.values)):.4g} {units}".rstrip())
    return out
