"""A point's repetitions as one block of arrays: what a sweep keeps, stores as a part
and assembles into the run dataset (abtlab.data.assemble).

A block holds one point (its index in the sweep) and some of its repetitions: each
repetition's scalars, and the op, commit and batch tables of all of them concatenated,
each record's `*_run` column giving its repetition's position in the block. Runs that
cost milliseconds (a model's) are kept a group to a block, and stored as one part, so
no repetition pays for a Dataset or a file of its own; other runs are a block each.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from . import schema
from ..trace import RECORD_DTYPE

__all__ = ["RunBlock", "from_results", "to_part", "from_part", "TABLES"]

TABLES = ((schema.OP_DIM, schema.OP_COLUMNS), (schema.COMMIT_DIM, schema.COMMIT_COLUMNS),
          (schema.BATCH_DIM, schema.BATCH_COLUMNS))
_OP_FIELDS = {"op_tid": "tid", "op_kind": "op", "op_flags": "flags", "op_bytes": "bytes",
              "op_t_start": "t_start_ns", "op_t_end": "t_end_ns"}
_SOURCES = {schema.COMMIT_DIM: "commits", schema.BATCH_DIM: "batches"}


@dataclass
class RunBlock:
    """Repetitions `reps` of the point `point` (index `point_index` in its sweep).

    scalars: variable -> float64 array, one value per repetition (NaN: not measured).
    tables: every column of schema's op, commit and batch tables -> int64 array; a
    `*_run` column holds the position in `reps` of the repetition a record belongs to.
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
    out = {"op_run": np.repeat(np.arange(len(results), dtype=np.int64), sizes)}
    for col, field in _OP_FIELDS.items():
        out[col] = _concat([np.asarray(o[field]).astype(np.int64, copy=False) for o in ops])
    return out


def _concat(arrays) -> np.ndarray:
    return arrays[0].astype(np.int64, copy=True) if len(arrays) == 1 else \
        np.concatenate(arrays).astype(np.int64, copy=False)


def from_results(results: list, point: dict, point_index: int, reps) -> RunBlock:
    """The block of RunResults `results`, repetitions `reps` (same order) of one point."""
    n = len(results)
    scalars: dict = {}
    for k, r in enumerate(results):
        for name, v in r.scalars.items():
            scalars.setdefault(name, np.full(n, np.nan))[k] = float(v)
    tables = _op_table(results)
    for dim, columns in TABLES[1:]:
        tables.update(_table(results, _SOURCES[dim], columns))
    # the facts as a stored part gives them back (JSON), so a block read from disk and
    # one kept in memory assemble into the same dataset
    facts = [_json(r.attrs) for r in results]
    shared = all(f == facts[0] for f in facts)
    run_attrs = [json.loads(f) for f in (facts[:1] if shared else facts)]
    return RunBlock(point, int(point_index), np.asarray(reps, np.int64).reshape(n), scalars,
                    tables, run_attrs)


# A part is three HDF5 variables: the scalars (rep x variable), the repetitions, and
# every table column one after the other in one int64 array. Writing an HDF5 variable
# costs more than its data at these sizes (~10 ms each), and a block has forty columns.
_SCALARS, _RECORDS, _COLUMNS = "scalars", "records", [c for _, cols in TABLES for c in cols]


def to_part(block: RunBlock):
    """The block as a Dataset to store (one NetCDF part)."""
    import xarray as xr
    names = list(block.scalars)
    values = np.stack([block.scalars[k] for k in names], axis=1) if names else \
        np.zeros((block.reps.size, 0))
    sizes = {dim: int(block.tables[next(iter(cols))].size) for dim, cols in TABLES}
    data = {_SCALARS: ((schema.REP, "variable"), values),
            _RECORDS: (("record",), np.concatenate([block.tables[c] for c in _COLUMNS]))}
    attrs = {"point_index": block.point_index, "point": _json(block.point),
             "run_attrs": _json(block.run_attrs), "variables": _json(names),
             "columns": _json(_COLUMNS), "table_sizes": _json(sizes)}
    return xr.Dataset(data, coords={schema.REP: block.reps}, attrs=attrs)


def from_part(part) -> RunBlock:
    """A stored part back as a block; ValueError when it is not one.

    Also reads the one-repetition parts of earlier versions (a `rep` attr, a variable
    per scalar and per column), so a sweep they began still resumes."""
    attrs = part.attrs
    if "point_index" not in attrs or "point" not in attrs:
        raise ValueError("no point_index or point attribute")
    if _RECORDS in part:
        reps, scalars, tables = _block_part(part)
    else:
        reps, scalars, tables = _one_rep_part(part)
    facts = json.loads(attrs.get("run_attrs", "{}"))
    run_attrs = [facts] if isinstance(facts, dict) else facts
    runs = [tables[c] for _, cols in TABLES for c in cols if c.endswith("_run")]
    if any(v.shape != reps.shape for v in scalars.values()) or len(run_attrs) not in (1, reps.size) \
            or any(r.size and (r.min() < 0 or r.max() >= reps.size) for r in runs):
        raise ValueError("repetitions, scalars and tables do not match")
    return RunBlock(json.loads(attrs["point"]), int(attrs["point_index"]), reps, scalars,
                    tables, run_attrs)


def _block_part(part):
    """(reps, scalars, tables) of a part written by to_part."""
    if json.loads(part.attrs["columns"]) != _COLUMNS:
        raise ValueError("table columns of another version")
    sizes = json.loads(part.attrs["table_sizes"])
    records = np.asarray(part[_RECORDS].values, np.int64)
    if records.size != sum(sizes[dim] * len(cols) for dim, cols in TABLES):
        raise ValueError(f"{records.size} records, not the table sizes {sizes}")
    tables, at = {}, 0
    for dim, cols in TABLES:
        for c in cols:
            tables[c] = records[at:at + sizes[dim]]
            at += sizes[dim]
    values = np.asarray(part[_SCALARS].values, np.float64)
    scalars = {k: values[:, j] for j, k in enumerate(json.loads(part.attrs["variables"]))}
    return np.asarray(part[schema.REP].values, np.int64), scalars, tables


def _one_rep_part(part):
    """(reps, scalars, tables) of an earlier version's part: one repetition."""
    if "rep" not in part.attrs:
        raise ValueError("no rep attribute")
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
