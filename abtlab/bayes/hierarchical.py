"""Hierarchical slowdown predictor: log throughput linear in log frequency inside each
configuration, intercepts and slopes partially pooled through a group-level regression.

For run i of configuration c at frequency f (x = log f - log f_ref):
    log y_i ~ Normal(a_c + b_c x, sigma_c)
    a_c ~ Normal(X_c alpha, tau_a),  b_c ~ Normal(X_c beta, tau_b),
    log sigma_c ~ Normal(mu_s, tau_s)
Each of a, b, log sigma is centred when the configurations' own runs pin it (standard
errors well below the estimated group spread) and non-centred (X_c beta + tau_b z)
when they do not: weakly informed centred ones make a funnel, well-informed
non-centred ones couple z to beta and mix slowly.
X_c is the configuration design (design.ConfigDesign). b_c is the elasticity of
throughput to frequency: b_c < 0 means a faster CPU slows configuration c down, and
P(b_c < 0 | data) is the reported probability of slowdown. A configuration never
measured gets a_c, b_c, sigma_c drawn from the group level (its X_c, new z's).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from .data import config_frame, factors_of, model_table
from .design import ConfigDesign
from .sampling import diagnostics, draws, sample
from ..extras import require

__all__ = ["HierarchicalFit", "fit_hierarchical", "build_model"]


def _as_table(data, var):
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    return data if isinstance(data, pd.DataFrame) else model_table(data, var)


def _ols_by_config(table, idx, n_cfg, log_fref):
    """Per configuration: intercept, slope, log sigma and their standard errors
    (inf where the runs cannot identify them)."""
    x = table["log_f"].to_numpy() - log_fref
    y = table["log_y"].to_numpy()
    est, se = np.zeros((3, n_cfg)), np.full((3, n_cfg), np.inf)
    for k in range(n_cfg):
        xk, yk = x[idx == k], y[idx == k]
        n, sxx = len(xk), float(((xk - xk.mean()) ** 2).sum())
        if n < 3 or sxx <= 0:
            continue
        b = float(((xk - xk.mean()) * yk).sum()) / sxx
        s = max(float(np.sqrt(((yk - yk.mean() - b * (xk - xk.mean())) ** 2).sum() / (n - 2))), 1e-6)
        est[:, k] = yk.mean() - b * xk.mean(), b, np.log(s)
        se[:, k] = s * np.sqrt(1 / n + xk.mean() ** 2 / sxx), s / np.sqrt(sxx), 1 / np.sqrt(2 * (n - 2))
    return est, se


def _centre(est, se, X, factor=2.0):
    """Centre (True) when the configurations' own estimates are clearly sharper
    (median se < tau/factor) than the group spread tau around the regression on X; tau is
    the DerSimonian-Laird moment estimate (weights 1/se^2), close to the posterior."""
    ok = np.isfinite(se)
    if ok.sum() <= X.shape[1]:
        return False
    X, e, w = X[ok], est[ok], 1.0 / se[ok] ** 2
    coef = np.linalg.lstsq(X * np.sqrt(w)[:, None], e * np.sqrt(w), rcond=None)[0]
    q = float((w * (e - X @ coef) ** 2).sum())
    xtwx = X.T @ (X * w[:, None])
    tr = w.sum() - np.trace(np.linalg.lstsq(xtwx, X.T @ (X * (w ** 2)[:, None]), rcond=None)[0])
    tau = np.sqrt(max((q - (len(e) - X.shape[1])) / max(tr, 1e-12), 0.0))
    # all or none: a partly centred vector still funnels when tau drops below the
    # centred ones' standard errors
    return bool(np.median(se[ok]) < tau / factor)


def _pooled(pm, name, mean, scale, centre, n):
    """Normal(mean, scale) per configuration, centred or non-centred."""
    if centre:
        return pm.Normal(f"{name}_c", mean, scale, shape=n)
    return mean + scale * pm.Normal(f"{name}_z", 0.0, 1.0, shape=n)


def build_model(table, slopes="auto"):
    """The PyMC model and what prediction needs (design, configs, centring).
    slopes: "auto" (default: centred when the runs pin each configuration's slope,
    else non-centred, see _centre), "centred" or "noncentred"."""
    pm = require("pymc", "bayes")
    if slopes not in ("auto", "centred", "noncentred"):
        raise ConfigError("slopes", slopes, "auto | centred | noncentred")
    configs, idx = config_frame(table)
    design = ConfigDesign(configs)
    X = design.matrix(configs)
    log_fref = float(np.mean(np.unique(table["log_f"])))
    x = table["log_f"].to_numpy() - log_fref
    ybar = float(table["log_y"].mean())
    est, se = _ols_by_config(table, idx, len(configs), log_fref)
    n = len(configs)
    # log sigma's funnel is wider (tau_s ~ 0.7 against se ~ 1/sqrt(2 runs)): stricter
    mask = [_centre(est[0] - ybar, se[0], X), _centre(est[1], se[1], X),
            _centre(est[2], se[2], np.ones((n, 1)), factor=4.0)]
    if slopes != "auto":
        mask[1] = slopes == "centred"
    coords = {"config": configs["label"].tolist(), "coef": design.columns}
    with pm.Model(coords=coords) as m:
        alpha = pm.Normal("alpha", 0.0, 1.0, dims="coef")
        beta = pm.Normal("beta", 0.0, 0.5, dims="coef")
        # boundary-avoiding Gamma(2, .) scales (Chung et al. 2013): the funnel lives
        # at tau -> 0, which a group regression with few configurations reaches
        tau_a = pm.Gamma("tau_a", 2.0, 10.0)
        tau_b = pm.Gamma("tau_b", 2.0, 20.0)
        mu_s = pm.Normal("mu_s", -2.0, 1.5)
        tau_s = pm.Gamma("tau_s", 2.0, 4.0)
        a = pm.Deterministic("a", _pooled(pm, "a", pm.math.dot(X, alpha), tau_a, mask[0], n), dims="config")
        b = pm.Deterministic("b", _pooled(pm, "b", pm.math.dot(X, beta), tau_b, mask[1], n), dims="config")
        log_s = pm.Deterministic("log_sigma", _pooled(pm, "log_sigma", mu_s, tau_s, mask[2], n), dims="config")
        sigma = pm.Deterministic("sigma", pm.math.exp(log_s), dims="config")
        pm.Normal("log_y", a[idx] + b[idx] * x, sigma[idx], observed=table["log_y"].to_numpy() - ybar)
    return m, dict(design=design, configs=configs, idx=idx, log_fref=log_fref, ybar=ybar,
                   slopes=slopes, centred=dict(zip(("a", "b", "log_sigma"), mask)))


@dataclass
class HierarchicalFit:
    idata: object
    table: object
    design: ConfigDesign
    configs: object
    log_fref: float
    ybar: float
    diagnostics: dict = field(default_factory=dict)

    def _draws(self, name):
        return draws(self.idata, name)

    def p_slowdown(self):
        """Per measured configuration: P(slope < 0), slope mean and 90% interval."""
        b = self._draws("b")
        out = self.configs.copy()
        out["p_slowdown"] = (b < 0).mean(0)
        out["slope"] = b.mean(0)
        out["slope_lo"], out["slope_hi"] = np.quantile(b, [0.05, 0.95], axis=0)
        return out

    def config_draws(self, configs, seed=0):
        """Draws of (a, b, sigma) for configurations: the fitted ones where the
        configuration was measured, new group-level draws otherwise."""
        rng = np.random.default_rng(seed)
        A, B, S = (self._draws(k) for k in ("a", "b", "sigma"))
        al, be = self._draws("alpha"), self._draws("beta")
        ta, tb, ms, ts = (self._draws(k) for k in ("tau_a", "tau_b", "mu_s", "tau_s"))
        X = self.design.matrix(configs)
        known = dict(zip(self.configs["label"], range(len(self.configs))))
        labels = config_frame_labels(configs)
        nd, nc = A.shape[0], len(configs)
        z = rng.standard_normal((3, nd, nc))
        a = al @ X.T + ta[:, None] * z[0]
        b = be @ X.T + tb[:, None] * z[1]
        s = np.exp(ms[:, None] + ts[:, None] * z[2])
        for j, lab in enumerate(labels):
            if lab in known:
                k = known[lab]
                a[:, j], b[:, j], s[:, j] = A[:, k], B[:, k], S[:, k]
        return a, b, s

    def predict(self, table, seed=0):
        """Posterior predictive draws of log y for every row of a model table
        (rows may be unmeasured configurations or frequencies). Returns
        (draws x rows) predictive, (draws x rows) mean, per-row config slopes."""
        configs, idx = config_frame(table)
        a, b, s = self.config_draws(configs, seed)
        x = table["log_f"].to_numpy() - self.log_fref
        mean = a[:, idx] + b[:, idx] * x + self.ybar
        rng = np.random.default_rng(seed + 1)
        pred = mean + s[:, idx] * rng.standard_normal(mean.shape)
        return pred, mean, b, configs


def config_frame_labels(configs):
    facs = [f for f in factors_of(configs)]
    return [" ".join(f"{f}={r[f]}" for f in facs) for _, r in configs.iterrows()]


def fit_hierarchical(data, var="throughput", draws=1000, tune=1000, chains=2, seed=0,
                     sampler="auto", target_accept=0.95, slopes="auto"):
    """Fit the hierarchical predictor to a run dataset (or a model_table)."""
    t0 = time.perf_counter()
    table = _as_table(data, var)
    m, parts = build_model(table, slopes)
    idata, info = sample(m, draws, tune, chains, seed, sampler, target_accept)
    _add_loglik(idata, table, parts)
    diag = diagnostics(idata, ["alpha", "beta", "tau_a", "tau_b", "mu_s", "tau_s", "b"], info)
    diag["total_s"] = time.perf_counter() - t0
    diag["runs"], diag["slopes"] = len(table), parts["slopes"]
    diag["centred"] = parts["centred"]
    return HierarchicalFit(idata, table, parts["design"], parts["configs"], parts["log_fref"],
                           parts["ybar"], diag)


def _add_loglik(idata, table, parts):
    """Pointwise log likelihood (for ArviZ LOO), computed from the draws."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    post = idata.posterior
    idx = parts["idx"]
    x = table["log_f"].to_numpy() - parts["log_fref"]
    y = table["log_y"].to_numpy() - parts["ybar"]
    a, b, s = (post[k].values[..., idx] for k in ("a", "b", "sigma"))
    mu = a + b * x
    ll = -0.5 * ((y - mu) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi)
    idata.add_groups(log_likelihood=xr.Dataset(
        {"log_y": (("chain", "draw", "obs"), ll)},
        coords={"chain": post.chain.values, "draw": post.draw.values}))
