"""Lab 3's best window, graded as the labs' other checks are: a delayJC window is the best
one only where the 95% CI of its throughput (write op timed) over ext4's excludes 1, its
mean commit wait stays within ext4's (the paper's reliability criterion), and no other such
window is measurably ahead of it. Where no window's CI excludes 1, no window is measurably
best at N repetitions and the answer is 0 (plain ext4); windows not measurably apart are
each a correct answer."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data import schema
from ..errors import ConfigError
from ..stats.ratios import format_ratio, ratio_ci
from ..studies.notebook_studies import delay_table
from .classroom import Feedback, _answer_key

__all__ = ["BestWindow", "best_window", "best_window_check", "wait_ci"]

WHAT = "the best window (ms) within ext4's commit wait"


@dataclass(frozen=True)
class BestWindow:
    window_ms: float            # 0: no window measurably best (plain ext4)
    gain_over_ext4: float       # its throughput over ext4's (1.0 for ext4)
    tied: tuple                 # the correct answers: the best and those not measurably behind it
    n: int                      # repetitions (the fewer of a window's and ext4's)
    graded: bool                # False: no CI (fewer than 2 repetitions), nothing graded
    rows: str                   # each window's ratio over ext4 with its CI, said for the hint

    def says(self) -> str:
        if self.window_ms == 0:
            return (f"no window is measurably best here at {self.n} repetitions (no window that keeps "
                    "within ext4's commit wait has a CI over ext4 that excludes 1), so plain ext4: 0")
        if len(self.tied) > 1:
            return (f"{' or '.join(f'{w:g}' for w in self.tied)} ms: each raises the throughput measurably "
                    f"and they are not measurably apart at {self.n} repetitions")
        return f"{self.window_ms:g} ms: its CI over ext4 excludes 1 and no other window is measurably ahead"


def _at(ds, policy, freq, var="throughput"):
    one = ds[var].sel({schema.POLICY: policy}) if schema.POLICY in ds.dims else ds[var]
    if schema.FREQ in one.dims:
        one = one.sel({schema.FREQ: freq}, method="nearest")
    return np.asarray(one.values, float).ravel()


def best_window(ds, freq) -> BestWindow:
    """Lab 3's best window at `freq` (GHz) from its run `ds` (ext4 and its delayJC windows)."""
    table = delay_table(ds)
    if schema.FREQ in table:
        table = table[np.isclose(table[schema.FREQ].astype(float), freq)]
    table = table[np.isfinite(table.window_ms.astype(float))]      # ext4 and its windows, not NOJC
    ext4 = table[table.window_ms == 0].iloc[0]
    base = _at(ds, ext4.get(schema.POLICY), freq)
    up, rows, n = [], [], int(np.isfinite(base).sum())
    for row in table[table.window_ms > 0].sort_values("window_ms").itertuples():
        tp = _at(ds, getattr(row, schema.POLICY, None), freq)
        r, lo, hi = ratio_ci(tp, base)
        n = min(n, int(np.isfinite(tp).sum()))
        within = row.commit_wait_ms <= ext4.commit_wait_ms
        rows.append(f"{row.window_ms:g} ms x{format_ratio(r, lo, hi)}" + ("" if within else " (its wait over ext4's)"))
        if within and math.isfinite(lo) and lo > 1:
            up.append((r, row.window_ms, tp))
    graded = n >= 2
    if not up:
        return BestWindow(0.0, 1.0, (0.0,), n, graded, "; ".join(rows))
    r, top, tp = max(up, key=lambda u: u[0])
    tied = tuple(sorted(w for _, w, other in up if w == top or not ratio_ci(tp, other)[1] > 1))
    return BestWindow(float(top), float(r), tied, n, graded, "; ".join(rows))


def best_window_check(prediction, best: BestWindow, choices) -> Feedback:
    """The student's window against best_window's: correct where it is one of the windows
    not measurably behind the best (0 where none is measurably best); the hint quotes every
    window's ratio over ext4 with its CI."""
    seen = f"throughput (write op timed) over ext4's, 95% CI: {best.rows}"
    if prediction is not None and prediction not in choices:
        raise ConfigError("prediction_best_window", prediction, "one of " + ", ".join(map(str, choices)))
    if not best.graded:
        return Feedback(None, f"{WHAT}: {seen}; no CI at {best.n} repetition(s), so nothing is graded.",
                        key=prediction is None, measured=False)
    if prediction is None:
        if _answer_key():
            return Feedback(None, f"{WHAT}: {best.says()} ({seen}); graded correct: "
                            f"{', '.join(f'{w:g}' for w in best.tied)}.", key=True)
        return Feedback(None, f"choose {WHAT} among {list(choices)} in the parameters cell, then re-run")
    ok = any(math.isclose(float(prediction), w) for w in best.tied)
    return Feedback(ok, f"{WHAT}: you chose {prediction}; the measurement says {best.says()} ({seen}).")


def wait_ci(ds, freq, short_ms, long_ms) -> tuple[float, float]:
    """The 95% CI (Fieller) of the longest window's mean commit wait over the shortest's at
    `freq`, for lab 3's wait check (classroom.check_change's ci): "same" where it includes 1."""
    table = delay_table(ds)
    if schema.FREQ in table:
        table = table[np.isclose(table[schema.FREQ].astype(float), freq)]
    pol = {w: table[table.window_ms == w].iloc[0].get(schema.POLICY) for w in (short_ms, long_ms)}
    _, lo, hi = ratio_ci(_at(ds, pol[long_ms], freq, "mean_commit_wait"),
                         _at(ds, pol[short_ms], freq, "mean_commit_wait"))
    return lo, hi
