"""Turn blocks of repetitions into one run dataset (dims = factors + rep)."""
from __future__ import annotations

import json

import numpy as np

from . import schema
from .arrays import RunArrays
from .block import TABLES, RunBlock, from_part, from_results

__all__ = ["result_to_part", "assemble", "assemble_arrays", "assemble_results"]


def result_to_part(result, point: dict, point_index: int, rep: int) -> RunBlock:
    """One RunResult as the one-repetition block the parts store keeps."""
    return from_results([result], point, point_index, [rep])


def assemble(parts: list, levels: dict, attrs: dict):
    """Combine RunBlocks (or an earlier version's stored parts, Datasets) into the run dataset.

    levels: factor -> list of levels (coordinate order); every part's point maps into it.
    """
    return assemble_arrays(parts, levels, attrs).to_dataset()


def assemble_arrays(parts: list, levels: dict, attrs: dict) -> RunArrays:
    """assemble's dataset as RunArrays: its arrays, without xarray."""
    blocks = [p if isinstance(p, RunBlock) else from_part(p) for p in parts]
    return _build(blocks, levels, attrs, merge_attrs=True)


def assemble_results(runs: list, levels: dict, attrs: dict):
    """The run dataset straight from (point, rep, RunResult) triples, without parts
    (in-memory sweeps such as the simulator's). Run attrs are not merged: `attrs` is final."""
    index: dict = {}
    blocks = [from_results([r], point, index.setdefault(_key(point), len(index)), [rep])
              for point, rep, r in runs]
    return _build(blocks, levels, attrs, merge_attrs=False).to_dataset()


def _key(point) -> str:
    return json.dumps(point, default=str, sort_keys=True)


def _run_ids(blocks) -> list:
    """Each block's run ids: a run's rank by (point index, repetition), the order its
    records take in the tables."""
    index = np.concatenate([np.full(b.reps.size, b.point_index, np.int64) for b in blocks])
    reps = np.concatenate([b.reps for b in blocks])
    rid = np.empty(reps.size, np.int64)
    rid[np.lexsort((reps, index))] = np.arange(reps.size)
    return np.split(rid, np.cumsum([b.reps.size for b in blocks])[:-1])


def _tables(blocks, ids) -> dict:
    """Every table column over all blocks, `*_run` as run ids, records ordered by run."""
    out = {}
    for _, cols in TABLES:
        run_col = next(c for c in cols if c.endswith("_run"))
        merged = {c: np.concatenate([rid[b.tables[c]] if c == run_col else b.tables[c]
                                     for b, rid in zip(blocks, ids)] or [np.zeros(0, np.int64)])
                  for c in cols}
        run = merged[run_col]
        if np.any(run[1:] < run[:-1]):     # blocks of one point that interleave their reps
            order = np.argsort(run, kind="stable")
            merged = {c: v[order] for c, v in merged.items()}
        out.update({c: v.astype(schema.table_dtype(c), copy=False) for c, v in merged.items()})
    return out


def _merged_attrs(blocks, ids) -> dict:
    """Run facts in run order; a fact that differs between runs keeps every value."""
    facts = sorted(((int(rid.min() if len(b.run_attrs) == 1 else rid[k]), a)
                    for b, rid in zip(blocks, ids) for k, a in enumerate(b.run_attrs)),
                   key=lambda p: p[0])
    values: dict = {}
    for _, a in facts:
        for k, v in a.items():
            seen = values.setdefault(k, [])
            if v not in seen:
                seen.append(v)
    return {k: v[0] if len(v) == 1 else " | ".join(map(str, v)) for k, v in values.items()}


def _build(blocks, levels, attrs, merge_attrs) -> RunArrays:
    dims = list(levels) + [schema.REP]
    ids = _run_ids(blocks) if blocks else []
    nrep = 1 + max((int(b.reps.max()) for b in blocks if b.reps.size), default=0)
    shape = [len(v) for v in levels.values()] + [nrep]
    names = sorted({k for b in blocks for k in b.scalars})
    arrays = {n: np.full(shape, np.nan) for n in names}
    run_id = np.full(shape, -1, dtype=np.int64)
    for b, rid in zip(blocks, ids):
        cell = tuple(_level_index(levels[f], b.point[f]) for f in levels) + (b.reps,)
        run_id[cell] = rid
        for n, v in b.scalars.items():
            arrays[n][cell] = v
    data = {}
    for n, arr in arrays.items():
        meta = schema.VARIABLES.get(n)
        data[n] = (dims, arr, {"units": meta.units, "long_name": meta.long_name} if meta else {"units": "1"})
    data[schema.RUN_ID] = (dims, run_id, {"units": "1", "long_name": schema.VARIABLES[schema.RUN_ID].long_name})
    tables = _tables(blocks, ids)
    for dim, cols in TABLES:
        for c, units in cols.items():
            data[c] = ((dim,), tables[c], {"units": units})
    # typed levels (a Policy, a Machine) are coordinates by their canonical spec
    coords = {f: [str(x) if hasattr(x, "label") else x for x in v] for f, v in levels.items()}
    coords[schema.REP] = np.arange(nrep)
    # the sweep's facts describe the host; a run's own (e.g. a guest kernel) wins
    merged = {**attrs, **_merged_attrs(blocks, ids)} if merge_attrs else dict(attrs)
    return RunArrays(data, coords, merged)


def _level_index(level_list, value):
    """The level value is at; a typed level matches its canonical spec too (a stored
    part's point holds the spec)."""
    for i, lv in enumerate(level_list):
        if lv == value or (hasattr(lv, "label") and lv.label == str(value)) or \
                (isinstance(lv, float) and np.isclose(lv, float(value))):
            return i
    raise KeyError(f"level {value!r} not in {level_list!r}")
