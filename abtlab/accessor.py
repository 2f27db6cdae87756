"""`ds.abt.*`: run-dataset helpers without subclassing Dataset (registered on load/run)."""
from __future__ import annotations

import numpy as np
import xarray as xr

from .data import schema

__all__ = ["AbtAccessor"]


@xr.register_dataset_accessor("abt")
class AbtAccessor:
    def __init__(self, ds):
        self._ds = ds

    def summary(self, var="throughput"):
        """Mean, 95% CI, RSD and n per point of var."""
        from .stats.summary import point_stats
        return point_stats(self._ds, var)

    def slowdown(self, var="throughput", level=0.95):
        """Ratio of var to its value at the lowest frequency, per configuration, with CIs."""
        from .stats import slowdown
        return slowdown(self._ds, var, level=level)

    def plot_throughput(self, facet=None, ax=None):
        from .present.plots import plot_throughput
        return plot_throughput(self._ds, facet=facet, ax=ax)

    def plot(self, var, facet=None, ax=None):
        from .present.plots import plot_metric
        return plot_metric(self._ds, var, facet=facet, ax=ax)

    def run_ids(self, **sel):
        ids = self._ds[schema.RUN_ID].sel(**sel).values.ravel()
        return ids[ids >= 0]

    def ops(self, run_id):
        """Op records of one run as a RECORD_DTYPE array (tid, op, flags, bytes, times)."""
        from .trace import RECORD_DTYPE
        ds = self._ds
        m = ds["op_run"].values == run_id
        out = np.zeros(int(m.sum()), RECORD_DTYPE)
        for col, field in (("op_tid", "tid"), ("op_kind", "op"), ("op_flags", "flags"),
                           ("op_bytes", "bytes"), ("op_t_start", "t_start_ns"), ("op_t_end", "t_end_ns")):
            out[field] = ds[col].values[m]
        return out

    def commits(self, run_id):
        """Commit table of one run: dict tid, start, locking, flushing, logging, end, handles, blocks."""
        ds = self._ds
        m = ds["commit_run"].values == run_id
        return {c.split("_", 1)[1]: ds[c].values[m] for c in schema.COMMIT_COLUMNS if c != "commit_run"}
