"""A dataset stored under a variable's earlier name reads under its current one."""
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import abtlab
from abtlab.data import schema, store

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "data" / "samples").glob("*.nc"))


def _old_run():
    counts = xr.DataArray(np.array([[3.0, 5.0]]), dims=("freq_ghz", "rep"), coords={"freq_ghz": [1.6]},
                          attrs={"units": "1"})
    return xr.Dataset({"nonblocked_threads": counts, "commits": counts * 2})


def test_old_name_reads_as_threads_clear_of_commits(tmp_path):
    path = tmp_path / "old.nc"
    _old_run().to_netcdf(path, engine="h5netcdf")
    ds = store.load(path)
    assert "nonblocked_threads" not in ds
    assert ds["threads_clear_of_commits"].values.tolist() == [[3.0, 5.0]]
    assert ds["threads_clear_of_commits"].attrs["units"] == "1"
    assert ds["commits"].values.tolist() == [[6.0, 10.0]]


def test_current_names_keeps_a_dataset_with_both():
    ds = _old_run().assign(threads_clear_of_commits=_old_run()["commits"])
    out = schema.current_names(ds)
    assert out["threads_clear_of_commits"].values.tolist() == [[6.0, 10.0]]
    assert "nonblocked_threads" in out


def test_every_renamed_variable_is_in_the_schema():
    assert set(schema.RENAMED.values()) <= set(schema.VARIABLES)
    assert not set(schema.RENAMED) & set(schema.VARIABLES)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_shipped_sample_has_the_current_name(path):
    ds = abtlab.load(path)
    assert "threads_clear_of_commits" in ds and "nonblocked_threads" not in ds
    assert np.isfinite(ds["threads_clear_of_commits"]).all()


def test_a_part_written_under_the_old_name_resumes_under_the_new(tmp_path):
    from abtlab.data import block
    from abtlab.data.result import RunResult
    from abtlab.trace import RECORD_DTYPE
    ops = np.zeros(2, RECORD_DTYPE)
    res = RunResult(scalars={"throughput": 1.0, "nonblocked_threads": 2.0}, ops=ops,
                    commits={"tid": np.arange(1), "start": np.zeros(1), "end": np.ones(1)},
                    attrs={"filesystem": "ext4", "mount_options": ""})
    store.write_block(tmp_path / "r.nc", block.from_results([res], {"threads": 2}, 0, [0]))
    (back,) = store.read_parts(tmp_path / "r.nc").values()
    assert back.scalars["threads_clear_of_commits"].tolist() == [2.0]
    assert "nonblocked_threads" not in back.scalars
