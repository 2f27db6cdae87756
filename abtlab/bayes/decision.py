"""The optimal delayJC window as a decision under uncertainty.

For each configuration (every factor but the policy), the options are ext4 (no delay)
and the swept fixed windows of both mechanisms, delayjc:window=W (the preload library)
and kdelayjc:window=W (the jbd2 patch); an option is the policy label as the dataset
has it. A small hierarchical model gives, per (configuration, option) cell, the
posterior of the expected throughput and of the expected mean commit wait (lognormal):
    log y    ~ Normal(mu_co, sigma_o),   mu_co = m_c + e_o + tau_o z_co
    log wait ~ Normal(nu_co, omega_o),   nu_co = n_c + g_o + kappa_o u_co
with e and g zero for ext4 (the effects are relative to it) and z, u summing to zero
over configurations.
In each posterior draw the chosen option maximises E[throughput] among the options
whose E[wait] is no worse than ext4's (the reliability criterion of Chang et al., MASCOTS 2014; ext4 itself
always qualifies). The distribution of the choice over draws is the posterior of the
optimum, reported with the posterior probability that each option is feasible.
Throughput is the paper's quantity by default (`throughput`: the write op timed, eq. 3);
`var="throughput_fsync"` decides on the fsync-inclusive one (IOzone -e).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import policies
from ..data import schema
from ..errors import ConfigError
from .data import model_table, THROUGHPUTS
from .sampling import diagnostics, sample
from ..extras import require

__all__ = ["DelayFit", "fit_delay", "optimal_delay", "decision_summary", "delay_table"]

WAIT = "mean_commit_wait"


def _window(label):
    """The option's window in us (ext4: 0), or None for a policy that is not an option."""
    return policies.parse(label).window_us


def _order(t):
    """Options in order: ext4 first (the wait constraint's reference), then by window."""
    first = t.drop_duplicates("option")
    keys = sorted(zip(first["option"] != "ext4", first["window_us"], first["option"]))
    return np.array([k[2] for k in keys], dtype=object)


def delay_table(ds, var="throughput"):
    """Rows of ext4 and fixed-window delayjc runs with throughput (`var`, one of
    data.THROUGHPUTS) and commit wait."""
    if var not in THROUGHPUTS:
        raise ConfigError("var", var, " | ".join(THROUGHPUTS))
    t = model_table(ds, var, min_freqs=1)
    if WAIT not in t.columns:
        raise ConfigError(WAIT, None, "a dataset with mean_commit_wait (runs with a journal)")
    if "policy" not in t.columns:
        raise ConfigError("policy", None, "a dataset swept over policy")
    t["window_us"] = [_window(p) for p in t["policy"]]
    t = t[t["window_us"].notna()].copy()
    t["option"] = t["policy"].astype(str)
    if not (t["option"] == "ext4").any() or t["option"].nunique() < 2:
        raise ConfigError("policy", sorted(set(ds["policy"].values.tolist())),
                          "ext4 and at least one delayjc:window=W or kdelayjc:window=W level")
    t = t[np.isfinite(t[WAIT]) & (t[WAIT] > 0)].reset_index(drop=True)
    t["log_wait"] = np.log(t[WAIT].to_numpy(float))
    return t


def _cells(t):
    facs = [f for f in schema.FACTOR_DIMS if f in t.columns and f != "policy"]
    ckey = t[facs].astype(str).agg("|".join, axis=1)
    conf, ci = np.unique(ckey, return_inverse=True)
    opts = _order(t)
    oi = np.array([list(opts).index(o) for o in t["option"]])
    first = [np.flatnonzero(ci == c)[0] for c in range(len(conf))]
    configs = t.iloc[first][facs].reset_index(drop=True)
    return configs, ci, opts, oi


