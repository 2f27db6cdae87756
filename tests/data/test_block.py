"""A point's repetitions as one block: stored as one part and read back unchanged, and
assembled into the same dataset as one block per repetition (the tables in run order,
the facts of each run merged as before)."""
import numpy as np
import pytest
import xarray as xr

from abtlab.data import block, schema, store
from abtlab.data.assemble import assemble, assemble_results
from abtlab.data.result import RunResult
from abtlab.trace import RECORD_DTYPE

LEVELS = {"policy": ["ext4", "nojc"], "threads": [2, 3]}


def _result(threads, rep, attrs=None):
    ops = np.zeros(threads, RECORD_DTYPE)
    ops["tid"] = np.arange(threads)
    ops["t_start_ns"] = 1000 * rep + np.arange(threads) * 10
    ops["t_end_ns"] = ops["t_start_ns"] + 5 + rep
    commits = {"tid": np.arange(rep + 1), "start": np.arange(rep + 1) * 100 + rep,
               "end": np.arange(rep + 1) * 100 + 50}
    scalars = {"throughput": 10.0 * threads + rep, "commits": float(rep + 1)}
    if rep == 1:
        scalars["mean_fsync"] = 0.5        # measured in one run only: NaN in the others
    return RunResult(scalars=scalars, ops=ops, commits=commits,
                     attrs=attrs or {"filesystem": "ext4", "mount_options": ""})


def _triples(nrep=3):
    return [({"policy": p, "threads": t}, r, _result(t, r)) for p in LEVELS["policy"]
            for t in LEVELS["threads"] for r in range(nrep)]


def _blocks(triples, split):
    """One block per point, its repetitions cut where split(rep) changes."""
    index, groups = {}, {}
    for point, rep, res in triples:
        i = index.setdefault((point["policy"], point["threads"]), len(index))
        groups.setdefault((i, split(rep)), (point, []))[1].append((rep, res))
    return [block.from_results([r for _, r in runs], point, i, [rep for rep, _ in runs])
            for (i, _), (point, runs) in groups.items()]


def _same(a, b):
    assert list(a.data_vars) == list(b.data_vars) and a.attrs == b.attrs
    for v in a.variables:
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
        assert a[v].dtype == b[v].dtype and a[v].attrs == b[v].attrs, v


def test_a_block_of_repetitions_assembles_like_one_block_per_repetition():
    triples = _triples()
    per_rep = assemble(_blocks(triples, lambda r: r), LEVELS, {"backend": "test"})
    whole = assemble(_blocks(triples, lambda r: 0), LEVELS, {"backend": "test"})
    _same(whole, per_rep)
    assert np.isnan(whole["mean_fsync"].sel(rep=0)).all() and (whole["mean_fsync"].sel(rep=1) == 0.5).all()
    rid = whole[schema.RUN_ID].sel(policy="nojc", threads=3, rep=2).item()
    assert (whole["op_run"].values == rid).sum() == 3
    assert whole["commit_start"].values[whole["commit_run"].values == rid].tolist() == [2, 102, 202]


def test_blocks_whose_repetitions_interleave_give_the_run_order():
    """Reps 0 and 2 in one block, 1 in another (a torn part rerun): records still in run order."""
    triples = _triples()
    mixed = _blocks(triples, lambda r: r % 2)
    _same(assemble(mixed, LEVELS, {}), assemble(_blocks(triples, lambda r: r), LEVELS, {}))
    ds = assemble(mixed[::-1], LEVELS, {})
    assert np.all(np.diff(ds["op_run"].values) >= 0) and np.all(np.diff(ds["commit_run"].values) >= 0)


def test_a_stored_block_reads_back_as_it_was(tmp_path):
    b = _blocks(_triples(), lambda r: 0)[3]
    store.write_block(tmp_path / "r.nc", b)
    (name, back), = store.read_parts(tmp_path / "r.nc").items()
    assert name == "p00003-r0000-0002.h5" and back.point == b.point and back.point_index == 3
    assert back.reps.tolist() == [0, 1, 2] and back.run_attrs == b.run_attrs
    assert list(back.scalars) == list(b.scalars)
    for k in b.scalars:
        np.testing.assert_array_equal(back.scalars[k], b.scalars[k])
    for c in b.tables:
        np.testing.assert_array_equal(back.tables[c], b.tables[c], err_msg=c)
        assert back.tables[c].dtype == np.int64


def test_a_part_keeps_each_column_in_the_smallest_integer_that_holds_it(tmp_path):
    """Run, thread and kind columns fit in a byte, times do not: each is exact on reading."""
    import h5py
    b = _blocks(_triples(), lambda r: 0)[3]
    b.tables["op_t_start"] = b.tables["op_t_start"] + 2**40
    b.tables["op_bytes"][:] = -1
    path = store.write_block(tmp_path / "r.nc", b)
    with h5py.File(path) as f:
        assert f["op_run"].dtype == np.int8 and f["op_tid"].dtype == np.int8
        assert f["op_bytes"].dtype == np.int8 and f["op_t_start"].dtype == np.int64
    back = next(iter(store.read_parts(tmp_path / "r.nc").values()))
    for c in b.tables:
        np.testing.assert_array_equal(back.tables[c], b.tables[c], err_msg=c)


