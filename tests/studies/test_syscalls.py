"""abtlab.studies.syscalls: ratio/CI math on constructed data, the reference grid, the
comparison, small real grids. Their plots (abtlab.present.syscalls_plots) are tested in
tests/present/test_syscalls_plots.py."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from abtlab.stats.ratios import geomean_ratio_ci
from abtlab.studies import syscalls as sc
from abtlab.errors import ConfigError

from tests.studies.syscalls_data import constructed_elapsed


def paired(ratios, base=1.0):
    """num/den pairs over rep with the given ratios."""
    den = xr.DataArray(base * np.arange(1, len(ratios) + 1, dtype=float), dims="rep")
    return den * np.asarray(ratios), den


def test_geomean_ratio_ci_matches_hand_computation():
    r = np.array([1.2, 1.5, 1.1, 1.4, 1.3])
    num, den = paired(r)
    out = geomean_ratio_ci(num, den)
    lr = np.log(r)
    half = stats.t.ppf(0.975, 4) * lr.std(ddof=1) / np.sqrt(5)
    assert float(out.ratio) == pytest.approx(np.exp(lr.mean()))
    assert float(out.lo) == pytest.approx(np.exp(lr.mean() - half))
    assert float(out.hi) == pytest.approx(np.exp(lr.mean() + half))
    assert int(out.n) == 5
    wide = geomean_ratio_ci(num, den, level=0.99)
    assert float(wide.lo) < float(out.lo) and float(wide.hi) > float(out.hi)


def test_ratio_ci_constant_ratio_and_single_rep():
    num, den = paired([2.0, 2.0, 2.0])
    out = geomean_ratio_ci(num, den)
    assert float(out.ratio) == pytest.approx(2.0)
    assert float(out.lo) == pytest.approx(2.0) and float(out.hi) == pytest.approx(2.0)
    one = geomean_ratio_ci(*paired([3.0]))
    assert float(one.ratio) == pytest.approx(3.0)
    assert np.isnan(float(one.lo)) and np.isnan(float(one.hi))
    with pytest.raises(ConfigError) as exc:
        geomean_ratio_ci(num, den, level=95)
    assert exc.value.field == "level"


def test_ratio_ci_keeps_other_dims():
    num = xr.DataArray([[2.0, 2.0], [0.5, 0.5]], dims=("threads", "rep"))
    den = xr.ones_like(num)
    out = geomean_ratio_ci(num, den)
    np.testing.assert_allclose(out.ratio.values, [2.0, 0.5])


def test_speedup_orientation_is_the_papers():
    s = np.array([[2.0, 1.0], [0.5, 1.5], [1.0, 0.25]])
    ds = sc.add_lock_speedup(constructed_elapsed(s))
    np.testing.assert_allclose(ds.spin_speedup.values, s)  # > 1: spinlock faster
    np.testing.assert_allclose(ds.elapsed_median.sel(lock="spin").values, 2.0)


def test_load_reference_shape_and_values():
    ref = sc.load_reference()
    assert ref.spin_speedup.dims == ("threads", "work")
    assert ref.spin_speedup.shape == (23, 19)
    assert tuple(ref.threads.values) == sc.PAPER_THREADS
    assert tuple(ref.work.values) == sc.PAPER_WORK
    assert not ref.spin_speedup.isnull().any()
    assert float(ref.spin_speedup.sel(threads=8, work=50)) == 1.9
    assert float(ref.spin_speedup.sel(threads=100, work=1_000_000)) == 0.2
    assert float(ref.spin_speedup.sel(threads=1, work=1)) == 0.8
    assert ref.attrs["hardware_threads"] == 8 and "Figure 5" in ref.attrs["source"]


def test_load_reference_rejects_other_files(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ConfigError):
        sc.load_reference(bad)
    with pytest.raises(ConfigError):
        sc.load_reference(tmp_path / "missing.csv")


def test_compare_log_ratio_and_winners():
    ref = sc.load_reference()
    here = ref.sel(threads=[1, 2, 8], work=[1, 100]).copy()
    here["spin_speedup"] = here.spin_speedup * 2
    here = here.reindex(threads=[1, 2, 8, 11], work=[1, 100, 3])  # extra levels are dropped
    c = sc.compare(here, ref)
    assert c.log2_diff.shape == (3, 2)
    np.testing.assert_allclose(c.log2_diff.values, 1.0)
    # paper (8, 1) = 0.9 -> mutex side; here 1.8 -> spin side
    assert int(c.winner_paper.sel(threads=8, work=1)) == -1
    assert int(c.winner_here.sel(threads=8, work=1)) == 1
    assert not bool(c.agree.sel(threads=8, work=1))
    # paper (2, 100) = 1.6 and here 3.2: both spin
    assert bool(c.agree.sel(threads=2, work=100))


def test_compare_uses_ci_for_the_winner():
    ds = sc.add_lock_speedup(constructed_elapsed(np.full((3, 2), 1.5)))
    ds["spin_speedup_lo"] = xr.full_like(ds.spin_speedup, 0.8)  # CI spans 1: a tie
    c = sc.compare(ds)
    assert (c.winner_here == 0).all()


def test_compare_needs_a_common_grid():
    ds = sc.add_lock_speedup(constructed_elapsed(np.ones((3, 2)))).assign_coords(work=[2, 3])
    with pytest.raises(ConfigError) as exc:
        sc.compare(ds)
    assert exc.value.field == "here"


@pytest.mark.parametrize("kw,field", [({"threads": [0]}, "threads"), ({"work": [2_000_000]}, "work"),
                                      ({"threads": [2, 2]}, "threads"), ({"reps": 0}, "reps")])
def test_lock_grid_bad_input(kw, field):
    with pytest.raises(ConfigError) as exc:
        sc.lock_grid(**kw)
    assert exc.value.field == field


def test_lock_grid_small_real(built_native):
    ds = sc.lock_grid(threads=[1, 3], work=[1, 10], reps=2, entries=20)
    assert ds.elapsed.dims == ("lock", "threads", "work", "rep")
    assert ds.elapsed.shape == (2, 2, 2, 2) and bool((ds.elapsed > 0).all())
    r = ds.elapsed.sel(lock="mutex") / ds.elapsed.sel(lock="spin")
    np.testing.assert_allclose(ds.spin_speedup.values, np.exp(np.log(r).mean("rep")).values)
    assert ds.attrs["freq_mode"] == "real" and ds.attrs["entries_per_thread"] == 20
    assert ds.attrs["hardware_threads"] >= 1


def test_dio_grid_bad_input():
    with pytest.raises(ConfigError) as exc:
        sc.dio_grid("/nonexistent", block_sizes=[100])
    assert exc.value.field == "block_sizes"
    with pytest.raises(ConfigError) as exc:
        sc.dio_grid("/nonexistent", workloads=[5])
    assert exc.value.field == "workloads"
    with pytest.raises(ConfigError) as exc:
        sc.dio_grid("/nonexistent", block_sizes=[1 << 20], file_size=4096)
    assert exc.value.field == "file_size"


@pytest.mark.root
def test_dio_grid_small_real(built_native, scratch_ext4):
    ds = sc.dio_grid(scratch_ext4.mountpoint, block_sizes=[4096, 16384], workloads=[1, 3],
                     reps=2, max_bytes=64 << 10)
    assert ds.elapsed.shape == (2, 2, 2, 2) and bool((ds.elapsed > 0).all())
    assert ds.ops_per_run.sel(workload=3).values.tolist() == [64, 64]
    assert ds.ops_per_run.sel(workload=1).values.tolist() == [16, 4]  # capped at max_bytes
    r = ds.elapsed.sel(mode="buffered") / ds.elapsed.sel(mode="direct")
    np.testing.assert_allclose(ds.direct_speedup.values, np.exp(np.log(r).mean("rep")).values)
    assert ds.attrs["filesystem"] == "ext4" and ds.attrs["freq_mode"] == "real"


def test_dio_speedup_orientation():
    """The paper's Fig. 3 reading: t_buffered / t_direct, > 1 when direct is faster."""
    buffered = np.array([[1.25, 1.0]])[..., None] * np.ones(3)  # (workload, block, rep)
    el = np.stack([buffered, np.ones_like(buffered)])
    ds = xr.Dataset({"elapsed": (("mode", "workload", "block_size", "rep"), el)},
                    coords={"mode": ["buffered", "direct"], "workload": [3],
                            "block_size": [4096, 8192], "rep": range(3)})
    out = sc.add_dio_speedup(ds)
    np.testing.assert_allclose(out.direct_speedup.values, [[1.25, 1.0]])
    assert sc.PAPER_DIO["direct_speedup"] == 1.25 and sc.PAPER_DIO["block_size"] == 4096


