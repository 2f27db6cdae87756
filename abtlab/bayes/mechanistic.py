"""Mechanistic Bayesian model: the ABT model's quantities as latent parameters.

Generative story, for one run of configuration c (N threads writing B bytes each) at
frequency f (Chang et al., MASCOTS 2014, sec. III):
  - CPU time scales as s(f) = phi + (1 - phi) f_ref / f; phi is the share of a CPU
    phase that does not speed up with the clock (memory, uncore).
  - After the lead thread calls fsync, the commit locks after a lead time
    L(f) = L_c s(f) (the lead thread's CPU path). The other threads' fsync arrivals
    follow the lead by Exponential offsets of mean S(f) = S_c (psi s(f) + 1 - psi),
    the arrival spread: a share psi is CPU work, the rest scheduling and device.
  - A thread joins the first commit (is not blocked, class X) with probability
    p = 1 - exp(-L/S). The observed unblocked count k ~ BetaBinomial(N, p, kappa): the
    writers whose write op never waited for a commit (unblocked_threads, eq. 4 on the
    trace evidence or the simulator's own record); runs without that evidence use the
    span-overlap count (threads_clear_of_commits).
  - Blocked threads are served by later commits of duration D_c, each gathering the
    arrivals during the one before: the last arrival comes ~S H_N after the lead
    (H_N the harmonic number), so E[commits] = 1 + softplus((S H_N - L) / D_c);
    commits ~ NegativeBinomial(E[commits], alpha).
  - Commit durations measured in the traces: log d ~ Normal(log D_c, sigma_d).
  - Throughput, eq. (7): unblocked threads take T(f) = T_c s(f), blocked ones wait a
    commit more: y = B N (p / T + (1 - p) / (T + D_c)); log y_obs ~ Normal(log y, sigma_y).
Per configuration, (log D, log S, log L, log T) = X_c gamma + tau z (non-centred),
X_c the configuration design, so unmeasured configurations and frequencies are
predicted from the same story. Higher f shrinks L faster than S when psi < 1: fewer
threads make the first commit, which is the ABT slowdown; whether throughput falls
depends on that against the faster T(f).
Only runs with journal commits are modelled (a policy without a journal has no ABT).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from .data import commit_durations, config_frame, model_table
from .design import ConfigDesign
from .sampling import diagnostics, draws, sample
from ..extras import require

__all__ = ["MechanisticFit", "fit_mechanistic", "mechanistic_table", "curves"]

LATENTS = ("log_D", "log_S", "log_L", "log_T")
_MS = 1e3          # times are modelled in ms, so every latent is of order 1 on a log scale


def unblocked_counts(t) -> np.ndarray:
    """Per row of a table: unblocked_threads (eq. 4 on evidence) where it is finite, else
    the span-overlap threads_clear_of_commits; a table's own `unblocked` column when it has one."""
    if "unblocked" in t.columns:
        return t["unblocked"].to_numpy(float)
    span = t["threads_clear_of_commits"].to_numpy(float)
    if "unblocked_threads" not in t.columns:
        return span
    ev = t["unblocked_threads"].to_numpy(float)
    return np.where(np.isfinite(ev), ev, span)


def mechanistic_table(ds, var="throughput"):
    """model_table plus threads, bytes per thread and trace commit durations; only
    runs of journaled policies (some commits observed)."""
    t = model_table(ds, var)
    for need in ("threads_clear_of_commits", "commits", "threads", "file_size"):
        if need not in t.columns:
            raise ConfigError(need, None, "a dataset with " + need + " (an IOzone-like run)")
    t["unblocked"] = unblocked_counts(t)
    t = t[np.isfinite(t["unblocked"]) & np.isfinite(t["commits"])]
    jour = t.groupby("policy")["commits"].transform("max") > 0 if "policy" in t else t["commits"] > 0
    t = t[jour].reset_index(drop=True)
    if t.empty:
        raise ConfigError("policy", sorted(model_table(ds, var)["policy"].unique()),
                          "runs of a journaled policy (ext4, delayjc, batch) with commits")
    ids = t["run_id"].to_numpy() if "run_id" in t else np.full(len(t), -1)
    t["commit_s"] = commit_durations(ds, ids)
    return t


