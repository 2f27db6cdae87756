"""abtlab.studies.explorer_points: the explorers' callbacks as plain functions."""
import pytest

from abtlab.errors import ConfigError
from abtlab.studies import explorer_points


def test_delay_point_values():
    r = explorer_points.delay_point(window_ms=8, max_resets=16, threads=32, freq_ghz=2.0, reps=2)
    assert r["params"] == dict(window_ms=8.0, max_resets=16, threads=32, freq_ghz=2.0, device="hdd7200")
    for pol in ("ext4", "delayjc"):
        assert r[pol]["throughput_mib_s"] > 0
        assert 0 <= r[pol]["unblocked_threads"] <= 32
        assert r[pol]["commit_wait_ms"] > 0


@pytest.mark.parametrize("kw, field", [(dict(threads=0), "threads"), (dict(freq_ghz=-1), "freq_ghz"),
                                       (dict(window_ms=0), "windows_ms"), (dict(max_resets=-2), "max_resets")])
def test_delay_point_bad_input(kw, field):
    with pytest.raises(ConfigError) as e:
        explorer_points.delay_point(reps=1, **kw)
    assert e.value.field == field


def test_frequency_point_rows_and_bad_workload():
    df = explorer_points.frequency_point("iozone", reps=2)
    assert list(df.policy) == ["fixed-high", "fixed-low", "ondemand", "sera", "abt-aware"]
    assert df.loc[df.policy == "fixed-high", "time_s_vs_fixed-high"].item() == pytest.approx(1.0)
    assert set(df.time_mode) == {"simulated"} and set(df.energy_mode) == {"modelled"}
    with pytest.raises(ConfigError, match="workload"):
        explorer_points.frequency_point("tar")
