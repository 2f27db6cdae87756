"""abtlab.bayes.data / design / baselines / compare: tables, errors, baselines (no MCMC)."""
import numpy as np
import pytest

from abtlab.bayes import baselines, compare, data, design
from abtlab.errors import ConfigError
from bayes_data import planted


def slope(n, pol):
    return -0.8 if n == 256 else 0.8


def test_model_table_rows_and_logs():
    ds = planted(slope)
    t = data.model_table(ds)
    assert len(t) == 2 * 4 * 3 * 3
    assert np.allclose(np.exp(t["log_y"]), t["y"])
    configs, idx = data.config_frame(t)
    assert len(configs) == 6 and idx.max() == 5


def test_each_machine_is_a_configuration_of_its_own():
    """Host and guest points of one dataset are not pooled into one configuration."""
    import xarray as xr
    ds = planted(slope)
    two = xr.concat([ds, ds * 0.5], dim=xr.DataArray(["host", "guest:kernel=6.1-legacy"], dims="machine",
                                                    name="machine"))
    t = data.model_table(two.transpose("policy", "freq_ghz", "threads", "file_size", "record_size",
                                       "device", "machine", "rep"))
    configs, idx = data.config_frame(t)
    assert len(configs) == 2 * 6 and set(configs["machine"]) == {"host", "guest:kernel=6.1-legacy"}
    # the baselines and the hierarchical design take the machine as a category (it is a name)
    for kind in baselines.KINDS:
        assert "C(machine)" in baselines._formula(t, "y")
        fit = baselines.fit_baseline(t, kind)
        mean, lo, hi = fit.predict_interval(t)
        assert mean.shape == (len(t),) and np.all(lo <= mean) and np.all(mean <= hi)
    assert "machine[host]" in design.ConfigDesign(configs).columns


@pytest.mark.parametrize("mutate, field", [
    (lambda ds: ds.drop_vars("throughput"), "var"),
    (lambda ds: ds.isel(freq_ghz=[0]), "freq_ghz"),
    (lambda ds: ds.isel(policy=[]), "dataset"),
    (lambda ds: ds.assign(throughput=ds.throughput * np.nan), "throughput"),
    (lambda ds: ds.assign(throughput=-ds.throughput), "throughput"),
    (lambda ds: ds.throughput, "dataset"),
])
def test_bad_datasets_name_the_field(mutate, field):
    with pytest.raises(ConfigError) as e:
        data.model_table(mutate(planted(slope)))
    assert e.value.field == field


def test_design_rejects_unseen_policy_accepts_new_threads():
    t = data.model_table(planted(slope))
    configs, _ = data.config_frame(t)
    d = design.ConfigDesign(configs)
    new = configs.iloc[:1].assign(threads=128)
    assert d.matrix(new).shape == (1, len(d.columns))
    with pytest.raises(ConfigError) as e:
        d.matrix(configs.iloc[:1].assign(policy="delayjc:window=1ms"))
    assert e.value.field == "policy"


def test_split_and_bad_holdout():
    t = data.model_table(planted(slope))
    train, test = compare.split(t, "threads=64")
    assert set(test["threads"]) == {64} and 64 not in set(train["threads"])
    for bad in ("threads", "nosuch=1", "threads=16,64,256"):
        with pytest.raises(ConfigError) as e:
            compare.split(t, bad)
        assert e.value.field == "holdout"


@pytest.mark.parametrize("kind", ["ols", "glm"])
def test_baselines_recover_planted_slopes(kind):
    t = data.model_table(planted(slope))
    fit = baselines.fit_baseline(t, kind)
    s = fit.slopes(t).set_index("threads")
    ext4 = s[s["policy"] == "ext4"]
    assert ext4.loc[256, "p_slowdown"] > 0.9 and ext4.loc[16, "p_slowdown"] < 0.1
    mean, lo, hi = fit.predict_interval(t, 0.9)
    assert np.mean((t["log_y"] >= lo) & (t["log_y"] <= hi)) > 0.6
    with pytest.raises(ConfigError):
        baselines.fit_baseline(t, "lasso")


def test_compare_baselines_on_held_out_threads():
    ds = planted(lambda n, p: 0.6 - 0.2 * np.log2(n / 16))   # linear in log2 threads
    scores, preds, _ = compare.compare(ds, "threads=64", models=("ols", "glm"))
    assert set(scores.index) == {"ols", "glm"}
    assert (scores["sign_accuracy"] == 1.0).all()
    assert (scores["rmse_log"] < 0.2).all()
    assert {"pred_log_y", "lo90", "hi90"} <= set(preds["ols"].columns)


def test_cli_fit_ols(tmp_path, capsys):
    from abtlab.cli import main
    path = tmp_path / "run.nc"
    planted(slope).to_netcdf(path)
    assert main(["fit", str(path), "--model", "ols", "--holdout", "threads=64"]) == 0
    assert "sign_accuracy" in capsys.readouterr().out
    assert main(["fit", str(path), "--model", "bogus"]) == 2


def test_the_mechanistic_table_counts_unblocked_writers_from_evidence_where_there_is_some():
    """unblocked_threads (eq. 4 on evidence) where a run has it, the span-overlap count
    where it does not."""
    import abtlab.sim as sim
    from abtlab.bayes.mechanistic import mechanistic_table
    ds = sim.simulate(reps=2, policy="ext4", freq_ghz=[1.6, 3.3], threads=64, cores=2,
                      device="hdd7200-nocache")
    t = mechanistic_table(ds)
    assert np.array_equal(t["unblocked"], t["unblocked_threads"])
    ds["unblocked_threads"][:] = np.nan
    t = mechanistic_table(ds)
    assert np.array_equal(t["unblocked"], t["threads_clear_of_commits"])
    assert np.allclose(data.model_table(ds)["y"], t["y"])
