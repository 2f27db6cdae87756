"""The numbers a page quotes from a stored result, each named by a field and a selection
of its points: `ratio` (the 3.3/1.6 GHz ratio of means with its Fieller CI, as
`abtlab stats --slowdown` prints it), `between` (two policies' ratio at one clock),
`unblocked` (mean unblocked writers at the lowest -> the highest clock), `lohi` (the
same for any variable: `lohi var=commits`) and `mean`; and those of a lab whose answer is a
table (abtlab.results.table_quotes: `rank`, `winner`, `policy`, `levels`)."""
from __future__ import annotations

import numpy as np

from ..data import schema
from ..errors import ConfigError
from ..stats import ratio_ci
from ..stats.ratios import format_ratio
from . import table_quotes

__all__ = ["quote", "FIELDS", "select"]

FIELDS = ("ratio", "between", "unblocked", "lohi", "mean") + table_quotes.FIELDS


def _matches(value, wanted: str) -> bool:
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        try:
            return np.isclose(float(value), float(wanted))
        except ValueError:
            return False
    # a policy is named by its spec's head: 'delayjc' or 'delayjc:window=16ms' selects
    # 'delayjc:window=16ms,max_resets=64,max_age=1s'
    return str(value) == wanted or str(value).startswith(wanted + ",") or \
        str(value).split(":")[0] == wanted


def select(da, where: dict):
    """da at the points `where` names (dim -> value); every other dim but freq and rep
    must then have one level, so a quote names one configuration."""
    for dim, wanted in where.items():
        if dim not in da.dims:
            raise ConfigError(dim, wanted, f"a dim of the result: {', '.join(map(str, da.dims))}")
        values = [str(v) for v in da[dim].values]
        keep = [values.index(wanted)] if wanted in values else \
            [i for i, v in enumerate(da[dim].values) if _matches(v, wanted)]
        if len(keep) != 1:
            raise ConfigError(dim, wanted, ", ".join(map(str, da[dim].values)))
        da = da.isel({dim: keep[0]})
    left = [d for d in da.dims if d not in (schema.FREQ, schema.REP) and da.sizes[d] > 1]
    if left:
        raise ConfigError("selection", where, f"also a level of {', '.join(left)}")
    return da


def _at(da, freq):
    return da.sel({schema.FREQ: freq}).values.ravel() if schema.FREQ in da.dims else da.values.ravel()


def _number(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


def quote(ds, field: str, var: str = "throughput", digits: int = 2, **where) -> str:
    """The text a page shows for `field` of the stored result ds at the points `where`."""
    if field not in FIELDS:
        raise ConfigError("field", field, " | ".join(FIELDS))
    if field in table_quotes.FIELDS:
        return table_quotes.quote(ds, field, digits=digits, **where)
    if field == "between":
        num, den = where.pop("num"), where.pop("den")
        dim = where.pop("dim", schema.POLICY)
        a = select(ds[var], {**where, dim: num}).values.ravel()
        b = select(ds[var], {**where, dim: den}).values.ravel()
        return format_ratio(*ratio_ci(a, b), digits=digits, identical=_one_run(a, b))
    if field == "unblocked":
        var = "unblocked_threads"
    da = select(ds[var], where)
    freqs = sorted(float(f) for f in np.atleast_1d(da[schema.FREQ].values))
    if field == "mean":
        return _number(float(np.nanmean(da.values)))
    lo, hi = _at(da, freqs[0]), _at(da, freqs[-1])
    if field in ("unblocked", "lohi"):
        return f"{_number(np.nanmean(lo))} -> {_number(np.nanmean(hi))}"
    return format_ratio(*ratio_ci(hi, lo), digits=digits, identical=_one_run(hi, lo))


def _one_run(*samples) -> bool:
    """Every sample two or more repetitions of one value: a deterministic machine's one
    run, whose zero-width interval would read as certainty (stats.ratios.format_ratio)."""
    def same(x):
        x = x[np.isfinite(x)]
        return len(x) >= 2 and float(x.max() - x.min()) == 0.0
    return all(same(np.asarray(x, float)) for x in samples)
