"""The adaptive repetition rule of abtlab.sweep.reps: how many more runs a point gets."""
import numpy as np
import pytest
import xarray as xr

from abtlab import stats
from abtlab.data.block import from_results
from abtlab.data.result import RunResult
from abtlab.stats import intervals
from abtlab.sweep import loop as sweep, reps
from abtlab.errors import ConfigError


def _done(values_by_point):
    """Finished runs as the sweep holds them: part name -> RunBlock (one run each)."""
    done = {}
    for i, vals in values_by_point.items():
        for r, v in enumerate(vals):
            done[f"p{i}-r{r}"] = from_results([RunResult({"throughput": v})], {}, i, [r])
    return done


def _sample(rng, n, cv):
    """n values with exactly this sample RSD (so the test does not depend on luck)."""
    z = rng.standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return 100.0 * (1 + cv * z)


def test_noisy_point_gets_what_its_rsd_needs_quiet_point_none():
    rng = np.random.default_rng(0)
    rule = sweep.Reps(min=5, max=50, target=0.05)
    points = [{"threads": 1}, {"threads": 2}]
    done = _done({0: _sample(rng, 10, 0.02), 1: _sample(rng, 10, 0.10)})
    more = reps.more_reps(rule, points, {"threads": [1, 2]}, done, {0: 10, 1: 10})
    assert 0 not in more                                  # 0.02 RSD over 10 runs is enough
    need = stats.reps_for_cv(0.10, 0.05)                  # t(n-1)*0.10/sqrt(n) <= 0.05
    assert need == 18 and more[1] == need                 # within 2x: straight to the need


def test_growth_is_capped_at_doubling_and_at_max():
    rng = np.random.default_rng(1)
    done = _done({0: _sample(rng, 5, 0.5)})
    more = reps.more_reps(sweep.Reps(min=5, max=50, target=0.05), [{"t": 1}], {"t": [1]},
                            done, {0: 5})
    assert more == {0: 10}
    more = reps.more_reps(sweep.Reps(min=5, max=8, target=0.05), [{"t": 1}], {"t": [1]},
                            done, {0: 5})
    assert more == {0: 8}


def test_slowdown_target_also_grows_the_reference_point():
    """The ratio against the lowest frequency is wide because the reference is noisy:
    the reference must get more runs, not only the point divided by it."""
    rng = np.random.default_rng(2)
    levels = {"freq_ghz": [1.6, 3.3]}
    points = sweep.expand(levels)
    done = _done({0: _sample(rng, 5, 0.30), 1: _sample(rng, 5, 0.01)})
    rule = sweep.Reps(min=5, max=50, target=0.05, on="slowdown")
    more = reps.more_reps(rule, points, levels, done, {0: 5, 1: 5})
    assert more.get(0, 5) > 5 and more.get(1, 5) > 5
    # on the mean, the quiet point is already done
    more = reps.more_reps(sweep.Reps(min=5, max=50, target=0.05), points, levels, done, {0: 5, 1: 5})
    assert 1 not in more and more[0] == 10


def test_blocked_order_keeps_each_block_together():
    levels = {"threads": [1, 2], "freq_ghz": [1.6, 2.0, 3.3]}
    points = sweep.expand(levels)
    todo = [(i, r) for i in range(len(points)) for r in range(4)]
    runs = sweep._ordered(todo, points, "blocked", np.random.default_rng(0))
    assert sorted(runs) == sorted(todo)
    for k in range(0, len(runs), 3):                 # 3 frequencies per block, back to back
        block = runs[k:k + 3]
        assert len({r for _, r in block}) == 1
        assert len({points[i]["threads"] for i, _ in block}) == 1
    assert runs != sweep._ordered(todo, points, "sequential", None)
    with pytest.raises(ConfigError) as e:
        sweep.run("sim", {"threads": [2]}, reps=1, quiet=True, order="zigzag")
    assert e.value.field == "order"


