"""`ds.abt.*`: run-dataset helpers without subclassing Dataset, registered by `abtlab.load`,
`abtlab.run` and `abtlab.sweep_spec` (the package's own modules call what these wrap)."""
from __future__ import annotations

import xarray as xr

from ..data import runs

__all__ = ["AbtAccessor"]


@xr.register_dataset_accessor("abt")
class AbtAccessor:
    def __init__(self, ds):
        self._ds = ds

    def summary(self, var="throughput"):
        """Mean, 95% CI, RSD and n per point of var."""
        from ..stats.intervals import point_stats
        return point_stats(self._ds, var)

    def slowdown(self, var="throughput", level=0.95):
        """Ratio of var to its value at the lowest frequency, per configuration, with CIs."""
        from ..stats import slowdown
        return slowdown(self._ds, var, level=level)

    def plot_throughput(self, facet=None, ax=None):
        from .plots import plot_throughput
        return plot_throughput(self._ds, facet=facet, ax=ax)

    def plot(self, var, facet=None, ax=None):
        from .plots import plot_metric
        return plot_metric(self._ds, var, facet=facet, ax=ax)

    def run_ids(self, **sel):
        return runs.run_ids(self._ds, **sel)

    def ops(self, run_id):
        """Op records of one run as a RECORD_DTYPE array (tid, op, flags, bytes, times)."""
        return runs.ops(self._ds, run_id)

    def commits(self, run_id):
        """Commit table of one run: dict tid, start, locking, flushing, logging, end, handles, blocks."""
        return runs.commits(self._ds, run_id)
