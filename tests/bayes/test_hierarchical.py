"""abtlab.bayes.hierarchical: planted slopes recovered, unmeasured configurations
predicted from the group level, LOO available (small draws; one fit per module)."""
import numpy as np
import pytest

from abtlab.bayes import compare, data
from abtlab.bayes.hierarchical import fit_hierarchical
from abtlab.errors import ConfigError
from bayes_data import planted

pytestmark = pytest.mark.slow


def slope(n, pol):                      # speedup at 16 threads, slowdown at 256
    return 0.6 - 0.2 * np.log2(n / 16) + (0.3 if pol == "nojc" else 0.0)


@pytest.fixture(scope="module")
def split_fit():
    ds = planted(slope, threads=(16, 32, 64, 128, 256))
    train, test = compare.split(data.model_table(ds), "threads=64")
    return fit_hierarchical(train, draws=300, tune=300, chains=2, seed=1), test


def test_planted_slopes_recovered(split_fit):
    fit, _ = split_fit
    p = fit.p_slowdown().set_index(["policy", "threads"])
    assert p.loc[("ext4", 256), "p_slowdown"] > 0.9
    assert p.loc[("ext4", 16), "p_slowdown"] < 0.1
    assert p.loc[("nojc", 16), "p_slowdown"] < 0.1
    assert abs(p.loc[("ext4", 256), "slope"] - slope(256, "ext4")) < 0.15
    assert fit.diagnostics["rhat_max"] < 1.1        # 300 draws: a sanity bound only


def test_unmeasured_configuration_predicted(split_fit):
    fit, test = split_fit
    scores, rows = compare.evaluate(fit, test)
    assert scores["sign_accuracy"] == 1.0
    assert scores["rmse_log"] < 0.15
    assert scores["coverage90"] > 0.7
    _, _, b, configs = fit.predict(test)
    truth = np.array([slope(n, p) for n, p in zip(configs["threads"], configs["policy"])])
    assert np.all(np.abs(b.mean(0) - truth) < 0.2)


def test_loo_and_unknown_policy(split_fit):
    import arviz as az
    fit, test = split_fit
    loo = az.loo(fit.idata)
    assert np.isfinite(loo.elpd_loo)
    with pytest.raises(ConfigError) as e:
        fit.predict(test.assign(policy="batch:min_us=0,max_us=100"))
    assert e.value.field == "policy"
