"""abtlab.data.merge on datasets whose levels differ: a grid with more repetitions at its
ends than between them, a cell's runs run again at that cell only."""
import json

import numpy as np
import pytest

import abtlab.sim as sim
from abtlab.cli import main
from abtlab.data import schema, store
from abtlab.data.merge import merge_reps
from abtlab.data.runs import ops
from abtlab.errors import ConfigError

KW = dict(threads=[8], cores=2)


@pytest.fixture(scope="module")
def grid():
    """The paper's grid in small: 6 repetitions at 1.6 and 3.3 GHz, 3 between."""
    ends = sim.simulate(reps=6, seed=0, freq_ghz=[1.6, 3.3], policy=["ext4", "nojc"], **KW)
    mid = sim.simulate(reps=3, seed=20, freq_ghz=[2.0, 2.4, 2.8], policy=["ext4", "nojc"], **KW)
    return ends, mid


def _n(ds):
    return np.isfinite(ds.throughput).sum("rep")


def test_freq_levels_pool_ascending_with_the_runs_a_source_lacks_missing(grid):
    ends, mid = grid
    m = merge_reps([ends, mid], names=["ends.nc", "mid.nc"])
    schema.validate(m)
    assert m.freq_ghz.values.tolist() == [1.6, 2.0, 2.4, 2.8, 3.3] and m.sizes["rep"] == 9
    n = _n(m).squeeze(drop=True)
    assert n.sel(policy="ext4").values.tolist() == [6, 3, 3, 3, 6]
    assert (n.sel(policy="nojc") == n.sel(policy="ext4")).all()
    # each source's runs where they were, the rest missing as a failed run is
    for src, reps in ((ends, slice(0, 6)), (mid, slice(6, 9))):
        here = m.sel(freq_ghz=src.freq_ghz, policy=src.policy).isel(rep=reps)
        np.testing.assert_array_equal(here.throughput, src.throughput)
        for idx in np.ndindex(src.run_id.shape):
            got, want = int(here.run_id.values[idx]), int(src.run_id.values[idx])
            np.testing.assert_array_equal(ops(m, got)["t_end_ns"], ops(src, want)["t_end_ns"])
    gap = m.sel(freq_ghz=[1.6, 3.3]).isel(rep=slice(6, 9))
    assert (gap.run_id == -1).all() and gap.throughput.isnull().all()
    assert (m.sel(freq_ghz=[2.0, 2.4, 2.8]).isel(rep=slice(0, 6)).run_id == -1).all()
    valid = m.run_id.values[m.run_id.values >= 0]
    assert len(np.unique(valid)) == valid.size == 2 * (2 * 6 + 3 * 3)
    assert m.attrs[schema.MERGED_LEVELS] == ("ends.nc: freq_ghz (1.6, 3.3); "
                                             "mid.nc: freq_ghz (2.0, 2.4, 2.8)")


