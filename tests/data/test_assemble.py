"""Run results -> one run dataset: every point and repetition in its cell, a missing
repetition NaN with run id -1, the ragged op and commit tables tagged with their run, and
the same dataset whether it is built from stored parts or straight from results."""
import numpy as np
import pytest

from abtlab.data import runs, schema
from abtlab.data.assemble import assemble, assemble_results, result_to_part
from abtlab.data.result import RunResult
from abtlab.trace import RECORD_DTYPE

LEVELS = {"policy": ["ext4", "nojc"], "threads": [2, 4]}


def _result(threads, value, n_commits=1):
    ops = np.zeros(threads, RECORD_DTYPE)
    ops["tid"] = np.arange(threads)
    ops["t_start_ns"] = np.arange(threads) * 10
    ops["t_end_ns"] = ops["t_start_ns"] + 5
    commits = {"tid": np.arange(n_commits), "start": np.arange(n_commits) * 100,
               "end": np.arange(n_commits) * 100 + 50}
    return RunResult(scalars={"throughput": value, "commits": float(n_commits)}, ops=ops,
                     commits=commits, attrs={"filesystem": "ext4 (data=ordered)"})


def _triples():
    """Every point twice, except (nojc, 4) once: its second repetition is missing."""
    out = []
    for p in LEVELS["policy"]:
        for t in LEVELS["threads"]:
            for rep in range(1 if (p, t) == ("nojc", 4) else 2):
                out.append(({"policy": p, "threads": t}, rep, _result(t, 10.0 * t + rep, 1 + rep)))
    return out


def test_each_repetition_lands_in_its_cell_and_a_missing_one_is_nan():
    ds = assemble_results(_triples(), LEVELS, {"backend": "test"})
    assert ds["throughput"].dims == ("policy", "threads", schema.REP)
    assert ds["throughput"].sel(policy="ext4", threads=4).values.tolist() == [40.0, 41.0]
    missing = ds["throughput"].sel(policy="nojc", threads=4, rep=1).item()
    assert np.isnan(missing) and ds[schema.RUN_ID].sel(policy="nojc", threads=4, rep=1).item() == -1
    assert ds.attrs == {"backend": "test"}    # straight from results: the given attrs are final
    assert ds["throughput"].attrs["units"] == schema.VARIABLES["throughput"].units


def test_tables_are_tagged_with_their_run_and_read_back_per_run():
    triples = _triples()
    ds = assemble_results(triples, LEVELS, {})
    assert ds.sizes[schema.OP_DIM] == sum(r.ops.size for _, _, r in triples)
    rid = ds[schema.RUN_ID].sel(policy="nojc", threads=2, rep=1).item()
    ops = runs.ops(ds, rid)
    assert ops.dtype == RECORD_DTYPE and ops["tid"].tolist() == [0, 1]
    assert runs.commits(ds, rid)["start"].tolist() == [0, 100]
    assert sorted(runs.run_ids(ds).tolist()) == list(range(len(triples)))


def test_parts_and_results_give_the_same_dataset():
    triples = _triples()
    index = {}
    parts = [result_to_part(r, point, index.setdefault((point["policy"], point["threads"]), len(index)), rep)
             for point, rep, r in triples]
    a = assemble(parts, LEVELS, {"backend": "test"})
    b = assemble_results(triples, LEVELS, {"backend": "test"})
    for v in ("throughput", "commits", schema.RUN_ID, "op_tid", "op_run", "commit_start", "commit_run"):
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


def test_a_point_outside_the_levels_is_an_error():
    with pytest.raises(KeyError, match="threads|8"):
        assemble_results([({"policy": "ext4", "threads": 8}, 0, _result(8, 1.0))], LEVELS, {})


def test_table_columns_are_stored_in_their_schema_types():
    """The op table's run, thread, kind and flags in 32 bits (a trace record's widths
    fit), times, bytes and every other column in 64; a stored part (narrowed to the
    smallest type) assembles to the same types."""
    triples = _triples()
    index = {}
    parts = [result_to_part(r, point, index.setdefault((point["policy"], point["threads"]), len(index)), rep)
             for point, rep, r in triples]
    for ds in (assemble_results(triples, LEVELS, {}), assemble(parts, LEVELS, {})):
        for _, cols in ((schema.OP_DIM, schema.OP_COLUMNS), (schema.COMMIT_DIM, schema.COMMIT_COLUMNS)):
            for c in cols:
                assert ds[c].dtype == np.dtype(schema.table_dtype(c)), c
        assert ds["op_kind"].dtype == np.int32 and ds["op_t_end"].dtype == np.int64