def curves(lat, phi, psi, N, f_rel, xp=np):
    """p (unblocked share), E[commits], log throughput per byte-thread (ms units).
    lat: dict of log_D, log_S, log_L, log_T; f_rel = f_ref / f. xp: numpy or pm.math."""
    s = phi + (1 - phi) * f_rel
    D, S, L, T = (xp.exp(lat[k]) for k in LATENTS)
    Sf, Lf, Tf = S * (psi * s + 1 - psi), L * s, T * s
    p = 1 - xp.exp(-Lf / Sf)
    H = xp.log(N) + 0.5772 + 0.5 / N
    x = (Sf * H - Lf) / D
    mu_m = 1 + xp.log(1 + xp.exp(-abs(x))) + xp.maximum(x, 0)        # 1 + softplus(x)
    log_y = xp.log(p / Tf + (1 - p) / (Tf + D))
    return p, mu_m, log_y


def _prior_centres(t):
    """Data-scaled centres of the latent priors (light empirical Bayes: units only)."""
    d = np.nanmedian(t["commit_s"]) * _MS if np.isfinite(t["commit_s"]).any() else 10.0
    per_thread = np.median(t["threads"] * t["file_size"] / t["y"]) * _MS
    return {"log_D": np.log(d), "log_S": np.log(d), "log_L": np.log(d) - 1.0,
            "log_T": np.log(per_thread)}


def build_model(t):
    pm = require("pymc", "bayes")
    configs, idx = config_frame(t)
    design = ConfigDesign(configs)
    X = design.matrix(configs)
    f_ref = float(np.exp(np.mean(np.unique(t["log_f"]))))
    f_rel = f_ref / t["freq_ghz"].to_numpy(float)
    N = t["threads"].to_numpy(float)
    centres = _prior_centres(t)
    coords = {"config": configs["label"].tolist(), "coef": design.columns}
    with pm.Model(coords=coords) as m:
        phi = pm.Beta("phi", 2.0, 5.0)
        psi = pm.Beta("psi", 2.0, 2.0)
        lat = {}
        for k in LATENTS:
            g = pm.Normal(f"gamma_{k}", 0.0, 0.5, dims="coef")
            g0 = pm.Normal(f"c0_{k}", centres[k], 1.5)
            tau = pm.Gamma(f"tau_{k}", 2.0, 8.0)
            z = pm.Normal(f"z_{k}", 0.0, 1.0, dims="config")
            lat[k] = pm.Deterministic(k, g0 + pm.math.dot(X[:, 1:], g[1:]) + tau * z, dims="config")
        run_lat = {k: v[idx] for k, v in lat.items()}
        p, mu_m, log_yb = curves(run_lat, phi, psi, N, f_rel, pm.math)
        kappa = pm.Gamma("kappa", 2.0, 0.1)
        pc = pm.math.clip(p, 1e-6, 1 - 1e-6)
        pm.BetaBinomial("k", alpha=pc * kappa, beta=(1 - pc) * kappa, n=N.astype(int),
                        observed=np.rint(unblocked_counts(t)).astype(int))
        pm.NegativeBinomial("m", mu=mu_m, alpha=pm.Gamma("alpha_m", 2.0, 0.2),
                            observed=np.rint(t["commits"].to_numpy()).astype(int))
        has_d = np.isfinite(t["commit_s"].to_numpy())
        if has_d.any():
            pm.Normal("log_d", lat["log_D"][idx[has_d]], pm.HalfNormal("sigma_d", 0.5),
                      observed=np.log(t["commit_s"].to_numpy()[has_d] * _MS))
        log_y = np.log(N * t["file_size"].to_numpy(float)) + log_yb + np.log(_MS)
        pm.Normal("log_y", log_y, pm.HalfNormal("sigma_y", 0.5), observed=t["log_y"].to_numpy())
    return m, dict(design=design, configs=configs, idx=idx, f_ref=f_ref)