def test_stats_counts_n_per_point_of_a_pooled_grid(grid, tmp_path, capsys):
    """`abtlab stats X.nc --slowdown`: n is each point's own (6 at the ends, 3 between),
    and the ratio's n_ref the reference's 6."""
    ends, mid = grid
    pe, pm, out = tmp_path / "ends.nc", tmp_path / "mid.nc", tmp_path / "grid.nc"
    store.save(ends, pe)
    store.save(mid, pm)
    assert main(["merge", str(pe), str(pm), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "9 repetitions from 2 datasets" in said and "mid.nc: freq_ghz (2.0, 2.4, 2.8)" in said
    assert main(["stats", str(out), "--slowdown", "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)["tables"]
    per_point = {(r["policy"], r["freq_ghz"]): r["n"] for r in tables[0]["rows"]}
    want = {1.6: 6, 2.0: 3, 2.4: 3, 2.8: 3, 3.3: 6}
    assert per_point == {(p, f): k for p in ("ext4", "nojc") for f, k in want.items()}
    ratios = next(t for t in tables if t["title"].startswith("ratio to 1.6"))["rows"]
    assert {(r["policy"], r["freq_ghz"]): r["n"] for r in ratios} == per_point


def test_a_cell_run_again_at_one_policy_joins_its_cell_only(grid):
    """One source with one policy (and one frequency): the others' points keep their n, the
    cell it ran gains its runs, and a point no source ran has none."""
    ends, _ = grid
    cell = sim.simulate(reps=2, seed=40, freq_ghz=[2.4], policy=["nojc"], **KW)
    m = merge_reps([ends, cell], names=["ends.nc", "cell.nc"])
    assert m.policy.values.tolist() == ["ext4", "nojc"]
    assert m.freq_ghz.values.tolist() == [1.6, 2.4, 3.3]
    n = _n(m).squeeze(drop=True)
    assert n.sel(policy="nojc").values.tolist() == [6, 2, 6]
    assert n.sel(policy="ext4").values.tolist() == [6, 0, 6]
    np.testing.assert_array_equal(m.throughput.sel(policy="nojc", freq_ghz=2.4).isel(rep=[6, 7]).squeeze(),
                                  cell.throughput.sel(policy="nojc", freq_ghz=2.4).squeeze())
    assert m.attrs[schema.MERGED_LEVELS] == ("ends.nc: policy (ext4, nojc), freq_ghz (1.6, 3.3); "
                                             "cell.nc: policy (nojc), freq_ghz (2.4)")


def test_only_one_policy_in_the_second_source(grid):
    ends, _ = grid
    more = sim.simulate(reps=3, seed=60, freq_ghz=[1.6, 3.3], policy=["nojc"], **KW)
    m = merge_reps([ends, more])
    n = _n(m).squeeze(drop=True)
    assert n.sel(policy="nojc").values.tolist() == [9, 9]
    assert n.sel(policy="ext4").values.tolist() == [6, 6]
    assert m.attrs[schema.MERGED_LEVELS].endswith("dataset 1: policy (nojc)")


def test_level_order_first_then_new_and_ascending_kept(grid):
    ends, mid = grid
    # strings: the first's order, then the new ones
    m = merge_reps([ends.sel(policy=["nojc"]), mid.sel(policy=["ext4", "nojc"])])
    assert m.policy.values.tolist() == ["nojc", "ext4"]
    # numbers listed other than ascending keep the first's order, new ones after
    down = ends.isel(freq_ghz=[1, 0])
    assert merge_reps([down, mid]).freq_ghz.values.tolist() == [3.3, 1.6, 2.0, 2.4, 2.8]
    # a level within rounding of another is that level
    off = mid.assign_coords(freq_ghz=[2.0, 0.1 * 24, 2.8])
    assert off.freq_ghz.values[1] != 2.4
    m = merge_reps([mid, off.copy(deep=True)], keep_duplicates=True)
    assert m.freq_ghz.values.tolist() == [2.0, 2.4, 2.8] and int(_n(m).min()) == 6


def test_a_subset_of_the_same_runs_is_still_refused(grid):
    ends, _ = grid
    with pytest.raises(ConfigError, match=r"repeats 12 run records of dataset 0 exactly"):
        merge_reps([ends, ends.isel(freq_ghz=[0])])


def test_blocked_sources_with_other_frequencies_are_pooled_unpaired(grid):
    """A blocked sweep pairs runs by rep across frequencies; a source without the reference
    frequency has no pairs, so the merged dataset says it is no longer one blocked sweep."""
    ends, mid = grid
    a, b = ends.copy(), mid.copy()
    a.attrs["order"] = b.attrs["order"] = "blocked"
    m = merge_reps([a, b])
    assert m.attrs["order"] != "blocked" and "unpaired" in m.attrs["order"]
    assert merge_reps([a, a.copy(deep=True).assign(throughput=a.throughput * 1.01)],
                      keep_duplicates=True).attrs["order"] == "blocked"


def test_the_command_warns_of_points_without_a_run(grid, tmp_path, capsys):
    ends, _ = grid
    cell = sim.simulate(reps=2, seed=40, freq_ghz=[2.4], policy=["nojc"], **KW)
    store.save(ends, tmp_path / "e.nc")
    store.save(cell, tmp_path / "c.nc")
    assert main(["merge", str(tmp_path / "e.nc"), str(tmp_path / "c.nc"),
                 "--out", str(tmp_path / "m.nc")]) == 0
    assert "1 point with no run" in capsys.readouterr().err


def test_failed_runs_pool_one_a_line_naming_their_source(grid, capsys):
    ends, mid = (ds.copy() for ds in grid)
    ends.attrs[schema.FAILED_RUNS] = "policy=ext4 freq_ghz=3.3 rep 0: a\npolicy=ext4 freq_ghz=3.3 rep 1: b"
    mid.attrs[schema.FAILED_RUNS] = "policy=nojc freq_ghz=2.0 rep 2: c"
    merged = merge_reps([ends, mid], names=["ends.nc", "mid.nc"])
    lines = merged.attrs[schema.FAILED_RUNS].splitlines()
    assert lines == ["ends.nc: policy=ext4 freq_ghz=3.3 rep 0: a", "ends.nc: policy=ext4 freq_ghz=3.3 rep 1: b",
                     "mid.nc: policy=nojc freq_ghz=2.0 rep 2: c"]
    from abtlab.commands.run import failed_runs
    assert failed_runs(merged, "abtlab sweep") == 1
    assert "3 runs failed" in capsys.readouterr().err
    ends.attrs.pop(schema.FAILED_RUNS)
    mid.attrs.pop(schema.FAILED_RUNS)
    assert schema.FAILED_RUNS not in merge_reps([ends, mid], names=["ends.nc", "mid.nc"]).attrs
