"""Write a dataset as NetCDF-4 in one pass of h5py: the file xarray's h5netcdf engine writes.

xarray encodes the variables (CF conventions, strings, fill values) exactly as for its own
write; this module then lays them out as h5netcdf does (a dimension scale per dimension,
`_Netcdf4Dimid` / `_Netcdf4Coordinates`, `_NCProperties`), without h5netcdf's per-variable
bookkeeping, which looks every dimension up again through h5py for each variable it
creates: ~10 ms a variable, 0.5-0.9 s of a simulated sweep's 47 variables against ~0.1 s
for the data. tests/data/test_netcdf.py checks that the two files hold the same objects,
attributes and data, and load as identical datasets.
`write_arrays` writes the same file from RunArrays (abtlab.data.arrays) with xarray's
encoding of its few kinds of arrays done here, so the command line never imports xarray.
"""
from __future__ import annotations

import h5py
import numpy as np
from h5py import h5a, h5s, h5t

from ..about import __version__
from .hdf5file import write_file

__all__ = ["write", "writable", "write_arrays", "arrays_writable"]

_NOT_A_VARIABLE = "This is a netCDF dimension but not a netCDF variable."
# encodings this writer lays out itself; a filter turned on (compression, ...) or any
# other key sends the dataset to xarray's own write
_FILTERS = {"zlib", "complevel", "shuffle", "fletcher32", "compression", "compression_opts",
            "szip", "bzip2", "blosc", "zstd"}
_PLAIN = {"dtype", "_FillValue", "missing_value", "units", "calendar", "source",
          "original_shape", "contiguous", "chunksizes", "preferred_chunks", "coordinates",
          *_FILTERS}


def writable(ds) -> bool:
    """True when write() lays ds out itself: in-memory numpy data, no compression, no
    unlimited dimension that holds data (write() makes only empty dimensions unlimited)."""
    if any(ds.sizes.get(d, 0) for d in ds.encoding.get("unlimited_dims") or ()):
        return False
    # xarray's and h5netcdf's own helpers, not public: gone in a release, xarray writes; a
    # Dataset's write only (the command line writes RunArrays without xarray: 0.67 CPU s)
    try:
        from h5netcdf.core import _get_default_chunksizes  # noqa: F401
        from xarray.backends.common import ensure_dtype_not_object  # noqa: F401
        from xarray.backends.netCDF4_ import _encode_nc4_variable  # noqa: F401
    except ImportError:
        return False
    for v in ds.variables.values():
        if not isinstance(v.data, np.ndarray) or set(v.encoding) - _PLAIN \
                or any(v.encoding.get(k) for k in _FILTERS):
            return False
    return True


def _encoded(ds):
    """(variables, attrs) as xarray's h5netcdf store receives them to write."""
    # a Dataset's write only: the command line writes RunArrays without xarray (0.67 CPU s)
    from xarray import conventions
    from xarray.backends.common import ensure_dtype_not_object
    from xarray.backends.netCDF4_ import _encode_nc4_variable
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    variables, attrs = conventions.cf_encoder(variables, attrs)
    return {k: _encode_nc4_variable(ensure_dtype_not_object(v, name=k), name=k)
            for k, v in variables.items()}, attrs


def _attr(value):
    """An attribute as h5netcdf stores it: a non-string scalar as a 1-element array."""
    if np.isscalar(value) and np.asarray(value).dtype.kind not in "SU":
        return np.atleast_1d(value)
    return value


def _set_attr(obj, name: str, value) -> None:
    """obj.attrs[name] = value, as h5py writes a new attribute (the same type, dataspace
    and data), straight through its low-level calls for text and numbers: h5py's own
    path checks for an attribute to replace and works the types out anew each time,
    ~0.05 ms of ~0.12 ms an attribute, and a simulated sweep's file has ~350 of them."""
    if type(value) is str and name.isascii():     # as h5py: not numpy's str_
        data = np.array(value, dtype=_STRING)
        types = _types(_STRING, "str")
    elif isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "iuf" \
            and name.isascii():
        data = np.asarray(value, order="C")
        types = _types(data.dtype, data.dtype)
    else:                               # any other kind, or name: h5py works it out
        obj.attrs[name] = value
        return
    attr = h5a.create(obj.id, name.encode(), types[0], h5s.create_simple(data.shape))
    try:
        attr.write(data, mtype=types[1])
    finally:
        attr.close()


