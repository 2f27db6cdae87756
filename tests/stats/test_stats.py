"""abtlab.stats on constructed data with known answers, on a simulated run, and the CLI."""
import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

from abtlab import stats
from abtlab.errors import ConfigError
from run_data import make_run


# ------------------------------------------------------------ point summary, CI width
def test_point_summary_matches_t_interval_and_skips_nan():
    ds = make_run(reps=5)
    ds["throughput"][0, 0, 0, :] = [1.0, 2.0, 3.0, 4.0, np.nan]
    s = stats.point_summary(ds, level=0.9).sel(policy="ext4", freq_ghz=1.6, threads=64)
    lo, hi = sps.t.interval(0.9, 3, loc=2.5, scale=np.std([1, 2, 3, 4], ddof=1) / 2)
    assert int(s.n) == 4 and float(s["mean"]) == pytest.approx(2.5)
    assert (float(s.ci_low), float(s.ci_high)) == pytest.approx((lo, hi))
    assert float(s.rsd) == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2.5)
    assert s.attrs["provenance"] == "SIMULATED" and s["mean"].attrs["units"] == "bytes/s"


def test_point_summary_single_rep_has_no_ci_and_point_stats_agrees():
    from abtlab.stats.intervals import point_stats
    ds = make_run(reps=4)
    ds["throughput"][1, 1, 1, 1:] = np.nan
    s = stats.point_summary(ds)
    one = s.sel(policy="nojc", freq_ghz=3.3, threads=256)
    assert int(one.n) == 1 and math.isnan(float(one.ci_low))
    xr.testing.assert_identical(point_stats(ds, "throughput"), s)
    empty = ds.where(ds.throughput < 0)
    assert int(point_stats(empty, "throughput").n.sum()) == 0  # plots of it stay empty
    with pytest.raises(ConfigError, match="all NaN"):
        stats.point_summary(empty)


def test_ci_halfwidth_known_answer_nan_and_small_n():
    x = [10.0, 12.0, np.nan, 14.0]
    half = sps.t.ppf(0.975, 2) * 2.0 / math.sqrt(3)
    assert stats.ci_halfwidth(x, relative=False) == pytest.approx(half)
    assert stats.ci_halfwidth(x) == pytest.approx(half / 12.0)
    assert stats.ci_halfwidth([5.0]) == math.inf
    assert stats.ci_halfwidth([np.nan, 3.0, np.nan]) == math.inf
    assert stats.ci_halfwidth([]) == math.inf
    assert stats.ci_halfwidth([-1.0, 1.0]) == math.inf  # relative to a zero mean


def test_reps_needed_is_the_smallest_n_meeting_the_target():
    pilot = np.random.default_rng(1).normal(100, 30, 8)
    cv = pilot.std(ddof=1) / pilot.mean()
    n = stats.reps_needed(pilot, 0.05)
    width = lambda k: sps.t.ppf(0.975, k - 1) * cv / math.sqrt(k)  # noqa: E731
    assert width(n) <= 0.05 < width(n - 1)
    assert stats.reps_needed([3.0], 0.05) == 2
    with pytest.raises(ConfigError, match="target_rel_halfwidth"):
        stats.reps_needed(pilot, 0)


# ------------------------------------------------------------ ratio CIs
@pytest.mark.parametrize("method,n", [("fieller", 8), ("delta", 8), ("bootstrap", 20)])
def test_ratio_ci_coverage(method, n):
    """95% CIs of mean(a)/mean(b) = 0.53 cover it in about 95% of 200 seeded replicates."""
    rng = np.random.default_rng(42)
    hits = 0
    for _ in range(200):
        a, b = rng.normal(53, 8, n), rng.normal(100, 15, n)
        _, lo, hi = stats.ratio_ci(a, b, 0.95, method, n_boot=1000, seed=int(rng.integers(1 << 30)))
        hits += lo <= 0.53 <= hi
    assert 0.89 <= hits / 200 <= 0.99


