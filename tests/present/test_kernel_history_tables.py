"""abtlab.present.kernel_history_tables: the answer, ratio and timing-terms tables of the
kernel history study (on constructed datasets with known ratios, one row missing)."""
import math

import numpy as np
import pytest

from abtlab import stats
from abtlab.errors import ConfigError
from abtlab.present import kernel_history_tables as kht
from abtlab.studies import kernel_history as kh

from tests.studies.kernel_history_data import LOW, constructed, history


@pytest.fixture
def hist():
    return history()


def test_answer_table_rows_ratios_and_missing_row(hist):
    t = kht.answer_table(hist)
    assert list(t.index) == list(kh.ROWS)
    col = "3.3/1.6 GHz [95% CI]"
    r, lo, hi = stats.ratio_ci(np.array([50.0, 52.0, 48.0]), np.array(LOW))   # what `abtlab stats --test` gives
    assert t.loc["host", col] == stats.format_ratio(r, lo, hi) and r == pytest.approx(0.5)
    assert "SLOWER" in t.loc["host", "note"] and "emulated" in t.loc["host", "data"]
    assert "no clear difference" in t.loc["guest 6.1", "note"] and "VIRTUAL" in t.loc["guest 6.1", "data"]
    assert t.loc["guest 6.1-legacy", col] == "-" and t.loc["guest 6.1-legacy", "note"] == "cannot run here: no qemu"
    assert t.loc["simulator", col].startswith("2.00 [") and "faster" in t.loc["simulator", "note"]
    assert t.loc["simulator", "data"] == "SIMULATED" and t.loc["host", "n"] == "3 / 3"
    assert t.loc["host", "machine"] == "host" and t.loc["guest 6.1", "machine"] == "guest:depth=256"


def test_ratio_table_every_policy_and_the_test(hist):
    df = kht.ratio_table(hist)
    nojc = df[df.policy == "nojc"].set_index("row")
    assert nojc.ratio.to_numpy() == pytest.approx([2.0, 2.0, 2.0])
    host = df[(df.policy == "ext4") & (df.row == "host")].iloc[0]
    assert host.p < 0.01                         # one-sided: slower at 3.3 GHz
    assert math.isnan(df[df.row == "guest 6.1-legacy"].ratio.iloc[0])
    with pytest.raises(ConfigError) as e:
        kht.answer_table(hist, policy="delayjc")
    assert e.value.field == "policy"


def test_answer_table_of_a_stored_dataset(tmp_path):
    """data = a path: the host row's ratio from the file, the simulator's simulated."""
    import abtlab
    path = tmp_path / "kh.nc"
    abtlab.save(constructed([50.0, 52.0, 48.0], machines=["host", "guest:depth=256"]), path)
    t = kht.answer_table(kh.history_data(str(path), kh.make_point(reps=3, threads=64, depth=256)))
    assert t.loc["host", "3.3/1.6 GHz [95% CI]"].startswith("0.50 [")
    assert t.loc["simulator", "data"] == "SIMULATED"


def test_terms_table_gives_each_row_its_timing_terms_in_ms():
    from abtlab.model.terms import TERMS
    h = kh.history_data("sim", kh.make_point(threads=8, reps=2))
    t = kht.terms_table(h)
    assert list(t.index.get_level_values(0).unique()) == [kh.SIM]
    assert {f"{k}_ms" for k in TERMS if k != "writers_before_first_commit"} <= set(t.columns)
    assert (t["write_op_unblocked_ms"] > 0).all() and (t["data"] == "SIMULATED").all()
    with pytest.raises(ConfigError, match="policy"):
        kht.terms_table(h, policy="nope")
