"""Statistics of run datasets: CIs, RSD, slowdown ratios, tests, ANOVA (statsmodels).

Every function reads the raw repetitions on the `rep` dim (NaN = a missing repetition,
skipped) and keeps the dataset's provenance (freq_mode) in what it returns, so a
simulated or emulated result is never shown as measured.

Slowdown ratios are mean(var at f) / mean(var at ref) per configuration, the two
samples independent, or paired by repetition when the sweep ran blocked
(`paired=True`: the covariance of the two means enters each method). CI methods:
  "fieller"   Fieller's theorem for a ratio of independent means, Welch-Satterthwaite
              degrees of freedom (default; exact for normal means, unbounded -> +-inf
              when the reference mean is not clearly away from 0);
  "delta"     delta method on the log of the means, Welch-Satterthwaite df, exp back
              (always positive, asymmetric);
  "bootstrap" percentile bootstrap resampling each sample independently (seeded);
              it undercovers with few repetitions (~90% for a 95% CI at n=8).
The one-sided test of "var at f_high < var at f_low" is a Welch t-test on log values
(scale-free, robust to the right skew of run times), a paired t-test on log ratios for
blocked sweeps, adjusted over configurations.
"""
from __future__ import annotations

from .intervals import ci_halfwidth, point_stats, point_summary, reps_for_cv, reps_needed
from .ratios import RATIO_METHODS, format_ratio, ratio_ci, ratio_halfwidth, slowdown, slowdown_table
from .regression import anova, regress
from .significance import CORRECTIONS, test_slowdown
from .values import provenance_label

__all__ = ["point_summary", "point_stats", "slowdown", "slowdown_table", "test_slowdown", "anova",
           "regress", "ci_halfwidth", "reps_needed", "reps_for_cv", "ratio_ci", "ratio_halfwidth",
           "format_ratio", "provenance_label", "RATIO_METHODS", "CORRECTIONS"]