def test_ratio_ci_level_changes_coverage():
    """A 50% interval must cover about half the time: the coverage test can fail."""
    rng = np.random.default_rng(7)
    hits = sum(lo <= 0.53 <= hi for lo, hi in
               (stats.ratio_ci(rng.normal(53, 8, 8), rng.normal(100, 15, 8), 0.5)[1:]
                for _ in range(200)))
    assert 0.38 <= hits / 200 <= 0.62


def test_fieller_is_unbounded_when_the_reference_mean_is_near_zero():
    r, lo, hi = stats.ratio_ci([1.0, 1.1, 0.9], [0.1, -0.2, 0.15], method="fieller")
    assert (lo, hi) == (-math.inf, math.inf) and r == pytest.approx(1.0 / (0.05 / 3))
    with pytest.raises(ConfigError, match="method"):
        stats.ratio_ci([1, 2], [1, 2], method="wald")


def test_ratio_halfwidth_for_adaptive_repetitions():
    a, b = [50.0, 55.0, 54.0, 53.0], [100.0, 98.0, 104.0, 101.0]
    r, lo, hi = stats.ratio_ci(a, b)
    assert stats.ratio_halfwidth(a, b) == pytest.approx((hi - lo) / 2 / r)
    assert stats.ratio_halfwidth(a, b, relative=False) == pytest.approx((hi - lo) / 2)
    assert stats.ratio_halfwidth(a, [100.0, np.nan]) == math.inf
    assert stats.ratio_halfwidth(a * 4, b * 4) < stats.ratio_halfwidth(a, b)


# ------------------------------------------------------------ slowdown
def test_slowdown_ratio_reference_and_table():
    ds = make_run({"ext4": 0.53, "nojc": 1.0}, reps=8, rsd=0.05)
    sd = stats.slowdown(ds)
    x = ds.throughput
    want = x.sel(freq_ghz=3.3).mean("rep") / x.sel(freq_ghz=1.6).mean("rep")
    np.testing.assert_allclose(sd.ratio.sel(freq_ghz=3.3), want.transpose(*sd.ratio.sel(freq_ghz=3.3).dims))
    assert (sd.ratio.sel(freq_ghz=1.6) == 1).all() and sd.attrs["ref_freq_ghz"] == 1.6
    ext4 = sd.sel(policy="ext4", freq_ghz=3.3)
    assert ((ext4.ci_low < 0.53) & (ext4.ci_high > 0.53)).all() and (ext4.n_ref == 8).all()
    tab = stats.slowdown_table(sd)
    row = tab[(tab.policy == "ext4") & (tab.threads == 64) & (tab.freq_ghz == 3.3)].iloc[0]
    assert row.slowdown == stats.format_ratio(row.ratio, row.ci_low, row.ci_high)
    assert row.slowdown.startswith(f"{row.ratio:.2f} [")
    inv = stats.slowdown(ds, ref=3.3).ratio.sel(freq_ghz=1.6)
    np.testing.assert_allclose(inv, 1 / sd.ratio.sel(freq_ghz=3.3))


def test_slowdown_bootstrap_is_seeded():
    ds = make_run({"ext4": 0.6, "nojc": 0.9})
    a, b = (stats.slowdown(ds, method="bootstrap", seed=s, n_boot=500) for s in (3, 3))
    c = stats.slowdown(ds, method="bootstrap", seed=4, n_boot=500)
    xr.testing.assert_identical(a, b)
    assert not np.allclose(a.ci_low.sel(freq_ghz=3.3), c.ci_low.sel(freq_ghz=3.3))


def test_slowdown_bad_input_names_the_field():
    ds = make_run()
    with pytest.raises(ConfigError, match="^ref"):
        stats.slowdown(ds, ref=2.0)
    with pytest.raises(ConfigError, match="freq_ghz"):
        stats.slowdown(ds.isel(freq_ghz=0, drop=True))
    with pytest.raises(ConfigError, match="freq_ghz"):
        stats.slowdown(ds.isel(freq_ghz=[0]))


@pytest.mark.parametrize("fn", [stats.point_summary, stats.slowdown, stats.test_slowdown,
                                stats.anova])
