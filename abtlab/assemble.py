"""Turn per-repetition results into one run dataset (dims = factors + rep)."""
from __future__ import annotations

import numpy as np

from . import schema
from .trace import RECORD_DTYPE

__all__ = ["result_to_part", "assemble"]

_OP_MAP = {"op_tid": "tid", "op_kind": "op", "op_flags": "flags", "op_bytes": "bytes",
           "op_t_start": "t_start_ns", "op_t_end": "t_end_ns"}


def result_to_part(result, point: dict, point_index: int, rep: int):
    """One RunResult as a small Dataset (scalars + ragged tables), for the parts store."""
    import xarray as xr
    data = {k: ((), float(v)) for k, v in result.scalars.items()}
    ops = result.ops if result.ops is not None else np.zeros(0, RECORD_DTYPE)
    for col, field in _OP_MAP.items():
        data[col] = ((schema.OP_DIM,), np.asarray(ops[field]).astype(np.int64))
    for table, dim, columns in (("commits", schema.COMMIT_DIM, schema.COMMIT_COLUMNS),
                                ("batches", schema.BATCH_DIM, schema.BATCH_COLUMNS)):
        src = getattr(result, table) or {}
        n = max((len(v) for v in src.values()), default=0)
        for col in columns:
            if col.endswith("_run"):
                continue
            key = col.split("_", 1)[1]
            # a column the source does not provide (e.g. a kernel without run_stats) is -1
            data[col] = ((dim,), np.asarray(src.get(key, np.full(n, -1)), dtype=np.int64))
    attrs = {"point_index": point_index, "rep": rep,
             "point": _json(point), "run_attrs": _json(result.attrs)}
    return xr.Dataset(data, attrs=attrs)


def _json(d):
    import json
    return json.dumps(d, default=str, sort_keys=True)


def assemble(parts: list, levels: dict, attrs: dict):
    """Combine part Datasets into the run dataset.

    levels: factor -> list of levels (coordinate order); every part's point maps into it.
    """
    import json

    import xarray as xr
    dims = list(levels) + [schema.REP]
    nrep = 1 + max((int(p.attrs["rep"]) for p in parts), default=0)
    shape = [len(v) for v in levels.values()] + [nrep]
    names = sorted({k for p in parts for k, v in p.data_vars.items() if v.ndim == 0})
    arrays = {n: np.full(shape, np.nan) for n in names}
    run_id = np.full(shape, -1, dtype=np.int64)
    tables = {c: [] for c in (*schema.OP_COLUMNS, *schema.COMMIT_COLUMNS, *schema.BATCH_COLUMNS)}
    run_attrs: dict = {}
    parts = sorted(parts, key=lambda p: (int(p.attrs["point_index"]), int(p.attrs["rep"])))
    for rid, part in enumerate(parts):
        point = json.loads(part.attrs["point"])
        idx = tuple(_level_index(levels[f], point[f]) for f in levels) + (int(part.attrs["rep"]),)
        run_id[idx] = rid
        for n in names:
            if n in part:
                arrays[n][idx] = float(part[n])
        for cols, dim in ((schema.OP_COLUMNS, schema.OP_DIM), (schema.COMMIT_COLUMNS, schema.COMMIT_DIM),
                          (schema.BATCH_COLUMNS, schema.BATCH_DIM)):
            n = part.sizes.get(dim, 0)
            for c in cols:
                tables[c].append(np.full(n, rid, np.int64) if c.endswith("_run") else part[c].values)
        for k, v in json.loads(part.attrs["run_attrs"]).items():
            run_attrs.setdefault(k, [])
            if v not in run_attrs[k]:
                run_attrs[k].append(v)
    data = {}
    for n, arr in arrays.items():
        meta = schema.VARIABLES.get(n)
        data[n] = (dims, arr, {"units": meta.units, "long_name": meta.long_name} if meta else {"units": "1"})
    data[schema.RUN_ID] = (dims, run_id, {"units": "1", "long_name": schema.VARIABLES[schema.RUN_ID].long_name})
    for cols, dim in ((schema.OP_COLUMNS, schema.OP_DIM), (schema.COMMIT_COLUMNS, schema.COMMIT_DIM),
                      (schema.BATCH_COLUMNS, schema.BATCH_DIM)):
        for c, units in cols.items():
            vals = np.concatenate(tables[c]) if tables[c] else np.zeros(0, np.int64)
            data[c] = ((dim,), vals.astype(np.int64), {"units": units})
    coords = {f: list(v) for f, v in levels.items()}
    coords[schema.REP] = np.arange(nrep)
    # an attr that differs between runs (e.g. filesystem per policy) keeps every value
    merged = {k: v[0] if len(v) == 1 else " | ".join(map(str, v)) for k, v in run_attrs.items()}
    # the sweep's facts describe the host; a run's own (e.g. a guest kernel) wins
    merged = {**attrs, **merged}
    return xr.Dataset(data, coords=coords, attrs=merged)


def _level_index(level_list, value):
    for i, lv in enumerate(level_list):
        if lv == value or (isinstance(lv, float) and np.isclose(lv, float(value))):
            return i
    raise KeyError(f"level {value!r} not in {level_list!r}")
