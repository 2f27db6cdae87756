"""A point's repetitions as one block of arrays: what a sweep keeps, stores as a part
and assembles into the run dataset (abtlab.data.assemble).

A block holds one point (its index in the sweep) and some of its repetitions: each
repetition's scalars, and the op, commit and batch tables of all of them concatenated,
each record's `*_run` column giving its repetition's position in the block. Runs that
cost milliseconds (a model's) are kept as one block per group, stored as one part, so no
repetition pays for a Dataset or a file of its own; any other run is a block of its own.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from . import schema
from ..trace import RECORD_DTYPE

__all__ = ["RunBlock", "from_results", "write_hdf5", "read_hdf5", "from_part", "TABLES"]

TABLES = ((schema.OP_DIM, schema.OP_COLUMNS), (schema.COMMIT_DIM, schema.COMMIT_COLUMNS),
          (schema.BATCH_DIM, schema.BATCH_COLUMNS))
_OP_FIELDS = {"op_tid": "tid", "op_kind": "op", "op_flags": "flags", "op_bytes": "bytes",
              "op_t_start": "t_start_ns", "op_t_end": "t_end_ns"}
_SOURCES = {schema.COMMIT_DIM: "commits", schema.BATCH_DIM: "batches"}


@dataclass
class RunBlock:
    """Repetitions `reps` of the point `point` (index `point_index` in its sweep).

    scalars: variable -> float64 array, one value per repetition (NaN: not measured).
    tables: every column of schema's op, commit and batch tables -> an integer array
    (assembly stores each as schema.table_dtype); a `*_run` column holds the position
    in `reps` of the repetition a record belongs to.
    run_attrs: one dict of facts per repetition, or a single dict that holds for all.
    """
    point: dict
    point_index: int
    reps: np.ndarray
    scalars: dict
    tables: dict
    run_attrs: list


def _json(d) -> str:
    return json.dumps(d, default=str, sort_keys=True)


def _table(results, source, columns) -> dict:
    """One table of every result, concatenated; a column a result does not provide
    (e.g. a kernel without run_stats) is -1."""
    parts = [getattr(r, source) or {} for r in results]
    sizes = np.array([max((len(v) for v in p.values()), default=0) for p in parts], np.int64)
    if not sizes.any():         # e.g. no delayJC batches: nothing to gather run by run
        return {col: np.zeros(0, np.int64) for col in columns}
    out = {}
    for col in columns:
        if col.endswith("_run"):
            out[col] = np.repeat(np.arange(len(results), dtype=np.int64), sizes)
            continue
        key = col.split("_", 1)[1]
        out[col] = _concat([np.asarray(p[key], np.int64) if key in p else np.full(n, -1, np.int64)
                            for p, n in zip(parts, sizes)])
    return out


def _op_table(results) -> dict:
    ops = [r.ops if r.ops is not None else np.zeros(0, RECORD_DTYPE) for r in results]
    sizes = np.array([o.size for o in ops], np.int64)
    out = {"op_run": np.repeat(np.arange(len(results), dtype=schema.table_dtype("op_run")), sizes)}
    # each field cast straight into its column, in its stored type: concatenating the
    # records first copied them once more (100 repetitions of 256 threads: ~50 ms -> ~5 ms)
    cols = {col: np.empty(int(sizes.sum()), schema.table_dtype(col)) for col in _OP_FIELDS}
    for o, end in zip(ops, np.cumsum(sizes).tolist()):
        for col, field in _OP_FIELDS.items():
            cols[col][end - o.size:end] = o[field]
    out.update(cols)
    return out


def _concat(arrays) -> np.ndarray:
    return arrays[0].astype(np.int64, copy=True) if len(arrays) == 1 else \
        np.concatenate(arrays).astype(np.int64, copy=False)


def from_results(results: list, point: dict, point_index: int, reps) -> RunBlock:
    """The block of RunResults `results`, repetitions `reps` (same order) of one point."""
    n = len(results)
    names: dict = {}        # every result's scalars, in the order they first appear
    for r in results:
        names.update(dict.fromkeys(r.scalars))
    nan = float("nan")
    scalars = {name: np.array([float(r.scalars.get(name, nan)) for r in results], np.float64)
               for name in names}
    tables = _op_table(results)
    for dim, columns in TABLES[1:]:
        tables.update(_table(results, _SOURCES[dim], columns))
    # the facts as a stored part gives them back (JSON), so a block read from disk and
    # one kept in memory assemble into the same dataset (one dict shared by all: once)
    facts = [_json(r.attrs) for r in results] if any(r.attrs is not results[0].attrs for r in results) \
        else [_json(results[0].attrs)] * n
    shared = all(f == facts[0] for f in facts)
    run_attrs = [json.loads(f) for f in (facts[:1] if shared else facts)]
    return RunBlock(point, int(point_index), np.asarray(reps, np.int64).reshape(n), scalars,
                    tables, run_attrs)


# A part is a plain HDF5 file written with h5py: a NetCDF variable (xarray, h5netcdf)
# costs ~10 ms to create, more than its data at these sizes, and a block has ~45 arrays.
_COLUMNS = [c for _, cols in TABLES for c in cols]


def write_hdf5(block: RunBlock, f) -> None:
    """Write the block into an open h5py File (or group)."""
    names = list(block.scalars)
    f["reps"] = block.reps
    f["scalars"] = np.stack([block.scalars[k] for k in names], axis=1) if names else \
        np.zeros((block.reps.size, 0))
    for c in _COLUMNS:
        f[c] = _narrow(block.tables[c])
    f.attrs.update({"point_index": block.point_index, "point": _json(block.point),
                    "run_attrs": _json(block.run_attrs), "variables": _json(names)})


def _narrow(a: np.ndarray) -> np.ndarray:
    """a in the smallest signed integer type that holds it: a part is written and fsynced
    before the sweep goes on, and most columns (run, thread, kind, flags, bytes) fit in
    one to four bytes of their eight; read_hdf5 reads them back as int64."""
    if not a.size:
        return a
    lo, hi = int(a.min()), int(a.max())
    for t in (np.int8, np.int16, np.int32):
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return a.astype(t)
    return a


def read_hdf5(f) -> RunBlock:
    """The block write_hdf5 wrote; ValueError when f does not hold one."""
    missing = {"reps", "scalars", *_COLUMNS} - set(f)
    if missing or not {"point_index", "point", "run_attrs", "variables"} <= set(f.attrs):
        raise ValueError(f"not a block part (missing {sorted(missing) or 'attributes'})")
    reps = np.asarray(f["reps"][()], np.int64)
    values = np.asarray(f["scalars"][()], np.float64)
    scalars = {k: values[:, j] for j, k in enumerate(json.loads(f.attrs["variables"]))}
    tables = {c: np.asarray(f[c][()], np.int64) for c in _COLUMNS}
    return _checked(f.attrs, reps, scalars, tables)


def from_part(part) -> RunBlock:
    """An earlier version's part (a Dataset: one repetition, a `rep` attr, a variable per
    scalar and per column, no `*_run` columns) as a block, so a sweep it began still
    resumes; ValueError when it is not one."""
    if not {"point_index", "point", "rep"} <= set(part.attrs):
        raise ValueError("no point_index, point or rep attribute")
    return _checked(part.attrs, *_one_rep_part(part))


def _checked(attrs, reps, scalars, tables) -> RunBlock:
    facts = json.loads(attrs.get("run_attrs", "{}"))
    run_attrs = [facts] if isinstance(facts, dict) else facts
    runs = [tables[c] for _, cols in TABLES for c in cols if c.endswith("_run")]
    same = [len({tables[c].size for c in cols}) == 1 for _, cols in TABLES]
    if not all(same) or len(run_attrs) not in (1, reps.size) \
            or any(v.shape != reps.shape for v in scalars.values()) \
            or any(r.size and (r.min() < 0 or r.max() >= reps.size) for r in runs):
        raise ValueError("repetitions, scalars and tables do not match")
    return RunBlock(json.loads(attrs["point"]), int(attrs["point_index"]), reps, scalars,
                    tables, run_attrs)


def _one_rep_part(part):
    """(reps, scalars, tables) of an earlier version's part: one repetition."""
    scalars = {k: np.array([float(v)]) for k, v in part.data_vars.items() if v.ndim == 0}
    tables = {}
    for dim, cols in TABLES:
        for c in cols:
            if c in part:
                tables[c] = np.asarray(part[c].values, np.int64)
            elif c.endswith("_run"):
                tables[c] = np.zeros(part.sizes.get(dim, 0), np.int64)
            else:
                raise ValueError(f"no {c} column")
    return np.array([int(part.attrs["rep"])], np.int64), scalars, tables