def test_bad_datasets_raise_config_error(fn):
    ds = make_run()
    with pytest.raises(ConfigError, match="^var: got 'fcr'.*throughput"):
        fn(ds, "fcr")
    with pytest.raises(ConfigError, match="empty"):
        fn(ds.isel(rep=slice(0, 0)), "throughput")
    with pytest.raises(ConfigError, match="all NaN"):
        fn(ds.where(ds.throughput < 0), "throughput")
    with pytest.raises(ConfigError, match="^var.*none"):
        fn(xr.Dataset(), "throughput")
    with pytest.raises(ConfigError, match="throughput.dims"):
        fn(ds.mean("rep"), "throughput")
    with pytest.raises(ConfigError, match="^ds"):
        fn(ds.throughput, "throughput")


# ------------------------------------------------------------ test of slowdown
def _holm(p):
    order = np.argsort(p)
    adj = np.minimum(1, np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order]))
    out = np.empty_like(adj)
    out[order] = adj
    return out


def test_test_slowdown_p_values_and_holm_by_hand():
    ds = make_run({"ext4": 0.8, "nojc": 0.97}, reps=5, rsd=0.1, seed=3)
    t = stats.test_slowdown(ds)
    for _, row in t.iterrows():
        pt = ds.throughput.sel(policy=row.policy, threads=row.threads)
        ref = sps.ttest_ind(np.log(pt.sel(freq_ghz=3.3)), np.log(pt.sel(freq_ghz=1.6)),
                            equal_var=False, alternative="less")
        assert row.p == pytest.approx(ref.pvalue) and row.t == pytest.approx(ref.statistic)
    np.testing.assert_allclose(t.p_adj, _holm(t.p.to_numpy()))
    assert list(t.reject) == list(t.p_adj < 0.05)
    bh = stats.test_slowdown(ds, method="fdr_bh")
    p = t.p.to_numpy()
    order = np.argsort(p)
    want = np.minimum.accumulate((p[order] * len(p) / np.arange(1, len(p) + 1))[::-1])[::-1]
    np.testing.assert_allclose(np.sort(bh.p_adj), np.minimum(want, 1))


def test_test_slowdown_finds_planted_effect_and_missing_reps_are_not_counted():
    ds = make_run({"ext4": 0.5, "nojc": 1.0}, reps=6, rsd=0.1, seed=5)
    ds["throughput"][1, 1, 1, 1:] = np.nan  # nojc, 3.3 GHz, 256 threads: one rep left
    t = stats.test_slowdown(ds).set_index(["policy", "threads"])
    assert t.loc["ext4", "reject"].all() and not t.loc["nojc", "reject"].any()
    assert math.isnan(t.loc[("nojc", 256), "p_adj"]) and t.loc[("nojc", 256), "n_high"] == 1
    finite = t.p.dropna().to_numpy()
    np.testing.assert_allclose(t.p_adj.dropna(), _holm(finite))
    assert (t.loc["ext4", "ci_high"] < 0.75).all()


def test_test_slowdown_family_wise_error_under_the_null():
    """Holm keeps P(any false rejection among 8 null configs) near alpha; 150 replicates."""
    tables = [stats.test_slowdown(make_run(reps=5, seed=s, threads=(1, 2, 4, 8)))
              for s in range(150)]
    assert np.mean([t.reject.any() for t in tables]) <= 0.10
    per_test = np.mean([t.p.lt(0.05).mean() for t in tables])
    assert 0.02 <= per_test <= 0.09  # unadjusted one-sided tests reject ~alpha each


def test_test_slowdown_bad_input():
    ds = make_run()
    for kw, field in [({"method": "tukey"}, "method"), ({"alpha": 1.5}, "alpha"),
                      ({"f_low": 3.3, "f_high": 3.3}, "f_high"), ({"f_low": 2.0}, "f_low")]:
        with pytest.raises(ConfigError, match=f"^{field}"):
            stats.test_slowdown(ds, **kw)
    with pytest.raises(ConfigError, match="<= 0"):
        stats.test_slowdown(ds - 2e9)


# ------------------------------------------------------------ simulated run, CLI
@pytest.fixture(scope="module")
def sim_run(tmp_path_factory):
    from abtlab import sim
    from abtlab.data import store
    ds = sim.simulate(reps=3, threads=[4, 8], freq_ghz=[1.6, 3.3], policy=["ext4", "nojc"],
                      traces=False)
    path = tmp_path_factory.mktemp("stats") / "run.nc"
    store.save(ds, path)
    return ds, path


