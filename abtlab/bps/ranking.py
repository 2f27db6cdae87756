"""Which I/O metric tracks run time, with its uncertainty: Pearson correlations of each
metric with run time over a set of workloads, normalised by He, Sun and Yin's Table 1
sign ("BPS: A Performance Metric of I/O System", IEEE IPDPS Workshops 2013), with
bootstrap CIs over the workloads, and a winner only where the bootstrap CI of the
difference between the leader's normalised CC and every other metric's excludes 0 (and
the leader's own CI is above 0: a metric with the wrong sign tracks nothing).

A handful of workloads gives a CC but not a ranking: two metrics that both follow the
run time (0.95 and 0.93) are not told apart by 3 points, and `rank` says so
(`winner` is None) rather than naming the larger point estimate.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError

__all__ = ["rank", "reason", "MIN_POINTS"]

MIN_POINTS = 4          # fewer workloads than this: no bootstrap CI (a resample of 3 is degenerate)


def _rowwise_cc(x, y):
    """Pearson CC of each row of x with the same row of y (2-D arrays); NaN where flat."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (xc * yc).sum(axis=1) / den, np.nan)


def _check(df, y, metrics, signs, level, n_boot):
    missing = [c for c in (y, *metrics) if c not in df]
    if missing:
        raise ConfigError("df", f"no column {missing[0]!r}", f"a table with {y} and {', '.join(metrics)}")
    if set(metrics) - set(signs):
        raise ConfigError("signs", sorted(signs), "an expected sign (+1 or -1) for each metric")
    if not 0 < level < 1:
        raise ConfigError("level", level, "a confidence level between 0 and 1")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ConfigError("n_boot", n_boot, "an integer >= 100")


def rank(df, y, metrics, signs, level=0.95, n_boot=2000, seed=0):
    """One row per metric: cc (Pearson with y), normalized (cc x expected sign: +1 when
    the metric moves with run time the way Table 1 expects), its bootstrap CI (ci_low,
    ci_high), and the bootstrap CI of (leader's normalized - this metric's)
    (diff_low, diff_high; 0 for the leader). The workloads (rows of df) are resampled
    together for every metric, so the differences are paired.

    attrs: n (workloads), winner (the leader when its own CI is above 0, i.e. it moves
    with run time the way Table 1 expects, and every diff_low > 0; else None), leader
    (the largest point estimate), level."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    metrics = list(metrics)
    _check(df, y, metrics, signs, level, n_boot)
    ok = np.isfinite(df[[y, *metrics]].to_numpy(float)).all(axis=1)
    d = df[ok]
    n = len(d)
    yv = d[y].to_numpy(float)
    cc = {m: (float(np.corrcoef(d[m].to_numpy(float), yv)[0, 1])
              if n >= 3 and np.ptp(d[m].to_numpy(float)) > 0 and np.ptp(yv) > 0 else np.nan)
          for m in metrics}
    norm = {m: cc[m] * signs[m] for m in metrics}
    boot = _bootstrap(d, yv, metrics, signs, n_boot, seed) if n >= MIN_POINTS else None
    finite = [m for m in metrics if np.isfinite(norm[m])]
    leader = max(finite, key=lambda m: norm[m]) if finite else None
    q = [0.5 - level / 2, 0.5 + level / 2]
    rows = []
    for m in metrics:
        lo = hi = dlo = dhi = np.nan
        if boot is not None and np.isfinite(norm[m]):
            lo, hi = np.quantile(boot[m], q)
            if m == leader:
                dlo = dhi = 0.0
            else:
                dlo, dhi = np.quantile(boot[leader] - boot[m], q)
        rows.append({"metric": m, "cc": cc[m], "normalized": norm[m], "ci_low": lo, "ci_high": hi,
                     "diff_low": dlo, "diff_high": dhi, "n": n})
    out = pd.DataFrame(rows)
    others = out[out.metric != leader]
    lead_lo = float(out.loc[out.metric == leader, "ci_low"].iloc[0]) if leader is not None else np.nan
    won = (leader is not None and boot is not None and len(others) and lead_lo > 0
           and bool((others.diff_low > 0).all()))
    out.attrs.update(n=n, level=level, leader=leader, winner=leader if won else None)
    return out


def _bootstrap(d, yv, metrics, signs, n_boot, seed):
    """metric -> normalised CC of each resample of the workloads (resamples where any
    metric or y is flat are dropped for all, so the draws stay paired)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), (n_boot, len(d)))
    ys = yv[idx]
    out = {m: _rowwise_cc(d[m].to_numpy(float)[idx], ys) * signs[m] for m in metrics}
    keep = np.all([np.isfinite(v) | ~np.isfinite(_full(d, m, yv)) for m, v in out.items()], axis=0)
    return {m: v[keep] for m, v in out.items()}


def _full(d, m, yv):
    """The full-sample CC (a metric that is flat everywhere stays NaN and is not required)."""
    x = d[m].to_numpy(float)
    return np.corrcoef(x, yv)[0, 1] if np.ptp(x) > 0 and np.ptp(yv) > 0 else np.nan


def reason(table) -> str:
    """Why a rank table (rows of `rank`, or a set of abtlab.bps.study.correlations) names
    its winner or none, in a clause."""
    rows = table.dropna(subset=["normalized"])
    if not len(rows):
        return "no metric correlates (flat data)"
    lead = rows.loc[rows.normalized.idxmax()]
    won = str(rows.winner.iloc[0]) if "winner" in rows else ""
    if won:
        return f"{won}'s lead over every other metric's CC excludes 0"
    if not np.isfinite(lead.ci_low):
        return f"too few workloads for a CI ({int(lead.n)})"
    if lead.ci_low <= 0:
        return (f"even the best, {lead.metric}, is not measurably correlated with run time in Table 1's "
                "direction: its CI reaches 0 or below")
    return f"the CI of {lead.metric}'s lead over another metric includes 0"
