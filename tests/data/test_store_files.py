"""save/load: a round trip keeps values and attrs (NetCDF and Zarr), the write is atomic
(no temporary file left), and loading what is not a dataset names the path."""
import numpy as np
import pytest
import xarray as xr

from abtlab.data import store
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