_STRING = np.dtype("O", metadata={"vlen": str})     # h5py.string_dtype(): UTF-8, variable
_TYPES: dict = {}


def _types(dtype, key):
    """(file type, memory type) of an attribute of dtype, made once, as h5py makes them
    (key: the dtype; "str" for text, whose object dtype equals every other object one)."""
    if key not in _TYPES:
        _TYPES[key] = (h5t.py_create(dtype, logical=True), h5t.py_create(dtype))
    return _TYPES[key]


def _chunks(var, shape, dtype):
    """h5netcdf's chunks: the stored encoding's if it still fits, its heuristic where a
    dimension is empty (unlimited), else contiguous."""
    chunks = var.encoding.get("chunksizes")
    if chunks is not None and (var.encoding.get("contiguous")
                               or tuple(var.encoding.get("original_shape", shape)) != shape
                               or any(c > n for c, n in zip(chunks, shape))):
        chunks = None       # as xarray: chunks of another shape do not carry over
    if chunks is None and 0 in shape:
        # only a write with an empty table needs h5netcdf: 0.02 CPU s of a new process
        from h5netcdf.core import _get_default_chunksizes
        chunks = _get_default_chunksizes(shape, dtype)
    return tuple(chunks) if chunks is not None and shape else None


def write(ds, path) -> None:
    """Write ds to path (a new file) as xarray's `to_netcdf(engine="h5netcdf")` would."""
    variables, attrs = _encoded(ds)
    _write(variables, attrs, [d for d in ds.encoding.get("unlimited_dims") or () if d in ds.sizes],
           path)


# the kinds of array xarray writes unchanged but for a float's NaN fill value: numbers
# and unicode text (booleans, objects, dates and times it encodes further)
_PLAIN_KINDS = "iuf" + "U"


class _Var:
    """An encoded variable as _write reads it (the part of xarray's Variable it uses)."""
    encoding: dict = {}

    def __init__(self, dims, data, attrs):
        self.dims, self.values, self.attrs = tuple(dims), data, attrs
        self.shape, self.dtype = data.shape, data.dtype


def _arrays_of(run):
    """(name, dims, array, attrs) of every variable, then every coordinate, of RunArrays."""
    return [*((k, dims, np.asarray(data), attrs) for k, (dims, data, attrs) in run.variables.items()),
            *((d, (d,), np.asarray(levels), {}) for d, levels in run.coords.items())]


def arrays_writable(run) -> bool:
    """True when write_arrays encodes every array of run (RunArrays) as xarray would:
    numbers and unicode text, with dims that match their shapes."""
    return all(data.dtype.kind in _PLAIN_KINDS and data.ndim == len(dims)
               for _, dims, data, _ in _arrays_of(run))


def write_arrays(run, path) -> None:
    """Write RunArrays to path as write() writes run.to_dataset(): xarray's encoding of
    plain numbers and text is a NaN `_FillValue` on every float variable."""
    variables = {}
    for k, dims, data, attrs in _arrays_of(run):
        attrs = dict(attrs)
        if data.dtype.kind == "f" and "_FillValue" not in attrs:
            attrs["_FillValue"] = data.dtype.type(np.nan)
        variables[k] = _Var(dims, data, attrs)
    _write(variables, dict(run.attrs), [], path)


def _write(variables, attrs, unlimited, path) -> None:
    """Lay encoded variables and attrs out as h5netcdf does (unlimited: dimension names)."""
    # dimension ids as xarray sets them: the dataset's unlimited ones, then by first use
    sizes: dict = {d: None for d in unlimited}
    for v in variables.values():
        sizes.update(zip(v.dims, v.shape))
    dimid = {d: i for i, d in enumerate(sizes)}
    coords = {k for k, v in variables.items() if v.dims == (k,)}
    # laid out in memory, written with os.write: a full disk never tears a file HDF5 has open
    write_file(path, lambda f: _lay_out(f, variables, attrs, sizes, dimid, coords),
               track_order=True)