@dataclass
class MechanisticFit:
    idata: object
    table: object
    design: ConfigDesign
    configs: object
    f_ref: float
    diagnostics: dict = field(default_factory=dict)

    def _d(self, name):
        return draws(self.idata, name)

    def latents(self, configs, seed=0):
        """Draws (draws x configs) of each latent, in ms on a log scale: fitted ones for
        measured configurations, group-level draws for the others."""
        rng = np.random.default_rng(seed)
        X = self.design.matrix(configs)[:, 1:]
        known = dict(zip(self.configs["label"], range(len(self.configs))))
        labels, _ = config_frame(configs)
        out = {}
        for k in LATENTS:
            fitted = self._d(k)
            new = (self._d(f"c0_{k}")[:, None] + self._d(f"gamma_{k}")[:, 1:] @ X.T
                   + self._d(f"tau_{k}")[:, None] * rng.standard_normal((fitted.shape[0], len(configs))))
            for j, lab in enumerate(labels["label"]):
                if lab in known:
                    new[:, j] = fitted[:, known[lab]]
            out[k] = new
        return out

    def parameters(self):
        """Posterior mean and 90% interval of the per-configuration quantities (ms)."""
        out = self.configs.copy()
        for k in LATENTS:
            v = np.exp(self._d(k))
            out[k[4:] + "_ms"] = v.mean(0)
            out[k[4:] + "_lo"], out[k[4:] + "_hi"] = np.quantile(v, [0.05, 0.95], axis=0)
        return out

    def _rows(self, table, seed):
        configs, idx = config_frame(table)
        lat = {k: v[:, idx] for k, v in self.latents(configs, seed).items()}
        f_rel = self.f_ref / table["freq_ghz"].to_numpy(float)
        N = table["threads"].to_numpy(float)
        p, mu_m, lyb = curves(lat, self._d("phi")[:, None], self._d("psi")[:, None], N, f_rel)
        mean = np.log(N * table["file_size"].to_numpy(float)) + lyb + np.log(_MS)
        return configs, idx, p, mu_m, mean

    def predict(self, table, seed=0):
        """Posterior predictive draws (draws x rows) of log y; draws of the mean; per
        configuration the slope of mean log y between the lowest and highest
        frequency of the table (draws x configs); the configurations."""
        configs, idx, p, mu_m, mean = self._rows(table, seed)
        rng = np.random.default_rng(seed + 1)
        pred = mean + self._d("sigma_y")[:, None] * rng.standard_normal(mean.shape)
        return pred, mean, _endpoint_slopes(table, idx, mean, len(configs)), configs

    def predict_unblocked(self, table, seed=0):
        """Posterior predictive draws (draws x rows) of unblocked threads (the count the model is fit on)."""
        _, _, p, _, _ = self._rows(table, seed)
        rng = np.random.default_rng(seed + 2)
        kap = self._d("kappa")[:, None]
        q = rng.beta(np.clip(p, 1e-6, 1) * kap, np.clip(1 - p, 1e-6, 1) * kap)
        return rng.binomial(table["threads"].to_numpy(int), q)


def _endpoint_slopes(table, idx, mean, nconf):
    lf = table["log_f"].to_numpy()
    out = np.full((mean.shape[0], nconf), np.nan)
    for c in range(nconf):
        m = np.flatnonzero(idx == c)
        lo, hi = m[np.argmin(lf[m])], m[np.argmax(lf[m])]
        if lf[hi] > lf[lo]:
            out[:, c] = (mean[:, hi] - mean[:, lo]) / (lf[hi] - lf[lo])
    return out


def fit_mechanistic(data, var="throughput", draws=1000, tune=1000, chains=2, seed=0,
                    sampler="auto", target_accept=0.95):
    """Fit the mechanistic model to a run dataset with unblocked/commit counts (and,
    when present, commit traces)."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    t0 = time.perf_counter()
    t = data if isinstance(data, pd.DataFrame) else mechanistic_table(data, var)
    m, parts = build_model(t)
    keep = [v.name for v in m.free_RVs] + list(LATENTS)
    idata, info = sample(m, draws, tune, chains, seed, sampler, target_accept, keep)
    fit = MechanisticFit(idata, t, parts["design"], parts["configs"], parts["f_ref"])
    _add_loglik(fit)
    names = ["phi", "psi", "kappa", "sigma_y"] + [f"tau_{k}" for k in LATENTS] + list(LATENTS)
    fit.diagnostics = diagnostics(idata, names, info)
    fit.diagnostics.update(total_s=time.perf_counter() - t0, runs=len(t))
    return fit


def _add_loglik(fit):
    """Pointwise log likelihood of log throughput (for ArviZ LOO)."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    _, _, _, _, mean = fit._rows(fit.table, 0)
    post = fit.idata.posterior
    s = fit._d("sigma_y")[:, None]
    ll = -0.5 * ((fit.table["log_y"].to_numpy() - mean) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi)
    fit.idata.add_groups(log_likelihood=xr.Dataset(
        {"log_y": (("chain", "draw", "obs"), ll.reshape(post.sizes["chain"], post.sizes["draw"], -1))},
        coords={"chain": post.chain.values, "draw": post.draw.values}))
