"""abtlab.bayes.baselines on datasets at the edge of what it can fit: one configuration
fits one slope; a model its runs cannot determine is refused in one line naming --model."""
import pytest

from abtlab.bayes import baselines, data
from abtlab.errors import ConfigError
from bayes_data import planted


def one_config(reps=3):
    return planted(lambda n, p: -0.5, threads=(64,), policies=("ext4",), reps=reps)


@pytest.mark.parametrize("kind", baselines.KINDS)
def test_one_configuration_fits_its_slope(kind):
    t = data.model_table(one_config())
    assert baselines._formula(t, "y") == "y ~ x"
    s = baselines.fit_baseline(t, kind).slopes(t)
    assert len(s) == 1 and abs(s["slope"].iloc[0] + 0.5) < 0.1 and s["p_slowdown"].iloc[0] > 0.99


@pytest.mark.parametrize("kind", baselines.KINDS)
def test_as_many_coefficients_as_runs_is_refused(kind):
    t = data.model_table(one_config(reps=1)).query("freq_ghz in (1.6, 3.3)")
    with pytest.raises(ConfigError) as err:
        baselines.fit_baseline(t, kind)
    assert err.value.field == "model" and "2 coefficients" in str(err.value) and "2 runs" in str(err.value)


def test_a_slope_no_run_determines_is_refused():
    # ext4 ran only at 1.6 GHz and nojc only at 3.3 GHz: neither policy's slope is known
    t = data.model_table(planted(lambda n, p: 0.3, threads=(64,)))
    t = t[((t["policy"] == "ext4") & (t["freq_ghz"] == 1.6)) | ((t["policy"] == "nojc") & (t["freq_ghz"] == 3.3))]
    with pytest.raises(ConfigError, match="rank 2"):
        baselines.fit_baseline(t, "ols")


@pytest.mark.parametrize("kind", baselines.KINDS)
def test_cli_refuses_in_one_line(tmp_path, capsys, kind):
    from abtlab.cli import main
    path = tmp_path / "run.nc"
    one_config(reps=1).sel(freq_ghz=[1.6, 3.3]).to_netcdf(path)
    assert main(["fit", str(path), "--model", kind]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"abtlab fit: error: model: got '{kind}'")
    one_config().to_netcdf(path)
    assert main(["fit", str(path), "--model", kind]) == 0
    assert "d log y / d log f per configuration" in capsys.readouterr().out


@pytest.mark.parametrize("kind", baselines.KINDS)
def test_constant_data_is_one_notice_and_varied_data_none(kind):
    import warnings
    from abtlab.errors import AbtWarning
    ds = one_config()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        baselines.fit_baseline(data.model_table(ds), kind)
    assert not [w for w in seen if issubclass(w.category, AbtWarning)]
    ds = planted(lambda n, p: -0.5, threads=(64,), policies=("ext4",), noise=0.0)   # all alike
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        baselines.fit_baseline(data.model_table(ds), kind)
    said = [str(w.message) for w in seen if issubclass(w.category, AbtWarning)]
    assert said == ["the runs do not vary between repetitions (constant data): the fit's standard "
                    "errors and p_slowdown are not meaningful"], [str(w.message) for w in seen]
