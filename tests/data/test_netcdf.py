"""abtlab.data.netcdf writes the file xarray's h5netcdf engine writes: the same HDF5 objects
(dimension scales and their references, netCDF-4's hidden attributes, dtypes, shapes,
chunks, fill values, data) and a dataset that loads identical, attribute order included."""
import re
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr

import abtlab
from abtlab.data import netcdf
from abtlab.data.arrays import RunArrays

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "data" / "samples").glob("*.nc"))


def _layout(path) -> dict:
    """Every object of an HDF5 file: hidden attributes by name, the others in order."""
    out = {}
    with h5py.File(path, "r") as f:
        def value(k, v):
            if k == "REFERENCE_LIST":
                return sorted((f[r].name, int(d)) for r, d in v)
            if k == "DIMENSION_LIST":
                return [[f[r].name for r in refs] for refs in v]
            return repr(v)                  # repr: NaN fill values compare equal

        def attrs(o):
            hidden = {k for k in o.attrs if k in ("CLASS", "NAME", "REFERENCE_LIST", "DIMENSION_LIST")
                      or k.startswith("_Netcdf4") or k == "_FillValue"}
            return (sorted((k, value(k, o.attrs[k])) for k in hidden),
                    [(k, value(k, o.attrs[k])) for k in o.attrs if k not in hidden | {"_NCProperties"}])

        def visit(name, o):
            out[name] = (attrs(o), str(o.dtype), o.shape, o.chunks, o.maxshape, repr(o.fillvalue),
                         o[()].tobytes() if o.dtype.kind != "O" else repr(o[()]))
        out["/"] = attrs(f)
        f.visititems(visit)
        out["order"] = list(f)
        assert f.attrs["_NCProperties"].startswith(b"version=2,")
    return out


def _same_as_xarray(ds, tmp_path):
    assert netcdf.writable(ds)
    ds.to_netcdf(tmp_path / "xarray.nc", engine="h5netcdf")
    netcdf.write(ds, tmp_path / "abtlab.nc")
    theirs, ours = _layout(tmp_path / "xarray.nc"), _layout(tmp_path / "abtlab.nc")
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name] == theirs[name], name
    a = xr.load_dataset(tmp_path / "xarray.nc", engine="h5netcdf")
    b = xr.load_dataset(tmp_path / "abtlab.nc", engine="h5netcdf")
    xr.testing.assert_identical(a, b)
    for k in a.variables:
        assert list(a[k].attrs) == list(b[k].attrs)


def test_every_kind_of_variable_as_xarray_writes_it(tmp_path):
    ds = xr.Dataset({"a": (("x", "y"), np.arange(6.0).reshape(2, 3), {"units": "s", "n": 3, "l": [1, 2]}),
                     "b": (("z",), np.arange(4)), "empty": (("w",), np.zeros(0, np.int64)),
                     "text": (("x",), np.array(["u", "vv"])), "flag": (("z",), np.array([True, False, True, True])),
                     "nan": (("z",), np.array([1.0, np.nan, 2, 3])), "c": ((), 2.5)},
                    coords={"x": ["p", "qq"], "y": [1.5, 2, 3], "s": 3}, attrs={"k": "v", "n": 1, "f": 2.5})
    _same_as_xarray(ds, tmp_path)


def test_a_simulated_sweep_and_a_selection_of_it(tmp_path):
    ds = abtlab.run("sim", threads="8,16", policy="ext4;delayjc:window=2ms", freq="1.6,3.3", reps=3, quiet=True)
    _same_as_xarray(ds, tmp_path)
    _same_as_xarray(ds.sel(policy="ext4"), tmp_path)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_a_loaded_dataset_written_again(tmp_path, sample):
    """A loaded file carries its encoding (unlimited dims first, chunks of empty tables)."""
    _same_as_xarray(abtlab.load(sample), tmp_path)


def test_compressed_or_lazy_data_is_left_to_xarray():
    ds = xr.Dataset({"a": (("x",), np.arange(3.0))})
    assert netcdf.writable(ds)
    ds["a"].encoding.update(zlib=True)
    assert not netcdf.writable(ds)


