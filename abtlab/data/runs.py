"""One run's records out of a run dataset: its op records and commit table, by run id
(what `ds.abt.ops/commits/run_ids` show users; modules call these directly)."""
from __future__ import annotations

import numpy as np

from ..trace import RECORD_DTYPE
from . import schema

__all__ = ["run_ids", "ops", "commits"]


def run_ids(ds, **sel):
    """Run ids of the repetitions at sel (every point when sel is empty); -1 = no run."""
    ids = ds[schema.RUN_ID].sel(**sel).values.ravel()
    return ids[ids >= 0]


def ops(ds, run_id):
    """Op records of one run as a RECORD_DTYPE array (tid, op, flags, bytes, times)."""
    m = ds["op_run"].values == run_id
    out = np.zeros(int(m.sum()), RECORD_DTYPE)
    for col, field in (("op_tid", "tid"), ("op_kind", "op"), ("op_flags", "flags"),
                       ("op_bytes", "bytes"), ("op_t_start", "t_start_ns"), ("op_t_end", "t_end_ns")):
        out[field] = ds[col].values[m]
    return out


def commits(ds, run_id):
    """Commit table of one run: dict tid, start, locking, flushing, logging, end, handles, blocks."""
    m = ds["commit_run"].values == run_id
    return {c.split("_", 1)[1]: ds[c].values[m] for c in schema.COMMIT_COLUMNS if c != "commit_run"}
