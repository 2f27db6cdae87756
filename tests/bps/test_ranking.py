"""abtlab.bps.ranking: a winner only where the bootstrap CI of its lead excludes 0."""
import numpy as np
import pandas as pd
import pytest

from abtlab.bps import EXPECTED_SIGN, METRICS, ranking
from abtlab.errors import ConfigError


def _table(n, noise, seed=0):
    """runtime falls with bps exactly; iops, bandwidth and arpt follow it with `noise`."""
    rng = np.random.default_rng(seed)
    bps = np.linspace(1, 10, n)
    runtime = 100 / bps
    return pd.DataFrame({"runtime": runtime, "bps": bps,
                         "iops": bps + noise * rng.standard_normal(n) * 5,
                         "bandwidth": bps + noise * rng.standard_normal(n) * 5,
                         "arpt": runtime + noise * rng.standard_normal(n) * 50})


def test_a_clear_leader_is_named_winner():
    r = ranking.rank(_table(30, 1.0), "runtime", METRICS, EXPECTED_SIGN)
    assert r.attrs["winner"] == "bps" and r.attrs["n"] == 30
    others = r[r.metric != "bps"]
    assert (others.diff_low > 0).all()
    row = r.set_index("metric").loc["bps"]
    assert row.ci_low <= row.normalized <= row.ci_high


def test_metrics_that_tie_give_no_winner():
    """Every metric a linear copy of bps (arpt mirrored, as its expected sign is the other
    one): the CI of every lead is [0, 0], never above 0."""
    t = _table(12, 0.0)
    t["iops"], t["bandwidth"], t["arpt"] = t.bps, 2 * t.bps, 20 - t.bps
    r = ranking.rank(t, "runtime", METRICS, EXPECTED_SIGN)
    assert r.attrs["winner"] is None
    np.testing.assert_allclose(r.normalized, r.normalized.iloc[0])
    assert (r.diff_high.abs() < 1e-12).all()


def test_three_points_give_a_cc_but_no_ci_and_no_winner():
    r = ranking.rank(_table(3, 1.0), "runtime", METRICS, EXPECTED_SIGN)
    assert r.attrs["winner"] is None
    assert r.normalized.notna().all() and r.ci_low.isna().all()


def test_normalised_cc_is_pearson_times_table1_sign():
    t = _table(10, 0.5)
    r = ranking.rank(t, "runtime", METRICS, EXPECTED_SIGN).set_index("metric")
    for m in METRICS:
        assert r.loc[m, "normalized"] == pytest.approx(np.corrcoef(t[m], t.runtime)[0, 1] * EXPECTED_SIGN[m])


@pytest.mark.parametrize("kw,field", [({"level": 1.5}, "level"), ({"n_boot": 10}, "n_boot"),
                                      ({"y": "nope"}, "df")])
def test_bad_input(kw, field):
    args = {"y": "runtime", **kw}
    with pytest.raises(ConfigError) as exc:
        ranking.rank(_table(10, 0.5), args.pop("y"), METRICS, EXPECTED_SIGN, **args)
    assert exc.value.field == field
