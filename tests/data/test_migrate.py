"""Datasets of every older schema version are read truthfully: a version-1 IOzone-like
run (fsync-timed `throughput`, no version attr) loads with that quantity as
`throughput_fsync` and the write op recomputed from its records; a newer version is
refused with the line that says what to do; what abtlab writes carries its version."""
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import abtlab
from abtlab.data import migrate, schema
from abtlab.data.store import load, save
from abtlab.errors import ConfigError

V1 = Path(__file__).resolve().parents[1] / "fixtures" / "schema_v1_iozone.nc"


def test_the_fixture_is_version_1_with_fsync_timed_throughput():
    raw = xr.load_dataset(V1, engine="h5netcdf")
    assert schema.ATTR_SCHEMA_VERSION not in raw.attrs and "throughput_fsync" not in raw
    assert migrate.version(raw) == 1


def test_version_1_names_move_and_the_write_op_is_recomputed_from_the_records():
    raw = xr.load_dataset(V1, engine="h5netcdf")
    named = load(V1)
    assert "throughput" not in named and named.attrs[schema.ATTR_MIGRATED_FROM] == 1
    np.testing.assert_array_equal(named["throughput_fsync"].values, raw["throughput"].values)
    assert named["throughput_fsync"].attrs["units"] == "bytes/s"
    ds = abtlab.load(V1)
    assert "remeasured" in ds.attrs and ds.attrs[schema.ATTR_SCHEMA_VERSION] == schema.SCHEMA_VERSION
    # the write op excludes the fsync: it is faster than write + fsync in every run
    assert (ds["throughput"].values > ds["throughput_fsync"].values).all()
    np.testing.assert_allclose(ds["throughput_fsync"].values, raw["throughput"].values, rtol=1e-6)


def test_version_1_without_records_keeps_only_what_it_measured(tmp_path):
    raw = xr.load_dataset(V1, engine="h5netcdf")
    bare = raw.drop_vars([v for v in raw.variables if set(raw[v].dims) & {"op", "commit", "batch"}]
                         + ["run_id"])
    bare.encoding.pop("unlimited_dims", None)
    bare.to_netcdf(tmp_path / "bare.nc", engine="h5netcdf")
    ds = abtlab.load(tmp_path / "bare.nc")
    assert "throughput" not in ds and "throughput_fsync" in ds and "remeasured" not in ds.attrs


def test_a_newer_version_is_refused_with_what_to_do(tmp_path):
    raw = xr.load_dataset(V1, engine="h5netcdf")
    raw.attrs[schema.ATTR_SCHEMA_VERSION] = schema.SCHEMA_VERSION + 1
    raw.to_netcdf(tmp_path / "new.nc", engine="h5netcdf")
    with pytest.raises(ConfigError, match="written by a newer abtlab; upgrade abtlab"):
        load(tmp_path / "new.nc")


def test_what_abtlab_writes_carries_the_current_version_and_reads_back_unchanged(tmp_path):
    ds = abtlab.load(V1)
    save(ds, tmp_path / "now.nc")
    again = load(tmp_path / "now.nc")
    assert again.attrs[schema.ATTR_SCHEMA_VERSION] == schema.SCHEMA_VERSION
    np.testing.assert_array_equal(again["throughput"].values, ds["throughput"].values)