def test_paired_slowdown_rule_uses_the_covariance_and_keeps_blocks_complete():
    """Two frequencies sharing a large block effect: the paired ratio is tight, so a
    blocked sweep stops where an unpaired one would ask for many more runs."""
    rng = np.random.default_rng(3)
    shared = rng.normal(0, 0.3, 10)
    lo = 100 * (1 + shared + rng.normal(0, 0.02, 10))
    hi = 60 * (1 + shared + rng.normal(0, 0.02, 10))
    levels = {"freq_ghz": [1.6, 3.3]}
    points = sweep.expand(levels)
    rule = sweep.Reps(min=5, max=50, target=0.05, on="slowdown")
    done = _done({0: lo, 1: hi})
    assert reps.more_reps(rule, points, levels, done, {0: 10, 1: 10}, paired=True) == {}
    unpaired = reps.more_reps(rule, points, levels, done, {0: 10, 1: 10}, paired=False)
    assert unpaired[0] == unpaired[1] == 20
    # paired with a noisy point: both frequencies of the configuration grow together
    done = _done({0: lo, 1: 60 * (1 + rng.normal(0, 0.3, 10))})
    more = reps.more_reps(rule, points, levels, done, {0: 10, 1: 10}, paired=True)
    assert more[0] == more[1] > 10


def test_reps_for_cv_uses_the_level():
    assert stats.reps_for_cv(0.1, 0.05, 0.99) > stats.reps_for_cv(0.1, 0.05, 0.95) > \
        stats.reps_for_cv(0.1, 0.05, 0.80)
    for level in (0.8, 0.95, 0.99):
        n = stats.reps_for_cv(0.1, 0.05, level)
        assert intervals._tcrit(level, n - 1) * 0.1 / np.sqrt(n) <= 0.05
        assert intervals._tcrit(level, n - 2) * 0.1 / np.sqrt(n - 1) > 0.05


def test_adaptive_sweep_stops_each_point_at_target_or_max():
    """Simulated sweep, points of different noise: every point ends within the target
    or at the maximum, and the quieter points need fewer runs."""
    from abtlab.sweep import runner
    rule = sweep.Reps(min=4, max=30, target=0.01)   # at 0.03 both points stop at min
    ds = runner.run("sim", reps=rule, seed=5, quiet=True, threads="16", policy="ext4,nojc",
                    freq="1.6", device="hdd7200")
    n = ds["throughput"].notnull().sum("rep").values.ravel()
    hw = [stats.ci_halfwidth(v, 0.95) for v in
          ds["throughput"].stack(p=["policy"]).transpose("p", ...).values.reshape(2, -1)]
    for k, h in zip(n, hw):
        assert h <= 0.01 or k == 30
    assert n.min() < n.max()


def test_bad_rule_names_the_field():
    with pytest.raises(ConfigError, match="repetitions.on"):
        sweep.Reps(on="median")
    with pytest.raises(ConfigError, match="repetitions.max"):
        sweep.Reps(min=5, max=4)


def test_blocked_sim_sweep_gives_paired_slowdown(tmp_path):
    """A blocked spec runs paired blocks; abtlab.stats.slowdown then pairs by rep itself."""
    from abtlab.sweep import spec
    ds = spec.run_spec({"backend": "sim", "seed": 4, "repetitions": 6,
                        "factors": {"threads": [8], "freq": "1.6,3.3", "device": "hdd7200"},
                        "execution": {"order": "blocked"}}, out=tmp_path / "b.nc", quiet=True)
    assert ds.attrs["order"] == "blocked"
    sd = stats.slowdown(ds)
    assert sd.attrs["paired"] == 1
    x = ds["throughput"].squeeze()
    want = stats.ratio_ci(x.sel(freq_ghz=3.3).values, x.sel(freq_ghz=1.6).values, paired=True)
    got = sd.sel(freq_ghz=3.3).squeeze()
    assert (float(got.ratio), float(got.ci_low), float(got.ci_high)) == pytest.approx(want)
    assert stats.slowdown(ds, paired=False).attrs["paired"] == 0
    t = stats.test_slowdown(ds)
    assert t.attrs["test"].startswith("one-sided paired")
    d = np.log(x.sel(freq_ghz=3.3).values) - np.log(x.sel(freq_ghz=1.6).values)
    from scipy.stats import ttest_1samp
    assert float(t["p"].iloc[0]) == pytest.approx(ttest_1samp(d, 0, alternative="less").pvalue)
    assert stats.test_slowdown(ds, paired=False).attrs["test"].startswith("one-sided Welch")


