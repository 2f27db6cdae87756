"""Turn per-repetition results into one run dataset (dims = factors + rep)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import schema
from ..trace import RECORD_DTYPE

__all__ = ["result_to_part", "assemble", "assemble_results"]

_OP_MAP = {"op_tid": "tid", "op_kind": "op", "op_flags": "flags", "op_bytes": "bytes",
           "op_t_start": "t_start_ns", "op_t_end": "t_end_ns"}


_TABLES = (("commits", schema.COMMIT_DIM, schema.COMMIT_COLUMNS),
           ("batches", schema.BATCH_DIM, schema.BATCH_COLUMNS))


def _result_tables(result) -> dict:
    """A RunResult's trace tables as column -> int64 array (without the *_run columns)."""
    ops = result.ops if result.ops is not None else np.zeros(0, RECORD_DTYPE)
    cols = {col: np.asarray(ops[field]).astype(np.int64) for col, field in _OP_MAP.items()}
    for table, _, columns in _TABLES:
        src = getattr(result, table) or {}
        n = max((len(v) for v in src.values()), default=0)
        for col in columns:
            if col.endswith("_run"):
                continue
            # a column the source does not provide (e.g. a kernel without run_stats) is -1
            cols[col] = np.asarray(src.get(col.split("_", 1)[1], np.full(n, -1)), dtype=np.int64)
    return cols


def result_to_part(result, point: dict, point_index: int, rep: int):
    """One RunResult as a small Dataset (scalars + ragged tables), for the parts store."""
    import xarray as xr
    data = {k: ((), float(v)) for k, v in result.scalars.items()}
    dims = {**{c: schema.OP_DIM for c in schema.OP_COLUMNS},
            **{c: dim for _, dim, cols in _TABLES for c in cols}}
    data.update({c: ((dims[c],), v) for c, v in _result_tables(result).items()})
    attrs = {"point_index": point_index, "rep": rep,
             "point": _json(point), "run_attrs": _json(result.attrs)}
    return xr.Dataset(data, attrs=attrs)


def _json(d):
    import json
    return json.dumps(d, default=str, sort_keys=True)


class _Row(NamedTuple):
    """One run, from a stored part or straight from a RunResult."""
    point: dict
    point_index: int
    rep: int
    scalars: dict
    tables: dict          # column -> array, without the *_run columns
    run_attrs: dict


def _part_row(part) -> _Row:
    import json
    scalars = {k: float(v) for k, v in part.data_vars.items() if v.ndim == 0}
    tables = {c: part[c].values for c in part.data_vars if part[c].ndim == 1}
    return _Row(json.loads(part.attrs["point"]), int(part.attrs["point_index"]),
                int(part.attrs["rep"]), scalars, tables, json.loads(part.attrs["run_attrs"]))


def assemble(parts: list, levels: dict, attrs: dict):
    """Combine part Datasets into the run dataset.

    levels: factor -> list of levels (coordinate order); every part's point maps into it.
    """
    return _build([_part_row(p) for p in parts], levels, attrs)


def assemble_results(runs: list, levels: dict, attrs: dict):
    """The run dataset straight from (point, rep, RunResult) triples, without parts
    (in-memory sweeps such as the simulator's). Run attrs are not merged: `attrs` is final."""
    index = {}
    rows = [_Row(point, index.setdefault(_json(point), len(index)), rep, r.scalars,
                 _result_tables(r), {}) for point, rep, r in runs]
    return _build(rows, levels, attrs)


def _build(rows, levels, attrs):
    import xarray as xr
    dims = list(levels) + [schema.REP]
    nrep = 1 + max((row.rep for row in rows), default=0)
    shape = [len(v) for v in levels.values()] + [nrep]
    names = sorted({k for row in rows for k in row.scalars})
    arrays = {n: np.full(shape, np.nan) for n in names}
    run_id = np.full(shape, -1, dtype=np.int64)
    groups = ((schema.OP_COLUMNS, schema.OP_DIM), (schema.COMMIT_COLUMNS, schema.COMMIT_DIM),
              (schema.BATCH_COLUMNS, schema.BATCH_DIM))
    tables = {c: [] for cols, _ in groups for c in cols}
    run_attrs: dict = {}
    for rid, row in enumerate(sorted(rows, key=lambda r: (r.point_index, r.rep))):
        idx = tuple(_level_index(levels[f], row.point[f]) for f in levels) + (row.rep,)
        run_id[idx] = rid
        for n, v in row.scalars.items():
            arrays[n][idx] = v
        for cols, _ in groups:
            n = len(next((row.tables[c] for c in cols if c in row.tables), ()))
            for c in cols:
                tables[c].append(np.full(n, rid, np.int64) if c.endswith("_run") else row.tables[c])
        for k, v in row.run_attrs.items():
            run_attrs.setdefault(k, [])
            if v not in run_attrs[k]:
                run_attrs[k].append(v)
    data = {}
    for n, arr in arrays.items():
        meta = schema.VARIABLES.get(n)
        data[n] = (dims, arr, {"units": meta.units, "long_name": meta.long_name} if meta else {"units": "1"})
    data[schema.RUN_ID] = (dims, run_id, {"units": "1", "long_name": schema.VARIABLES[schema.RUN_ID].long_name})
    for cols, dim in groups:
        for c, units in cols.items():
            vals = np.concatenate(tables[c]) if tables[c] else np.zeros(0, np.int64)
            data[c] = ((dim,), vals.astype(np.int64), {"units": units})
    # typed levels (a Policy, a Machine) are coordinates by their canonical spec
    coords = {f: [str(x) if hasattr(x, "label") else x for x in v] for f, v in levels.items()}
    coords[schema.REP] = np.arange(nrep)
    # an attr that differs between runs (e.g. filesystem per policy) keeps every value
    merged = {k: v[0] if len(v) == 1 else " | ".join(map(str, v)) for k, v in run_attrs.items()}
    # the sweep's facts describe the host; a run's own (e.g. a guest kernel) wins
    merged = {**attrs, **merged}
    return xr.Dataset(data, coords=coords, attrs=merged)


def _level_index(level_list, value):
    """The level value is at; a typed level matches its canonical spec too (a stored
    part's point holds the spec)."""
    for i, lv in enumerate(level_list):
        if lv == value or (hasattr(lv, "label") and lv.label == str(value)) or \
                (isinstance(lv, float) and np.isclose(lv, float(value))):
            return i
    raise KeyError(f"level {value!r} not in {level_list!r}")
