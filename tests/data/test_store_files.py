"""save/load: a round trip keeps values and attrs (NetCDF and Zarr), the write is atomic
(no temporary file left), and loading what is not a dataset names the path."""
import numpy as np
import pytest
import xarray as xr

from abtlab.data import netcdf, store
from abtlab.errors import ConfigError


def _ds():
    return xr.Dataset({"throughput": (("threads", "rep"), np.arange(6.0).reshape(3, 2), {"units": "MB/s"})},
                      coords={"threads": [2, 4, 8], "rep": [0, 1]},
                      attrs={"backend": "test", "freq_mode": "simulated"})


@pytest.mark.parametrize("name", ["a.nc", "a.zarr"])
def test_round_trip_and_nothing_temporary_left(tmp_path, name):
    path = store.save(_ds(), tmp_path / name)
    back = store.load(path)
    np.testing.assert_array_equal(back["throughput"].values, _ds()["throughput"].values)
    assert back.attrs["backend"] == "test" and back["throughput"].attrs["units"] == "MB/s"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_loading_a_missing_path_names_it(tmp_path):
    with pytest.raises(ConfigError) as err:
        store.load(tmp_path / "none.nc")
    assert err.value.field == "path"


@pytest.mark.parametrize("name, owner, method, compressed", [
    ("a.nc", netcdf, "write", False), ("a.nc", xr.Dataset, "to_netcdf", True),
    ("a.zarr", xr.Dataset, "to_zarr", False)])
def test_a_write_a_signal_stops_leaves_no_temporary_file(tmp_path, monkeypatch, name, owner,
                                                         method, compressed):
    """Ctrl-C or SIGTERM (both a KeyboardInterrupt here) in the middle of the write (abtlab's
    NetCDF writer, xarray's for a compressed variable, Zarr): the partial file beside the
    output goes, and the output is not made."""
    real = getattr(owner, method)

    def torn(*a, **k):
        real(*a, **k)                        # written, not yet renamed into place
        raise KeyboardInterrupt
    monkeypatch.setattr(owner, method, torn)
    ds = _ds()
    if compressed:
        ds["throughput"].encoding.update(zlib=True, complevel=1)
    with pytest.raises(KeyboardInterrupt):
        store.save(ds, tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path):
    """A kill -9 mid-write leaves `.a.nc.tmp-PID`; the next write of a.nc (a --resume)
    removes it. A live writer's, another output's and a file of another name stay."""
    import subprocess
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen(["sleep", "60"])
    try:
        torn = store.temp_path(tmp_path / "a.nc", dead.pid)
        kept = [store.temp_path(tmp_path / "a.nc", live.pid), tmp_path / ".a.nc.tmp-1x",
                store.temp_path(tmp_path / "b.nc", dead.pid), tmp_path / "a.nc.tmp-1"]
        for f in (torn, *kept):
            f.write_bytes(b"\x89HDF partial")
        assert store.stale_temps(tmp_path / "a.nc") == [torn]
        store.save(_ds(), tmp_path / "a.nc")
        assert sorted(tmp_path.iterdir()) == sorted([tmp_path / "a.nc", *kept])
    finally:
        live.kill()
        live.wait()