def _lay_out(f, variables, attrs, sizes, dimid, coords) -> None:
    """Lay the file out in f, an open h5py File, as h5netcdf does."""
    for k, v in attrs.items():
        _set_attr(f, k, _attr(v))
    scales = {}
    for d, n in sizes.items():      # a dimension without a variable: an empty scale
        if d not in coords:
            scales[d] = f.create_dataset(d, shape=(n,), dtype=">f4", track_order=True,
                                         maxshape=(None,) if n == 0 else None)
    made = {}
    for k, v in variables.items():
        a = dict(v.attrs)
        fill = a.pop("_FillValue", None)
        dtype = h5py.string_dtype() if v.dtype.kind in "UO" else v.dtype
        unlimited = tuple(None if sizes[d] == 0 else sizes[d] for d in v.dims)
        made[k] = (f.create_dataset(
            k, shape=v.shape, dtype=dtype, chunks=_chunks(v, v.shape, dtype),
            fillvalue=fill, track_order=True,
            maxshape=unlimited if None in unlimited else None), fill, a)
        if k in coords:
            scales[k] = made[k][0]
    _scales(f, variables, made, scales, sizes, dimid, coords)
    for k, v in variables.items():
        h5ds, fill, a = made[k]
        if v.dims and k not in coords:
            _attach(h5ds, [scales[d] for d in v.dims])
        if v.dims:
            _set_attr(h5ds, "_Netcdf4Coordinates", np.array([dimid[d] for d in v.dims], np.int32))
            # netCDF-C gives a variable its first dimension's id when data is first
            # written to it; h5netcdf mimics that except where the first is unlimited
            if k not in coords and sizes[v.dims[0]] != 0:
                _set_attr(h5ds, "_Netcdf4Dimid", np.int32(dimid[v.dims[0]]))
        if fill is not None:
            _set_attr(h5ds, "_FillValue", np.array([fill], dtype=v.dtype)
                      if v.dtype.kind not in "UO" else fill)
        for name, value in a.items():
            _set_attr(h5ds, name, _attr(value))
        _write_data(h5ds, np.asarray(v.values))
    props = (f"version=2,abtlab={__version__},hdf5={h5py.version.hdf5_version},"
             f"h5py={h5py.__version__}")
    f.attrs["_NCProperties"] = np.array(props, dtype=h5py.string_dtype("ascii", len(props)))


def _write_data(h5ds, data) -> None:
    """h5ds[...] = data; numbers of the dataset's own type straight through h5py's
    low-level write (its selection machinery costs ~0.2 ms a variable)."""
    if not data.size:
        return
    if data.dtype.kind in "iuf" and data.dtype == h5ds.id.dtype:
        h5ds.id.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data))
    else:
        h5ds[...] = data.astype(object) if data.dtype.kind == "U" else data


# Dimension scales are attached as HDF5's H5DSattach_scale attaches them, its two
# attributes written once each: a scale's REFERENCE_LIST (every variable and dimension
# index it is attached to, in the order the attachments are made) and a variable's
# DIMENSION_LIST (its scale per dimension). H5DSattach_scale reads and rewrites both on
# every call: a simulated sweep's ~230 attachments cost more than its 46 MB of data.
def _ref_list_dtype():
    return np.dtype({"names": ["dataset", "dimension"], "formats": [h5py.ref_dtype, "<u4"],
                     "offsets": [0, 8], "itemsize": 16})


def _scales(f, variables, made, scales, sizes, dimid, coords) -> None:
    """Make every dimension a scale, with the references of the variables it scales."""
    refs: dict = {d: [] for d in sizes}
    for k, v in variables.items():
        if k not in coords:
            ref = made[k][0].ref
            refs.update((d, [*refs[d], (ref, i)]) for i, d in enumerate(v.dims))
    for d, n in sizes.items():
        scale = scales[d]
        _set_attr(scale, "_Netcdf4Dimid", np.int32(dimid[d]))
        scale.make_scale(d if d in coords else f"{_NOT_A_VARIABLE}{n:10d}")
        if refs[d]:
            scale.attrs.create("REFERENCE_LIST", np.array(refs[d], _ref_list_dtype()))


def _attach(h5ds, scales) -> None:
    """A variable's DIMENSION_LIST: one scale per dimension."""
    value = np.empty(len(scales), object)
    for i, s in enumerate(scales):
        value[i] = np.array([s.ref], h5py.ref_dtype)
    h5ds.attrs.create("DIMENSION_LIST", value, dtype=h5py.vlen_dtype(h5py.ref_dtype))
