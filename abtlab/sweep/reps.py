"""Adaptive repetitions: the rule (`Reps`) and how many more runs a point gets once its
first ones are in, from the CI half-width of its mean or of its slowdown ratio."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..stats import ci_halfwidth, ratio_halfwidth, reps_for_cv

__all__ = ["Reps", "more_reps", "config_of"]


@dataclass(frozen=True)
class Reps:
    """Adaptive repetitions: at least `min`, at most `max` runs per point; stop a point
    once the relative CI half-width (at `level`) of `metric` is <= target. on="slowdown"
    uses the ratio to the lowest frequency of the same configuration instead."""
    min: int = 3
    max: int = 50
    target: float = 0.05
    level: float = 0.95
    metric: str = "throughput"
    on: str = "mean"

    def __post_init__(self):
        if not (isinstance(self.min, int) and self.min >= 2):
            raise ConfigError("repetitions.min", self.min, "an integer >= 2")
        if not (isinstance(self.max, int) and self.max >= self.min):
            raise ConfigError("repetitions.max", self.max, f"an integer >= min ({self.min})")
        if not (0 < float(self.target) < 10):
            raise ConfigError("repetitions.target", self.target, "a relative half-width in (0, 10)")
        if not (0.5 <= float(self.level) < 1):
            raise ConfigError("repetitions.level", self.level, "a confidence level in [0.5, 1)")
        if self.on not in ("mean", "slowdown"):
            raise ConfigError("repetitions.on", self.on, "mean | slowdown")


def _values_by_point(done, metric) -> dict:
    """point index -> {rep: metric} over its finished runs (one pass over the blocks)."""
    out: dict = {}
    for b in done.values():
        if metric in b.scalars:
            out.setdefault(b.point_index, {}).update(zip(b.reps.tolist(), b.scalars[metric].tolist()))
    return out


def more_reps(rule, points, levels, done, wanted, paired=False):
    """Points whose CI is still too wide get more runs: as many as their observed RSD
    says the target needs (t-quantile at that count), at most doubling per round so a
    misleading pilot cannot spend the whole budget at once. paired (a blocked sweep):
    every point of a configuration gets the same count, so blocks stay complete."""
    by_rep = _values_by_point(done, rule.metric)
    own = {i: _mean_spread(by_rep.get(i, {}), rule.level) for i in wanted}
    spread = own
    if rule.on == "slowdown" and "freq_ghz" in levels:
        f_low = min(levels["freq_ghz"])
        ref = {config_of(p): i for i, p in enumerate(points) if p["freq_ghz"] == f_low}
        pair = {i: ref[config_of(points[i])] for i in wanted}
        # the ratio's spread: paired by block, or (delta method) the two in quadrature
        spread = {i: (_paired_spread(by_rep.get(i, {}), by_rep.get(r, {}), rule.level) if paired
                      else tuple(float(v) for v in np.hypot(own[i], own[r])))
                  for i, r in pair.items() if r != i}
        for i, r in pair.items():    # a reference takes the widest of its ratios
            if r == i:
                spread[i] = max([spread[j] for j, rj in pair.items() if rj == i and j != i]
                                or [own[i]])
    need = {}
    for i, (hw, cv) in spread.items():
        n = wanted[i]
        if hw > rule.target and n < rule.max:
            k = reps_for_cv(cv, rule.target, rule.level) if np.isfinite(cv) else n + 1
            need[i] = int(min(rule.max, max(n + 1, min(k, 2 * n))))
    if paired:
        cfg_need: dict = {}
        for i, k in need.items():
            cfg_need[config_of(points[i])] = max(k, cfg_need.get(config_of(points[i]), 0))
        need = {i: cfg_need[config_of(p)] for i, p in enumerate(points)
                if config_of(p) in cfg_need and cfg_need[config_of(p)] > wanted[i]}
    return need


def _mean_spread(vals: dict, level):
    """(relative CI half-width of the mean, RSD) of one point's runs."""
    x = np.array(list(vals.values()))
    return ci_halfwidth(x, level), _cv(x)


def _paired_spread(a: dict, b: dict, level):
    """(relative CI half-width, per-run relative spread) of mean(a)/mean(b) over the
    blocks both have: the spread of the per-block difference of relative deviations,
    so drift shared within a block cancels."""
    reps = sorted(set(a) & set(b))
    x, y = np.array([a[r] for r in reps]), np.array([b[r] for r in reps])
    if x.size < 2 or x.mean() == 0 or y.mean() == 0:
        return np.inf, np.inf
    hw = ratio_halfwidth(x, y, level, method="delta" if (x > 0).all() and (y > 0).all()
                         else "fieller", paired=True)
    return hw, float(np.std(x / x.mean() - y / y.mean(), ddof=1))


def _cv(x):
    """Relative standard deviation of a point's runs (inf when it cannot be estimated)."""
    if x.size < 2 or x.mean() == 0:
        return np.inf
    return float(x.std(ddof=1) / abs(x.mean()))


def config_of(point):
    """A point without its frequency: the configuration a slowdown ratio pairs within."""
    return tuple((k, v) for k, v in point.items() if k != "freq_ghz")
