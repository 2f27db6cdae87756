"""A dataset written by an earlier abtlab, read under today's names. Each dataset carries
its schema version (schema.ATTR_SCHEMA_VERSION); one without it is version 1:

- version 1: an IOzone-like run's `throughput` (and `mean_write`) timed each thread's
  write to the end of its fsync (IOzone -e). Read now, they are `throughput_fsync` and
  `mean_write_fsync`; `throughput` (the write op, the paper's quantity) and the thread
  classes are recomputed from the file's records by `abtlab.load` (abtlab.model.remeasure)
  where it has them, and are absent where it has none. Variables renamed since
  (schema.RENAMED) take their current names.
- a version newer than this abtlab's is refused, with the line that says what to do."""
from __future__ import annotations

from ..errors import ConfigError
from . import schema

__all__ = ["version", "to_current", "TOOL_BACKENDS"]

# backends whose `throughput` is the tool's own report of its mode, never fsync-timed by abtlab
TOOL_BACKENDS = ("fio", "dio", "iozone-tool")
_V1_FSYNC_TIMED = {"throughput": "throughput_fsync", "mean_write": "mean_write_fsync"}


def version(ds) -> int:
    try:
        return int(ds.attrs.get(schema.ATTR_SCHEMA_VERSION, 1))
    except (TypeError, ValueError):
        raise ConfigError(schema.ATTR_SCHEMA_VERSION, ds.attrs[schema.ATTR_SCHEMA_VERSION],
                          f"an integer schema version, 1 to {schema.SCHEMA_VERSION}") from None


def _fsync_timed(ds) -> bool:
    """A version-1 IOzone-like run whose `throughput` is the fsync-timed one."""
    return ("throughput" in ds and "throughput_fsync" not in ds
            and ds.attrs.get("backend") not in TOOL_BACKENDS
            and ds.attrs.get("backend") in (None, "iozone", "sim"))


def to_current(ds, path="the dataset"):
    """ds under the current schema: renamed, stamped with the version, and saying what
    changed in the `migrated_from` attr (ds itself when it is current)."""
    v = version(ds)
    if v > schema.SCHEMA_VERSION:
        raise ConfigError(str(path), f"schema version {v}",
                          f"version {schema.SCHEMA_VERSION} or older: it was written by a newer "
                          f"abtlab; upgrade abtlab (pip install -U abtlab) to read it")
    ds = schema.current_names(ds)
    if v == schema.SCHEMA_VERSION:
        return ds
    if _fsync_timed(ds):
        old = {k: n for k, n in _V1_FSYNC_TIMED.items() if k in ds and n not in ds}
        ds = ds.rename_vars(old)
        for k, n in old.items():
            meta = schema.VARIABLES[n]
            ds[n].attrs.update(units=meta.units, long_name=meta.long_name)
    ds.attrs[schema.ATTR_MIGRATED_FROM] = v
    ds.attrs[schema.ATTR_SCHEMA_VERSION] = schema.SCHEMA_VERSION
    return ds
