"""What the paper's text states (Chang, Li, Grove and Cameron, MASCOTS 2014), read from
data/reference/abt_published.csv, the one place its numbers are written: stated figures,
not digitized plots, each row with its figure, metric, configuration, value and unit.
Low in the package so that statistics, answers and figures all read the same rows."""
from __future__ import annotations

import csv
import functools

from ..about import REFERENCE_DATA

__all__ = ["PUBLISHED", "published", "paper_value", "clocks", "paper_iozone"]

PUBLISHED = "abt_published.csv"
# the same cell in the paper's earlier figures (Figs. 1-2: IOzone's, Fig. 3: Metarates')
SAME_CELL = {"Fig7a": ("Fig1", "Fig2"), "Fig8a": ("Fig3",)}


def published(path=None) -> list[dict]:
    """The paper's stated figures, a dict per row (figure, metric, config, value, unit, note)."""
    return [dict(r) for r in _read(str(path or REFERENCE_DATA / PUBLISHED))]


@functools.lru_cache(maxsize=4)
def _read(path: str) -> tuple:
    """The reference file's rows, read once: a figure and its table look values up many times."""
    with open(path, newline="") as f:
        return tuple(csv.DictReader(line for line in f if not line.startswith("#")))


def clocks(config: str) -> list[float]:
    """The clocks a row's configuration names, in its order ('3.3GHz vs 1.6GHz' -> [3.3, 1.6])."""
    return [float(w[:-3]) for w in config.replace(";", " ").replace(",", " ").split()
            if w.endswith("GHz")]


def paper_value(figure: str, metric: str, rows=None) -> list[tuple]:
    """[(GHz or None, value)] the paper states for `metric` in `figure` (e.g. Fig7a) or an
    earlier figure of the same cell; GHz is the first clock its configuration names."""
    names, out = (figure,) + SAME_CELL.get(figure, ()), []
    for r in rows if rows is not None else published():
        if set(names) & set(r["figure"].split("/")) and r["metric"] == metric:
            try:
                out.append(((clocks(r["config"]) or [None])[0], float(r["value"])))
            except ValueError:          # a range ("0.11-0.55") is not a point
                continue
    return out


def _one(rows, figure, metric, ghz=None) -> float:
    found = [v for g, v in paper_value(figure, metric, rows) if ghz is None or g == ghz]
    if len(found) != 1:
        raise ValueError(f"{PUBLISHED}: {len(found)} values of {metric} in {figure}"
                         + (f" at {ghz:g} GHz" if ghz is not None else "") + ", expected one")
    return found[0]


def paper_iozone(rows=None) -> dict:
    """The paper's IOzone cell (256 writers x 128 KiB in 32 KiB records; Figs. 1, 2, 7a) as
    its text states it: the throughput ratio of its fastest clock to its slowest ("3.3GHz
    runs 47% slower than 1.6GHz": 1 - 0.47), the two clocks, ext4's unblocked writers at
    each (of its `threads` writers), and delayJC over ext4 at the fastest. rows: the
    reference file's (default)."""
    rows = published() if rows is None else rows
    slow = [r for r in rows if "Fig1" in r["figure"].split("/")
            and r["metric"] == "iozone_slowdown_high_vs_low_freq"]
    if len(slow) != 1 or len(clocks(slow[0]["config"])) != 2:
        raise ValueError(f"{PUBLISHED}: expected one Fig1 iozone_slowdown_high_vs_low_freq "
                         "row naming two clocks")
    f_high, f_low = max(clocks(slow[0]["config"])), min(clocks(slow[0]["config"]))
    count = "iozone_ext4_nonblocked_threads"
    return {"ratio": round(1 - float(slow[0]["value"]), 12), "f_low": f_low, "f_high": f_high,
            "threads": int(slow[0]["config"].split(" threads")[0]),
            "unblocked_low": int(_one(rows, "Fig7a", count, f_low)),
            "unblocked_high": int(_one(rows, "Fig7a", count, f_high)),
            "delayjc_gain": _one(rows, "Fig7a", "iozone_delayjc_over_ext4_speedup", f_high)}