def test_lock_grid_is_a_durable_sweep(built_native, tmp_path):
    """With out= the grid is a sweep's dataset on disk: resuming a finished grid reruns
    nothing (the same numbers), and another grid at the same path is refused."""
    kw = dict(threads=[1, 2], work=[1], reps=2, entries=10, out=tmp_path / "locks.nc")
    a = sc.lock_grid(**kw)
    b = sc.lock_grid(**kw, resume=True)
    np.testing.assert_array_equal(a.elapsed.values, b.elapsed.values)
    with pytest.raises(ConfigError):
        sc.lock_grid(**{**kw, "threads": [1, 3]}, resume=True)


def test_a_grids_cis_hold_for_all_its_cells_at_once():
    """Bonferroni: 12 cells at 95% together are 99.58% each, wider than one cell's 95%, and
    the dataset says which CIs it carries."""
    assert sc.family_level(12) == pytest.approx(1 - 0.05 / 12) and sc.family_level(1) == 0.95
    el = constructed_elapsed(np.full((3, 2), 1.5), reps=5)
    el["elapsed"].loc[{"lock": "mutex", "rep": 0}] *= 1.3
    one, grid = sc.add_lock_speedup(el), sc.add_lock_speedup(el, level=sc.family_level(6))
    assert (grid.spin_speedup_lo < one.spin_speedup_lo).all() and (grid.spin_speedup_hi > one.spin_speedup_hi).all()
    assert one.attrs["ci"] == "95% CI"
    assert grid.attrs["ci"] == "simultaneous 95% CIs over 6 cells (Bonferroni: 99.17% each)"
