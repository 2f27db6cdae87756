"""abtlab.stats.regression (abtlab.stats.anova / regress) on constructed data with known answers."""
import numpy as np
import pytest
import xarray as xr

from abtlab.stats import regression
from abtlab import stats
from abtlab.errors import ConfigError
from run_data import make_run


def test_stats_exports_the_regression_functions():
    assert stats.anova is regression.anova and stats.regress is regression.regress


def _pvalues(ds, **kw):
    return stats.anova(ds, **kw)["PR(>F)"]


def test_anova_detects_planted_effect_and_not_null_one():
    """policy doubles throughput at every freq; freq and threads do nothing."""
    def planted(seed):
        ds = make_run(reps=4, rsd=0.2, seed=seed)
        return ds.assign(throughput=ds.throughput * xr.DataArray([1.0, 2.0], dims="policy"))
    p = _pvalues(planted(0))
    assert p["C(policy)"] < 1e-10
    reps = [_pvalues(planted(s)) for s in range(1, 41)]
    null_rate = np.mean([r["C(freq_ghz)"] < 0.05 for r in reps])
    inter_rate = np.mean([r["C(policy):C(freq_ghz)"] < 0.05 for r in reps])
    assert all(r["C(policy)"] < 0.05 for r in reps)
    assert null_rate <= 0.15 and inter_rate <= 0.15


def test_regress_formula_order_and_errors():
    ds = make_run({"ext4": 0.5, "nojc": 1.0}, reps=4)
    fit = stats.regress(ds, order=1)
    assert fit.model.formula == "y ~ (C(policy) + C(freq_ghz) + C(threads))**1"
    assert ":" not in " ".join(fit.params.index)
    full = stats.regress(ds)
    assert any(":" in k for k in full.params.index) and full.abtlab_attrs["provenance"] == "SIMULATED"
    custom = stats.regress(ds, formula="y ~ C(policy) * freq_ghz")
    assert "C(policy)[T.nojc]:freq_ghz" in custom.params.index
    with pytest.raises(ConfigError, match="^factors"):
        stats.regress(ds.isel(rep=[0]))  # full factorial, one rep: no residual df
    with pytest.raises(ConfigError, match="^factors"):
        stats.anova(ds, factors=["device"])
    with pytest.raises(ConfigError, match="^factors"):
        stats.anova(ds.isel(threads=[0]), factors=["policy", "threads"])
    with pytest.raises(ConfigError, match="^formula"):
        stats.regress(ds, formula="y ~ C(nope)")
    with pytest.raises(ConfigError, match="log=False"):
        stats.anova(ds - 2e9)
    assert stats.anova(ds - 2e9, log=False).shape[0] == 8