def test_simulated_run_end_to_end(sim_run):
    ds, _ = sim_run
    sd = stats.slowdown(ds)
    assert sd.ratio.dims == ("policy", "threads", "file_size", "record_size", "files",
                             "device", "freq_ghz")
    assert np.isfinite(sd.ci_low).all() and sd.attrs["freq_mode"] == "simulated"
    t = stats.test_slowdown(ds)
    assert len(t) == 4 and t.attrs["provenance"] == "SIMULATED"
    assert "C(policy)" in stats.anova(ds).index


def test_cli_prints_tables(sim_run, tmp_path, capsys):
    from abtlab.cli import main
    ds, path = sim_run
    out = tmp_path / "run.json"
    assert main(["stats", str(path), "--slowdown", "--test", "--anova", "--pyperf", str(out)]) == 0
    text = capsys.readouterr().out
    assert "SIMULATED" in text and "== ratio to 1.6 GHz" in text and "PR(>F)" in text
    row = stats.slowdown_table(stats.slowdown(ds)).query("policy == 'nojc' and threads == 8 "
                                                         "and freq_ghz == 3.3").iloc[0]
    assert row.slowdown in text and "p_adj" in text and out.exists()
    assert "8 benchmarks, 24 runs" in text


def test_cli_bad_input_exit_2(sim_run, tmp_path, capsys):
    from abtlab.cli import main
    _, path = sim_run
    assert main(["stats", str(path), "--var", "nope"]) == 2
    assert "var: got 'nope'" in capsys.readouterr().err
    assert main(["stats", str(tmp_path / "missing.nc")]) == 2
    assert main(["stats", str(path), "--test", "--correction", "x"]) == 2
    assert "method: got 'x'" in capsys.readouterr().err


def _blocks(rng, n, rho, cv=0.3):
    """n blocks: a shared block effect (share rho of the variance) times each run's own."""
    shared = rng.normal(0, cv * np.sqrt(rho), n)
    a = 53 * (1 + shared + rng.normal(0, cv * np.sqrt(1 - rho), n))
    b = 100 * (1 + shared + rng.normal(0, cv * np.sqrt(1 - rho), n))
    return a, b


@pytest.mark.parametrize("method,n", [("fieller", 12), ("delta", 12), ("bootstrap", 20)])
def test_paired_ratio_ci_covers_and_is_narrower_under_shared_drift(method, n):
    """(the percentile bootstrap under-covers below ~20 pairs, as it does unpaired)"""
    rng = np.random.default_rng(11)
    hits, narrower = 0, 0
    for _ in range(200):
        a, b = _blocks(rng, n, rho=0.7)
        _, lo, hi = stats.ratio_ci(a, b, 0.95, method, n_boot=500, paired=True)
        _, ulo, uhi = stats.ratio_ci(a, b, 0.95, method, n_boot=500)
        hits += lo <= 0.53 <= hi
        narrower += (hi - lo) < (uhi - ulo)
    assert 0.89 <= hits / 200 <= 0.99
    assert narrower / 200 > 0.9


def test_paired_ratio_drops_incomplete_pairs_and_checks_shapes():
    a, b = [50.0, 55.0, np.nan, 53.0], [100.0, 98.0, 104.0, np.nan]
    assert stats.ratio_ci(a, b, paired=True) == stats.ratio_ci([50.0, 55.0], [100.0, 98.0], paired=True)
    with pytest.raises(ConfigError) as e:
        stats.ratio_ci([1.0, 2.0], [1.0, 2.0, 3.0], paired=True)
    assert e.value.field == "den"


