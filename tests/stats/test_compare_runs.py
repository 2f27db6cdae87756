"""abtlab.stats.compare: two runs point by point, pyperf compare_to style."""
import pytest

from abtlab.errors import ConfigError
from abtlab.stats.compare import compare_runs, higher_is_better
from tests.run_data import make_run


def test_two_runs_of_one_population_are_not_significant():
    a, b = make_run(seed=1, reps=10, rsd=0.05), make_run(seed=2, reps=10, rsd=0.05)
    df = compare_runs(a, b, "throughput")
    assert len(df) == 8 and set(df.verdict) == {"not significant"}
    assert ((df.ci_low < 1) & (df.ci_high > 1)).mean() >= 0.75     # CIs mostly contain 1


def test_a_faster_run_is_faster_and_a_slower_one_slower_with_the_ratio():
    a = make_run(seed=1, reps=8, rsd=0.02)
    b = make_run(seed=2, reps=8, rsd=0.02, base=1.5e9)
    df = compare_runs(a, b, "throughput")
    assert (df["B/A"].between(1.4, 1.6)).all() and set(df.verdict) == {"1.50x faster"} or \
        all(v.endswith("x faster") for v in df.verdict)
    assert (df.ci_low > 1.4).all() and (df.ci_high < 1.6).all()
    back = compare_runs(b, a, "throughput")
    assert all(v.endswith("x slower") for v in back.verdict)


def test_a_time_that_grows_is_slower():
    a = make_run(seed=1, reps=8, rsd=0.02)
    b = make_run(seed=2, reps=8, rsd=0.02, base=2e9)
    a.throughput.attrs["units"], b.throughput.attrs["units"] = "s", "s"
    assert all(v.endswith("x slower") for v in compare_runs(a, b, "throughput").verdict)
    assert higher_is_better("files/s") and higher_is_better("s") is False
    assert higher_is_better("1") is None


def test_single_level_factors_that_differ_are_what_the_runs_compare():
    a = make_run(seed=1, policies=("ext4",))
    b = make_run(seed=2, policies=("nojc",))
    df = compare_runs(a, b, "throughput")
    assert df.attrs["differ"] == {"policy": ("ext4", "nojc")} and len(df) == 4


def test_runs_without_a_shared_point_or_the_variable_are_refused():
    a = make_run(threads=(64,), freqs=(1.6, 2.0))
    b = make_run(threads=(64,), freqs=(3.3, 3.6))
    with pytest.raises(ConfigError, match="sharing a level of freq_ghz"):
        compare_runs(a, b, "throughput")
    with pytest.raises(ConfigError, match="--var"):
        compare_runs(a, a, "nope")
