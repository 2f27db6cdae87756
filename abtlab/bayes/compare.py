"""Predictive accuracy on held-out configurations: the Bayesian models (with ArviZ
LOO on the training runs) against the statsmodels baselines, on the same split.

Scores per model on the held-out rows: RMSE of log throughput, coverage of the 90%
predictive intervals, and slowdown-sign accuracy (predicted P(slope < 0) > 0.5 against
the sign of the OLS slope of the held-out configuration's own runs)."""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .data import config_frame, factors_of, model_table
from .mechanistic import mechanistic_table
from ..extras import require

__all__ = ["split", "evaluate", "compare", "MODELS"]

MODELS = ("hierarchical", "mechanistic", "ols", "glm")


def _parse_holdout(holdout):
    if isinstance(holdout, dict):
        return holdout
    out = {}
    for part in str(holdout).split(";"):
        if "=" not in part:
            raise ConfigError("holdout", holdout, "FACTOR=V[,V...][;FACTOR=...], e.g. threads=64")
        k, v = part.split("=", 1)
        out[k.strip()] = [w.strip() for w in v.split(",") if w.strip()]
    return out


def split(table, holdout):
    """(train, test) model tables; test = rows whose factors match every FACTOR=levels."""
    spec = _parse_holdout(holdout)
    mask = np.ones(len(table), bool)
    for k, vals in spec.items():
        if k not in table.columns or k in ("y", "log_y", "log_f", "rep"):
            raise ConfigError("holdout", k, "a factor column: " + ", ".join(factors_of(table) + ["freq_ghz"]))
        col = table[k]
        want = [float(v) for v in vals] if col.dtype.kind in "fiu" else [str(v) for v in vals]
        mask &= col.isin(want).to_numpy()
    train, test = table[~mask].reset_index(drop=True), table[mask].reset_index(drop=True)
    if test.empty or train.empty:
        raise ConfigError("holdout", holdout, "a selection leaving runs both to fit and to test")
    for t in (train, test):
        t.attrs.update(table.attrs)
    return train, test


def observed_slopes(test):
    configs, idx = config_frame(test)
    out = np.full(len(configs), np.nan)
    for c in range(len(configs)):
        m = idx == c
        if np.ptp(test["log_f"].to_numpy()[m]) > 0:
            out[c] = np.polyfit(test["log_f"].to_numpy()[m], test["log_y"].to_numpy()[m], 1)[0]
    return configs, out


def _scores(y, mean, lo, hi, p_slow, obs_slope):
    ok = np.isfinite(obs_slope) & np.isfinite(p_slow)
    return {"rmse_log": float(np.sqrt(np.mean((y - mean) ** 2))),
            "coverage90": float(np.mean((y >= lo) & (y <= hi))),
            "sign_accuracy": float(np.mean((p_slow[ok] > 0.5) == (obs_slope[ok] < 0))) if ok.any() else np.nan,
            "n_rows": int(len(y)), "n_configs": int(ok.sum())}


def evaluate(fit, test, seed=0):
    """Scores of a fitted model on held-out rows, plus a per-row frame of observed
    and predicted log y with the 90% interval."""
    # deferred: baselines imports pandas (and statsmodels, patsy on use)
    from .baselines import BaselineFit
    configs, obs = observed_slopes(test)
    if isinstance(fit, BaselineFit):
        mean, lo, hi = fit.predict_interval(test, 0.9)
        p = fit.slopes(test)["p_slowdown"].to_numpy()
    else:
        pred, mu, b, _ = fit.predict(test, seed)
        mean = mu.mean(0)
        lo, hi = np.quantile(pred, [0.05, 0.95], axis=0)
        p = np.mean(b < 0, axis=0)
    y = test["log_y"].to_numpy()
    rows = test[factors_of(test) + ["freq_ghz", "rep", "log_y"]].assign(
        pred_log_y=mean, lo90=lo, hi90=hi)
    return _scores(y, mean, lo, hi, p, obs), rows


def _fit(name, train, draws, tune, chains, seed):
    # deferred: baselines imports pandas (and statsmodels, patsy on use)
    from . import baselines, hierarchical, mechanistic
    if name == "hierarchical":
        return hierarchical.fit_hierarchical(train, draws=draws, tune=tune, chains=chains, seed=seed)
    if name == "mechanistic":
        return mechanistic.fit_mechanistic(train, draws=draws, tune=tune, chains=chains, seed=seed)
    if name in baselines.KINDS:
        return baselines.fit_baseline(train, name)
    raise ConfigError("model", name, " | ".join(MODELS))


def compare(ds, holdout, models=MODELS, draws=1000, tune=1000, chains=2, seed=0,
            var="throughput"):
    """Fit each model on the runs outside `holdout`, score it on the held-out runs
    (response `var`: the paper's write-op throughput, or throughput_fsync).
    Returns (scores DataFrame, {model: per-row predictions}, {model: fit})."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    rows, preds, fits = [], {}, {}
    for name in models:
        table = mechanistic_table(ds, var) if name == "mechanistic" else model_table(ds, var)
        train, test = split(table, holdout)
        fit = _fit(name, train, draws, tune, chains, seed)
        scores, preds[name] = evaluate(fit, test, seed)
        scores["model"] = name
        if hasattr(fit, "idata"):
            loo = require("arviz", "bayes").loo(fit.idata)
            scores.update(elpd_loo=float(loo.elpd_loo), pareto_k_max=float(np.max(loo.pareto_k)),
                          fit_s=fit.diagnostics["total_s"], rhat_max=fit.diagnostics["rhat_max"],
                          divergences=fit.diagnostics["divergences"])
        rows.append(scores)
        fits[name] = fit
    return pd.DataFrame(rows).set_index("model"), preds, fits