def _same_arrays_as_xarray(run, tmp_path):
    """write_arrays(run) writes the file xarray writes of run.to_dataset()."""
    assert netcdf.arrays_writable(run)
    run.to_dataset().to_netcdf(tmp_path / "xarray.nc", engine="h5netcdf")
    netcdf.write_arrays(run, tmp_path / "arrays.nc")
    theirs, ours = _layout(tmp_path / "xarray.nc"), _layout(tmp_path / "arrays.nc")
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name] == theirs[name], name
    xr.testing.assert_identical(xr.load_dataset(tmp_path / "xarray.nc", engine="h5netcdf"),
                                xr.load_dataset(tmp_path / "arrays.nc", engine="h5netcdf"))


def test_run_arrays_as_xarray_writes_them(tmp_path):
    run = RunArrays({"a": (["x", "rep"], np.array([[1.0, np.nan], [2, 3]]), {"units": "s", "n": 3}),
                     "i": (["x", "rep"], np.array([[1, -1], [2, 3]]), {"units": "1"}),
                     "t": (["op"], np.arange(5), {"units": "ns"}),
                     "e": (["batch"], np.zeros(0, np.int64), {"units": "1"})},
                    {"x": ["ext4", "delayjc:window=16ms"], "rep": np.arange(2)},
                    {"k": "v", "n": 1, "f": 2.5})
    _same_arrays_as_xarray(run, tmp_path)
    run.coords["x"] = [1.6, 3.3]         # a float coordinate takes a NaN fill value too
    _same_arrays_as_xarray(run, tmp_path)


def test_a_simulated_sweep_saved_from_its_arrays(tmp_path):
    """store.save of a sweep's RunArrays: the file store.save writes of its Dataset."""
    from abtlab.data import assemble, block, store
    from abtlab.sim.backend import SimBackend
    from abtlab.sweep.loop import expand
    levels = {"policy": ["ext4", "delayjc:window=2ms"], "freq_ghz": [1.6, 3.3], "threads": [8]}
    be = SimBackend()
    blocks = [block.from_results(be.run_group([(p, type("C", (), {"seed": s, "options": {}})())
                                               for s in range(3)], None), p, i, range(3))
              for i, p in enumerate(expand(levels))]
    run = assemble.assemble_arrays(blocks, levels, {"backend": "sim"})
    assert run.attrs["freq_mode"] == "simulated"
    _same_arrays_as_xarray(run, tmp_path)
    run.attrs.update(flag=True, none=None, spec={"seed": 0})    # store.save cleans these
    store.save(run, tmp_path / "from_arrays.nc")
    store.save(run.to_dataset(), tmp_path / "from_dataset.nc")
    assert _layout(tmp_path / "from_arrays.nc") == _layout(tmp_path / "from_dataset.nc")
    xr.testing.assert_identical(abtlab.load(tmp_path / "from_arrays.nc"),
                                abtlab.load(tmp_path / "from_dataset.nc"))


def test_arrays_of_another_kind_are_left_to_xarray():
    run = RunArrays({"b": (["x"], np.array([True, False]), {})}, {"x": [1, 2]}, {})
    assert not netcdf.arrays_writable(run)


def _attr_kind(obj, name):
    """What HDF5 stores for an attribute: its value, class, size, string form, dataspace."""
    aid = obj.attrs.get_id(name)
    t = aid.get_type()
    text = (t.get_cset(), t.is_variable_str(), t.get_strpad()) if t.get_class() == h5py.h5t.STRING else None
    return repr(obj.attrs[name]), t.get_class(), t.get_size(), text, aid.shape, aid.dtype.str


@pytest.mark.parametrize("value", ["bytes/s", "", "é", np.str_("ext4"), np.int32(3), np.float64(2.5),
                                   np.array([np.nan]), np.array([1, 2], np.int32), np.arange(3, dtype=np.uint8),
                                   np.array([True]), np.array(b"version=2", "S9"), 7])
def test_an_attribute_as_h5py_writes_it(tmp_path, value):
    """netcdf._set_attr writes text and numbers through h5py's low-level calls: the
    attribute h5py's own `attrs[name] = value` writes, type, size and dataspace included;
    any other kind goes through h5py."""
    with h5py.File(tmp_path / "a.h5", "w", track_order=True) as f:
        ours, theirs = f.create_dataset("ours", (1,), "f8"), f.create_dataset("theirs", (1,), "f8")
        try:
            theirs.attrs["a"] = value
        except TypeError as exc:        # numpy's str_: h5py finds no type for it
            with pytest.raises(TypeError, match=re.escape(str(exc))):
                netcdf._set_attr(ours, "a", value)
            return
        netcdf._set_attr(ours, "a", value)
        assert _attr_kind(ours, "a") == _attr_kind(theirs, "a")
