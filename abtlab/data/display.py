"""How a number is shown to a person: one unit per quantity, read from the variable's
`units` attribute, and never e-notation.

Rates of bytes are shown in MiB/s (GiB/s from 100 GiB/s up, where MiB/s would take six
digits: no run abtlab makes reaches it, so a rate reads in MiB/s wherever it is shown, a
mean in one table and its single value in a lab's check alike), file rates in files/s,
times in ms below a second and in s from there; every other unit as stored. A column (or
a table) takes one unit, chosen from its largest value, so the same run shows the same
number in the same unit in `abtlab run`, `abtlab stats`, `abtlab compare`, the labs'
answers and the notebooks' tables. Numbers keep four significant digits, written out
(4323, 0.01234, 39211), never 4.3e+09.

Tables printed on a terminal fit `WIDTH` columns: a long title wraps at words, a wide
table continues below itself (pandas' `line_width`), never a line running on.
"""
from __future__ import annotations

import math
import textwrap

__all__ = ["WIDTH", "display_unit", "number", "quantity", "to_display", "show_frame",
           "wrap", "frame_text"]

WIDTH = 100          # columns a printed table or title fits
GIB_FROM = 100.0     # GiB/s from this many GiB/s up (below it MiB/s)

# stored unit -> (shown unit, factor) candidates, smallest first; the last one whose
# threshold the column's largest magnitude reaches is taken
_SCALES = {
    "bytes/s": [("MiB/s", 2.0 ** -20, 0.0), ("GiB/s", 2.0 ** -30, GIB_FROM * 2 ** 30)],
    "s": [("ms", 1e3, 0.0), ("s", 1.0, 1.0)],
    "ns": [("ms", 1e-6, 0.0), ("s", 1e-9, 1e9)],
}


def _finite(values) -> list[float]:
    try:
        seq = list(values)
    except TypeError:
        seq = [values]
    out = []
    for v in seq:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(abs(f))
    return out


def display_unit(units: str, values=()) -> tuple[str, float]:
    """(shown unit, factor) for values stored in `units`: shown = stored x factor. The
    unit is chosen from the largest finite magnitude of `values` (one value or many)."""
    choices = _SCALES.get(units or "")
    if not choices:
        return units or "", 1.0
    top = max(_finite(values), default=0.0)
    label, factor, _ = [c for c in choices if top >= c[2]][-1]
    return label, factor


def number(x, digits: int = 4) -> str:
    """x with `digits` significant digits, written out: 4323, 0.01234, 39211, 1.5; '-'
    for None or NaN, 'inf' for infinities. Integers stay integers."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(f):
        return "-"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == 0:
        return "0"
    if float(f).is_integer() and abs(f) < 10 ** 15 and not isinstance(x, float):
        return str(int(f))
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(f))))
    text = f"{f:.{decimals}f}"
    if "." in text:                      # 1.500 -> 1.5, never 12. ; a whole 3996.0 -> 3996
        text = text.rstrip("0").rstrip(".")
    return text


def quantity(x, units: str, digits: int = 4) -> str:
    """'4323 MiB/s', '12.5 ms', '0.87' (no unit): one value in its display unit."""
    label, factor = display_unit(units, [x])
    try:
        shown = number(float(x) * factor, digits)
    except (TypeError, ValueError):
        shown = number(x, digits)
    return f"{shown} {label}".rstrip() if label and label != "1" else shown


def to_display(df, units: dict):
    """A copy of DataFrame `df` with each column of `units` (column -> stored unit)
    scaled to its display unit and renamed `<column> [<unit>]`; columns sharing a stored
    unit and a group (a mean and its CI bounds) share the unit chosen for the first."""
    out = df.copy()
    renames, chosen = {}, {}
    for col, stored in units.items():
        if col not in out:
            continue
        key = stored
        if key not in chosen:
            vals = [v for c, s in units.items() if s == stored and c in out for v in out[c]]
            chosen[key] = display_unit(stored, vals)
        label, factor = chosen[key]
        out[col] = out[col].astype(float) * factor
        if label and label != "1":
            renames[col] = f"{col} [{label}]"
    return out.rename(columns=renames)


def wrap(text: str, width: int = WIDTH, indent: str = "") -> str:
    """A title or sentence wrapped at words to `width` columns."""
    return textwrap.fill(text, width=width, subsequent_indent=indent, break_on_hyphens=False)


def frame_text(df, width: int = WIDTH, index: bool = True) -> str:
    """A DataFrame as text that fits `width` columns (a wide table continues below
    itself), its floats by `number`."""
    # deferred: pandas is heavy; a command that only writes files never asks for it
    import pandas as pd
    with pd.option_context("display.max_rows", 500, "display.max_columns", 100,
                           "display.width", width, "display.max_colwidth", 60):
        return df.to_string(float_format=number, line_width=width, index=index)


def show_frame(title: str, df, width: int = WIDTH, stream=None, index: bool = True) -> None:
    """Print '== title' (wrapped) and the table, both within `width` columns."""
    print("\n" + wrap(f"== {title}", width, indent="   "), file=stream)
    print(frame_text(df, width, index), file=stream)