def test_allocation_bound_is_one_when_points_are_alike_and_grows_with_spread():
    """benchmarks.adaptive_reps prints it: fixed runs / runs needed at the widest spread."""
    from benchmarks.adaptive_reps import allocation_bound
    alike = [("a", 50, 0.1, 0.3), ("b", 50, 0.1, 0.3)]
    assert allocation_bound(alike, 0.1, 5) == pytest.approx(1.0)
    mixed = [("a", 50, 0.1, 0.3), ("b", 50, 0.05, 0.15)]   # b needs a quarter of the runs
    assert allocation_bound(mixed, 0.1, 5) == pytest.approx(100 / 62.5)
    assert allocation_bound([("a", 50, 0.1, 0), ("b", 50, 0.001, 0)], 0.1, 5) == pytest.approx(100 / 55)


def test_benchmark_rows_give_every_ratio_to_the_lowest_frequency():
    """benchmarks.adaptive_reps on slowdown: one row per configuration and frequency above
    the lowest, each the delta-method half-width of that ratio."""
    from benchmarks.adaptive_reps import _rows, _runs
    rng = np.random.default_rng(0)
    x = rng.lognormal(0, 0.2, (3, 2, 8))                  # freq x threads x rep
    x[0, 1, 7] = np.nan                                   # one run missing
    ds = xr.Dataset({"throughput": (("freq_ghz", "threads", "rep"), x)},
                    coords={"freq_ghz": [1.6, 2.4, 3.3], "threads": [16, 64], "rep": np.arange(8)})
    rows = _rows(ds, "throughput", "slowdown", paired=False)
    assert [r[0] for r in rows] == ["16 2.4/1.6", "64 2.4/1.6", "16 3.3/1.6", "64 3.3/1.6"]
    assert [r[1] for r in rows] == [16, 15, 16, 15]
    want = stats.ratio_halfwidth(x[2, 1], x[0, 1], method="delta", paired=False)
    assert rows[3][2] == pytest.approx(want)
    assert _runs(ds, "throughput") == 47


def test_benchmark_pins_real_p_states_where_cpufreq_exists(tmp_path):
    """benchmarks.adaptive_reps --freq auto: the CPU's own P-states where cpufreq can pin
    them (the paper grid: six from lowest to highest), emulated levels where it cannot."""
    from benchmarks.adaptive_reps import freq_levels
    from tests.system.test_cpufreq import make_tree
    acpi = make_tree(tmp_path / "acpi", "acpi")            # 0.8 1.6 2.0 2.6 3.3 GHz
    assert freq_levels("paper", "mean", "auto", acpi) == ("real", "0.8,1.6,2,2.6,3.3")
    assert freq_levels("sweep", "slowdown", "auto", acpi) == ("real", "0.8,3.3")
    assert freq_levels("sweep", "mean", "real", acpi) == ("real", "3.3")
    pstate = make_tree(tmp_path / "pstate", "pstate")      # 0.8..3.3 by 100 MHz
    assert freq_levels("paper", "slowdown", "real", pstate) == ("real", "0.8,1.3,1.8,2.3,2.8,3.3")
    none = tmp_path / "none"
    none.mkdir()
    assert freq_levels("paper", "mean", "auto", none) == ("emulated", "1.6,2.0,2.3,2.6,3.0,3.3")
    assert freq_levels("sweep", "slowdown", "auto", none) == ("emulated", "1.6,3.3")
    assert freq_levels("metarates", "mean", "real", acpi) == ("real", "0.8,1.6,2,2.6,3.3")


def test_benchmark_replays_the_rule_on_the_fixed_runs():
    """benchmarks.adaptive_reps replays the rule on the fixed arm's own runs: a quiet
    point keeps its first `min` runs, a noisy one grows until its CI meets the target,
    and the runs kept are the first ones of each point, unchanged."""
    from benchmarks.adaptive_reps import replay
    rng = np.random.default_rng(3)
    x = np.stack([_sample(rng, 50, 0.02), _sample(rng, 50, 0.20)])
    ds = xr.Dataset({"throughput": (("threads", "rep"), x)},
                    coords={"threads": [1, 64], "rep": np.arange(50)})
    rule = sweep.Reps(min=5, max=50, target=0.08, metric="throughput")
    out = replay(ds, rule)["throughput"].values
    n = np.isfinite(out).sum(axis=1)
    assert n[0] == 5 and 5 < n[1] < 50
    np.testing.assert_array_equal(out[1, :n[1]], x[1, :n[1]])
    assert stats.ci_halfwidth(x[1, :n[1]]) <= 0.08 < stats.ci_halfwidth(x[1, :n[1] // 2])
