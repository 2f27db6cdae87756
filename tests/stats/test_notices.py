"""numpy's and statsmodels' warnings become abtlab's one-line notices where they mean
something (zero variance, a zero reference, a singular design, no residual spread) and
are silenced otherwise; values print as plain numbers."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from abtlab import stats
from abtlab.errors import AbtWarning, ConfigError
from run_data import make_run


def _caught(fn, *a, **k):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*a, **k)
    return out, [w for w in seen]


def _constant():
    ds = make_run(reps=4, rsd=0.0, policies=("ext4",), threads=(64,))
    ds["throughput"][:] = ds["throughput"].values.round()
    return ds


def test_zero_variance_is_one_notice_and_no_library_warning():
    out, seen = _caught(stats.test_slowdown, _constant())
    assert [type(w.message) for w in seen] == [AbtWarning], [str(w.message) for w in seen]
    assert "does not vary between repetitions at 1.6 and 3.3 GHz in 1 configuration" in str(seen[0].message)
    assert np.isnan(out["p"]).all()


def test_a_zero_reference_is_one_notice():
    ds = make_run(reps=4, policies=("ext4",), threads=(64,))
    ds["throughput"].loc[{"freq_ghz": 1.6}] = 0.0
    out, seen = _caught(stats.slowdown, ds)
    assert [type(w.message) for w in seen] == [AbtWarning], [str(w.message) for w in seen]
    assert "throughput is 0 at the reference 1.6 GHz in 1 configuration" in str(seen[0].message)
    assert np.isinf(out["ratio"].sel(freq_ghz=3.3)).all()


def test_anova_without_residual_spread_or_with_a_missing_cell_says_so():
    _, seen = _caught(stats.anova, _constant())
    assert any("zero residual variance" in str(w.message) for w in seen)
    assert all(isinstance(w.message, AbtWarning) for w in seen), [str(w.message) for w in seen]
    ds = make_run(reps=3, policies=("ext4", "nojc"), threads=(64,))
    ds["throughput"].loc[{"policy": "nojc", "freq_ghz": 3.3}] = np.nan    # a NaN point
    _, seen = _caught(stats.anova, ds)
    assert any("the design is singular: 1 of 4 coefficients" in str(w.message) for w in seen), \
        [str(w.message) for w in seen]
    assert all(isinstance(w.message, AbtWarning) for w in seen), [str(w.message) for w in seen]


def test_values_in_messages_are_plain_numbers():
    exc = ConfigError("freq_ghz", [np.float64(3.3)], "two or more frequencies")
    assert "got [3.3]" in str(exc) and "np.float64" not in str(exc)


def test_the_command_line_prints_a_notice_as_one_line(tmp_path, capsys):
    from abtlab.cli import main
    from abtlab.data import store
    path = tmp_path / "c.nc"
    ds = _constant()
    ds.attrs.update(abtlab_version="0", backend="test")
    store.save(ds, path)
    assert main(["stats", str(path), "--test"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith("abtlab stats: warning: throughput does not vary"), err