def build_model(t):
    """A cell is its configuration's base, plus the option's mean effect (zero for ext4,
    which identifies the effects), plus a deviation on the option's own scale. ext4
    deviates too, and each option's scale is its own: how ext4 compares with a window
    changes across configurations (with the frequency, above all) far more than two
    windows compare, and one shared scale, or ext4 tied to the base, took those changes
    for noise. The deviations sum to zero over configurations, so a shift of every base
    cannot trade against a shift of every effect (a ridge the sampler crawled along)."""
    pm = require("pymc", "bayes")
    pt = require("pytensor.tensor", "bayes")
    configs, ci, opts, oi = _cells(t)
    C, O = len(configs), len(opts)
    ly, lw = t["log_y"].to_numpy(), t["log_wait"].to_numpy()
    with pm.Model(coords={"config": np.arange(C), "option": opts, "delay": opts[1:]}) as m:
        cells = {}
        for name, obs, centre in (("y", ly, ly.mean()), ("w", lw, lw.mean())):
            base = pm.Normal(f"base_{name}", centre, 3.0, dims="config")
            eff = pm.Normal(f"eff_{name}", 0.0, 2.0, dims="delay")
            tau = pm.Gamma(f"tau_{name}", 2.0, 10.0, dims="option")
            mean = base[:, None] + pt.concatenate([pt.zeros(1), eff])[None, :]
            if C > 1:
                z = pm.ZeroSumNormal(f"z_{name}", 1.0, shape=(O, C))    # zero over configs
                mean = mean + (tau[:, None] * z).T
            sd = pm.HalfNormal(f"sd_{name}", 1.0, dims="option")
            cells[name] = pm.Deterministic(f"cell_{name}", mean + 0.5 * sd[None, :] ** 2)
            pm.Normal(f"obs_{name}", mean[ci, oi], sd[oi], observed=obs)
    return m, configs, opts, (ci, oi)


@dataclass
class DelayFit:
    idata: object
    configs: object
    options: np.ndarray           # policy labels, ext4 first
    options_us: np.ndarray        # their windows (ext4: 0)
    observed: np.ndarray          # (configs, options) True where the cell has runs
    diagnostics: dict = field(default_factory=dict)


def fit_delay(data, draws=1000, tune=1000, chains=2, seed=0, sampler="auto", target_accept=0.95,
              var="throughput"):
    """Fit the cell model to a sweep over ext4 and delayjc:window=W (throughput: `var`)."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    t0 = time.perf_counter()
    t = data if isinstance(data, pd.DataFrame) else delay_table(data, var)
    m, configs, opts, (ci, oi) = build_model(t)
    idata, info = sample(m, draws, tune, chains, seed, sampler, target_accept)
    seen = np.zeros((len(configs), len(opts)), bool)
    seen[ci, oi] = True
    diag = diagnostics(idata, ["eff_y", "eff_w", "tau_y", "tau_w", "sd_y", "sd_w"], info)
    diag["total_s"] = time.perf_counter() - t0
    window = dict(zip(t["option"], t["window_us"]))
    return DelayFit(idata, configs, opts, np.array([window[o] for o in opts]), seen, diag)


def optimal_delay(fit):
    """Long table: per configuration and option (its policy label and window_us, 0 = ext4), the posterior
    probability that the option is the optimum, that it meets the wait constraint,
    and its expected throughput (bytes/s) and mean commit wait (s)."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    post = fit.idata.posterior
    ey = np.exp(post["cell_y"].values.reshape(-1, *fit.observed.shape))
    ew = np.exp(post["cell_w"].values.reshape(-1, *fit.observed.shape))
    feasible = (ew <= ew[:, :, :1]) & fit.observed[None]
    score = np.where(feasible, ey, -np.inf)
    best = np.argmax(score, axis=2)                        # ext4 (index 0) always feasible
    rows = []
    for c in range(len(fit.configs)):
        for o, (name, w) in enumerate(zip(fit.options, fit.options_us)):
            rows.append({**fit.configs.iloc[c].to_dict(), "option": name, "window_us": w,
                         "measured": bool(fit.observed[c, o]),
                         "p_optimal": float(np.mean(best[:, c] == o)),
                         "p_feasible": float(np.mean(feasible[:, c, o])),
                         "throughput": float(np.mean(ey[:, c, o])),
                         "mean_commit_wait": float(np.mean(ew[:, c, o]))})
    return pd.DataFrame(rows)


def decision_summary(table):
    """One row per configuration: the most probable optimum, its probability, and its
    expected throughput and commit wait as multiples of ext4's (from optimal_delay)."""
    facs = [c for c in table.columns if c in schema.FACTOR_DIMS]
    rows = []
    for key, g in table.groupby(facs, sort=False):
        best, ext4 = g.loc[g["p_optimal"].idxmax()], g[g["option"] == "ext4"].iloc[0]
        rows.append({**dict(zip(facs, key if isinstance(key, tuple) else (key,))),
                     "optimum": best["option"], "p_optimal": best["p_optimal"],
                     "throughput_x_ext4": best["throughput"] / ext4["throughput"],
                     "wait_x_ext4": best["mean_commit_wait"] / ext4["mean_commit_wait"]})
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    return pd.DataFrame(rows)
