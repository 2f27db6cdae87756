"""The model's measures recomputed from a dataset's own records: every run's op and
commit tables are stored, so a dataset written before a measure existed (or before its
definition changed) can be read with today's definitions instead of being thrown away.

IOzone-like datasets written before `throughput_fsync` existed timed T_write to the end
of each thread's fsync (IOzone -e) and counted a write blocked only when it ended after
a commit's end; `upgrade` recomputes both kinds of throughput and the thread classes
from the records, and says so in the `remeasured` attr."""
from __future__ import annotations

import numpy as np

from ..data import runs, schema
from .measures import measures

__all__ = ["IOZONE_MEASURES", "needs_upgrade", "upgrade"]

IOZONE_MEASURES = ("throughput", "throughput_fsync", "throughput_stonewall", "mean_write", "mean_write_fsync",
                   "threads_clear_of_commits", "blocked_full", "blocked_partial", "blocked_inside")


def needs_upgrade(ds) -> bool:
    """An IOzone-like dataset with records whose measures predate the paper's T_write:
    as stored (`throughput` fsync-timed, no `throughput_fsync`), or as `load` migrated
    it from schema version 1 (`throughput_fsync` and no `throughput`)."""
    records = "op_run" in ds and schema.RUN_ID in ds and \
        ds.attrs.get("backend") not in ("fio", "dio", "iozone-tool")
    # a dataset of the current schema means what it says, whatever its variables
    old = int(ds.attrs.get(schema.ATTR_SCHEMA_VERSION, 1)) < schema.SCHEMA_VERSION
    stored = old and "throughput" in ds and "throughput_fsync" not in ds
    migrated = ds.attrs.get(schema.ATTR_MIGRATED_FROM) == 1 and "throughput" not in ds \
        and "throughput_fsync" in ds
    return records and (stored or migrated)


def upgrade(ds):
    """ds with IOZONE_MEASURES recomputed from each run's records (a copy; ds itself when
    it needs no upgrade). Runs without records keep NaN."""
    if not needs_upgrade(ds):
        return ds
    rid = ds[schema.RUN_ID]
    sizes = rid[schema.FILE_SIZE].values if schema.FILE_SIZE in rid.dims else None
    out = {k: np.full(rid.shape, np.nan) for k in IOZONE_MEASURES}
    for idx in np.ndindex(rid.shape):
        r = int(rid.values[idx])
        if r < 0:
            continue
        size = float(sizes[idx[rid.dims.index(schema.FILE_SIZE)]]) if sizes is not None else None
        m = measures(runs.ops(ds, r), runs.commits(ds, r), "iozone", file_size=size, fsync=True)
        for k in IOZONE_MEASURES:
            out[k][idx] = m[k]
    new = ds.copy()
    for k, v in out.items():
        meta = schema.VARIABLES[k]
        new[k] = (rid.dims, v, {"units": meta.units, "long_name": meta.long_name})
    new.attrs["remeasured"] = ("throughput, the thread classes and mean_write recomputed from the "
                               "stored records with the paper's T_write (the write op); the file "
                               "had throughput with fsync timed (now throughput_fsync)")
    return new