def test_virtual_levels_descending_slowdown_test_and_cli(tmp_path, capsys):
    """`--freq virtual:1,0.5` stores freq_ghz as [1.0, 0.5]: the reference is still the
    lowest level, the ratio is 1.0 GHz over 0.5, and the label says icount shift."""
    from abtlab.cli import main
    from abtlab.data import store
    ds = make_run({"ext4": 0.5, "nojc": 2.0}, reps=6, rsd=0.02, freqs=(1.0, 0.5))
    ds.attrs["freq_mode"] = "virtual"
    sd = stats.slowdown(ds)
    assert sd.attrs["ref_freq_ghz"] == 0.5
    r = sd.sel(freq_ghz=1.0).mean("threads").ratio
    assert float(r.sel(policy="ext4")) == pytest.approx(0.5, rel=0.05)
    assert float(r.sel(policy="nojc")) == pytest.approx(2.0, rel=0.05)
    t = stats.test_slowdown(ds).set_index(["policy", "threads"])
    assert t.attrs["f_low"] == 0.5 and t.attrs["f_high"] == 1.0
    assert t.reject.xs("ext4").all() and not t.reject.xs("nojc").any()
    path = tmp_path / "virtual.nc"
    store.save(ds, path)
    assert main(["stats", str(path), "--slowdown", "--test"]) == 0
    text = capsys.readouterr().out
    assert "== ratio to 0.5 GHz" in text and "at 1.0 GHz < at 0.5 GHz" in text
    assert "frequency by icount shift" in text


def test_a_ratio_without_a_usable_ci_says_so_in_words():
    assert stats.format_ratio(0.534, 0.452, 0.611) == "0.53 [0.45, 0.61]"
    for lo, hi in ((-math.inf, math.inf), (-0.66, 2.97)):
        assert stats.format_ratio(1.15, lo, hi) == "1.15 [no CI: too few or too noisy repetitions]"


def test_stats_reads_a_metarates_run_by_its_own_rate(tmp_path, capsys):
    """Without --var, `abtlab stats` analyses the run's headline variable: fcr for Metarates."""
    import abtlab
    from abtlab.cli import main
    path = tmp_path / "mr.nc"
    abtlab.run("sim", workload="metarates", threads=4, files=4, reps=2, freq="1.6,3.3", out=str(path))
    assert main(["stats", str(path), "--slowdown"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{path}: fcr, backend sim") and "files/s" in out


def test_the_paper_view_gives_eq3s_ratio_from_the_unblocked_writers(tmp_path, capsys):
    """`eq. 3 from unblocked hi/lo` = (hi / lo) x NB(hi) / NB(lo), from the evidence
    count where the runs have it: 240 -> 40 unblocked at 1.6 -> 3.3 GHz (the paper's)
    gives 0.34; a count that does not change gives the clock ratio; it is printed by
    `abtlab stats --slowdown` beside the measured ratios."""
    from abtlab.cli import main
    from abtlab.data import store
    from abtlab.stats.iozone_view import eq3_ratio, iozone_view
    assert eq3_ratio(1.6, 3.3, 240, 40) == pytest.approx(3.3 / 1.6 / 6)
    assert np.isnan(eq3_ratio(1.6, 3.3, 0, 0))
    ds = make_run({"ext4": 0.5, "nojc": 2.0}, reps=4, rsd=0.02, threads=(256,))
    ds["throughput_fsync"] = ds["throughput"] * 0.5
    nb = np.zeros(ds["throughput"].shape)
    nb[0, 0], nb[0, 1], nb[1] = 240, 40, 256          # ext4 240 -> 40, nojc 256 at both
    ds["unblocked_threads"] = (ds["throughput"].dims, nb)
    ds["threads_clear_of_commits"] = (ds["throughput"].dims, nb + 1)   # not the one read
    view = iozone_view(ds).set_index("policy")
    assert view.loc["ext4", "eq. 3 from unblocked 3.3/1.6"] == f"{3.3 / 1.6 * 40 / 240:.2f}"
    assert view.loc["nojc", "eq. 3 from unblocked 3.3/1.6"] == f"{3.3 / 1.6:.2f}"
    path = tmp_path / "paper.nc"
    store.save(ds, path)
    assert main(["stats", str(path), "--slowdown"]) == 0
    out = " ".join(capsys.readouterr().out.split())      # titles wrap at 100 columns
    assert "the ratio eq. 3 gives from them" in out and "eq. 3 from unblocked 3.3/1.6" in out