def test_facts_that_differ_between_runs_of_a_block_are_all_kept():
    point = {"policy": "ext4", "threads": 2}
    runs = [_result(2, r, {"kernel": k}) for r, k in enumerate(["6.1", "6.1", "3.4.2"])]
    b = block.from_results(runs, point, 0, [0, 1, 2])
    assert b.run_attrs == [{"kernel": "6.1"}, {"kernel": "6.1"}, {"kernel": "3.4.2"}]
    one = block.from_results(runs[:2], point, 0, [0, 1])
    assert one.run_attrs == [{"kernel": "6.1"}]          # shared: kept once
    ds = assemble([b], {"policy": ["ext4"], "threads": [2]}, {"kernel": "host"})
    assert ds.attrs["kernel"] == "6.1 | 3.4.2"
    triples = [(point, r, res) for r, res in enumerate(runs)]
    assert assemble_results(triples, {"policy": ["ext4"], "threads": [2]}, {"kernel": "host"}).attrs == {"kernel": "host"}


def _old_part(res, point, index, rep):
    """A part as earlier versions wrote it: a variable per scalar and per column, no *_run."""
    data = {k: ((), v) for k, v in res.scalars.items()}
    data.update({"op_tid": (("op",), res.ops["tid"].astype(np.int64)),
                 "op_kind": (("op",), res.ops["op"].astype(np.int64)),
                 "op_flags": (("op",), res.ops["flags"].astype(np.int64)),
                 "op_bytes": (("op",), res.ops["bytes"].astype(np.int64)),
                 "op_t_start": (("op",), res.ops["t_start_ns"]),
                 "op_t_end": (("op",), res.ops["t_end_ns"])})
    n = len(res.commits["tid"])
    for c in schema.COMMIT_COLUMNS:
        if c != "commit_run":
            data[c] = (("commit",), res.commits.get(c.split("_", 1)[1], np.full(n, -1)))
    for c in schema.BATCH_COLUMNS:
        if c != "batch_run":
            data[c] = (("batch",), np.zeros(0, np.int64))
    return xr.Dataset(data, attrs={"point_index": index, "rep": rep, "point": block._json(point),
                                   "run_attrs": block._json(res.attrs)})


def test_a_part_of_an_earlier_version_still_resumes(tmp_path):
    triples = _triples(nrep=2)
    index = {}
    parts = [_old_part(res, p, index.setdefault((p["policy"], p["threads"]), len(index)), r)
             for p, r, res in triples]
    out = tmp_path / "r.nc"
    store.parts_dir(out).mkdir()
    for p in parts:
        store.save(p, store.parts_dir(out) / f"p{p.attrs['point_index']:05d}-r{p.attrs['rep']:04d}.nc")
    back = store.read_parts(out)
    assert len(back) == 8 and all(b.reps.size == 1 for b in back.values())
    _same(assemble(list(back.values()), LEVELS, {}), assemble(_blocks(triples, lambda r: 0), LEVELS, {}))


def test_a_part_repeating_a_stored_repetition_is_set_aside(tmp_path):
    """Each repetition is loaded once: a part overlapping an earlier one goes to rejected/."""
    out = tmp_path / "r.nc"
    whole, single = _blocks(_triples(), lambda r: 0)[0], _blocks(_triples(), lambda r: r)[1]
    store.write_block(out, whole)                       # p00000-r0000-0002: reps 0, 1, 2
    store.write_block(out, single)                      # p00000-r0001: rep 1 again
    with pytest.warns(UserWarning, match="p00000-r0001.h5: it repeats a repetition"):
        back = store.read_parts(out)
    assert list(back) == ["p00000-r0000-0002.h5"]
    assert (store.parts_dir(out) / "rejected" / "p00000-r0001.h5").is_file()


@pytest.mark.parametrize("damage", ["column", "length", "run"])
def test_a_part_that_does_not_add_up_is_set_aside_and_rerun(tmp_path, damage):
    import h5py
    out = tmp_path / "r.nc"
    path = store.write_block(out, _blocks(_triples(), lambda r: 0)[0])
    with h5py.File(path, "r+") as f:
        if damage == "column":
            del f["commit_end"]
        elif damage == "length":
            end = f["commit_end"][()]
            del f["commit_end"]
            f["commit_end"] = end[:-1]
        else:
            f["op_run"][:2] = 7                       # past the block's 3 repetitions
    with pytest.warns(UserWarning, match="discarded unreadable part p00000-r0000-0002.h5"):
        assert store.read_parts(out) == {}
    assert (store.parts_dir(out) / "rejected" / path.name).is_file()
