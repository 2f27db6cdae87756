"""A run dataset's content as plain numpy arrays, before (or without) xarray.

abtlab.data.assemble builds it from a sweep's blocks; `to_dataset` makes it the
xarray.Dataset users load and analyse, while the command line writes it
(abtlab.data.netcdf.write_arrays) and prints its summary (abtlab.present.summary) without
importing xarray: xarray, pandas and the dask modules xarray checks for cost a simulated
`abtlab run` about a second of its start, more than its runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RunArrays"]


@dataclass
class RunArrays:
    """variables: name -> (dims, ndarray, attrs), the data variables in dataset order;
    coords: dimension -> its levels (a list or 1-d array), in dataset order; attrs: the
    run's facts."""
    variables: dict
    coords: dict
    attrs: dict

    @property
    def sizes(self) -> dict:
        out = {d: len(v) for d, v in self.coords.items()}
        for dims, data, _ in self.variables.values():
            out.update((d, n) for d, n in zip(dims, np.shape(data)) if d not in out)
        return out

    def coord(self, dim) -> np.ndarray:
        """dim's levels (0, 1, ... for a dimension without a coordinate, as xarray gives)."""
        return np.asarray(self.coords[dim]) if dim in self.coords else np.arange(self.sizes[dim])

    def to_dataset(self):
        """The xarray.Dataset of these arrays (shared, not copied)."""
        import xarray as xr     # the command line never imports it: 0.67 CPU s
        return xr.Dataset(dict(self.variables), coords=dict(self.coords), attrs=dict(self.attrs))

    @classmethod
    def of(cls, ds) -> "RunArrays":
        """A Dataset's data variables and dimension coordinates as RunArrays (no copy); a
        RunArrays is returned as it is."""
        if isinstance(ds, cls):
            return ds
        return cls({k: (v.dims, v.values, dict(v.attrs)) for k, v in ds.data_vars.items()},
                   {d: ds[d].values for d in ds.dims if d in ds.coords}, dict(ds.attrs))
