"""abtlab.bayes.mechanistic: latent ABT parameters recovered from data drawn from the
model's own generative story; predictions at an unmeasured frequency; errors."""
import numpy as np
import pandas as pd
import pytest

from abtlab.bayes.mechanistic import curves, fit_mechanistic, mechanistic_table
from abtlab.errors import ConfigError
from bayes_data import planted

PHI, PSI, F_REF = 0.2, 0.3, float(np.exp(np.mean(np.log([1.6, 2.0, 2.6, 3.3]))))


def truth(n):
    """Planted latents (log ms), linear in log2 threads as the group level assumes."""
    u = np.log2(n / 64)
    return {"log_D": np.log(10.0) + 0 * u, "log_S": np.log(4.0) + 0.5 * u,
            "log_L": np.log(3.0) + 0 * u, "log_T": np.log(2.0) + 0.3 * u}


def table(freqs, reps=4, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for n in (16, 64, 256):
        for f in freqs:
            p, mu_m, lyb = curves(truth(n), PHI, PSI, float(n), F_REF / f)
            for r in range(reps):
                q = rng.beta(p * 50, (1 - p) * 50)
                m = rng.negative_binomial(20, 20 / (20 + mu_m))
                y = np.exp(np.log(n * 131072.0) + lyb + np.log(1e3) + 0.05 * rng.standard_normal())
                rows.append(dict(policy="ext4", threads=n, file_size=131072, freq_ghz=f, rep=r,
                                 y=y, threads_clear_of_commits=rng.binomial(n, q), commits=m,
                                 commit_s=np.exp(truth(n)["log_D"] + 0.1 * rng.standard_normal()) / 1e3))
    t = pd.DataFrame(rows)
    return t.assign(log_y=np.log(t["y"]), log_f=np.log(t["freq_ghz"]))


@pytest.mark.slow
def test_recovers_planted_parameters_and_predicts_new_frequency():
    fit = fit_mechanistic(table([1.6, 2.0, 2.6, 3.3]), draws=300, tune=300, seed=3)
    par = fit.parameters().set_index("threads")
    for n in (16, 64, 256):
        d = np.exp(truth(n)["log_D"])
        assert par.loc[n, "D_lo"] < d < par.loc[n, "D_hi"]
        t_true = np.exp(truth(n)["log_T"])
        assert abs(par.loc[n, "T_ms"] / t_true - 1) < 0.3
    new = table([2.3], reps=1, seed=9)
    k = fit.predict_unblocked(new)
    for j, n in enumerate(new["threads"]):
        p, _, _ = curves(truth(n), PHI, PSI, float(n), F_REF / 2.3)
        assert abs(k[:, j].mean() - n * p) < 0.15 * n
    pred, mean, slopes, _ = fit.predict(new)
    assert np.all(np.abs(mean.mean(0) - new["log_y"]) < 0.25)
    assert fit.diagnostics["divergences"] <= 3


def test_needs_journal_counts():
    ds = planted(lambda n, p: 0.0)
    with pytest.raises(ConfigError) as e:
        mechanistic_table(ds)
    assert e.value.field == "threads_clear_of_commits"
    ds = ds.assign(threads_clear_of_commits=ds.throughput * 0 + 1, commits=ds.throughput * 0)
    with pytest.raises(ConfigError) as e:
        mechanistic_table(ds)
    assert e.value.field == "policy"
