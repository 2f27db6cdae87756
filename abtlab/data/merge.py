"""Pool run datasets of one design along `rep`: more repetitions of the same points
from several sweeps (other seeds, other sittings), as one dataset that every analysis
reads like a single sweep's.

The op, commit and batch tables follow their runs (each `*_run` column and `run_id`
is renumbered), and what differs between the sources stays visible: an attr that is
not the same in all of them keeps every value (" | "), and `merged_from` lists each
source with its command and seed."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ..errors import ConfigError
from . import schema

__all__ = ["merge_reps", "duplicates"]

_TABLES = ((schema.OP_DIM, schema.OP_COLUMNS), (schema.COMMIT_DIM, schema.COMMIT_COLUMNS),
           (schema.BATCH_DIM, schema.BATCH_COLUMNS))
# the design: a dataset made otherwise measures something else
_SAME = ("backend", "freq_mode")


def _factors(ds) -> list:
    if schema.RUN_ID not in ds:
        raise ConfigError("datasets", "a dataset without run_id", "run datasets of abtlab")
    return [d for d in ds[schema.RUN_ID].dims if d != schema.REP]


def _plain(values) -> str:
    """Levels as the user wrote them ('ext4, nojc'), not as numpy reprs (np.str_('ext4'))."""
    return ", ".join(str(v.item() if isinstance(v, np.generic) else v) for v in values)


def _check(datasets, names):
    if len(datasets) < 2:
        raise ConfigError("datasets", len(datasets), "two or more run datasets")
    first, dims = datasets[0], _factors(datasets[0])
    for ds, name in zip(datasets[1:], names[1:]):
        if _factors(ds) != dims:
            raise ConfigError("datasets", f"{name}: factors {_plain(_factors(ds))}",
                              f"the factors of {names[0]}: {_plain(dims)}")
        for d in dims:
            if ds[d].values.tolist() != first[d].values.tolist():
                raise ConfigError("datasets", f"{name}: {d} = {_plain(ds[d].values)}",
                                  f"the levels of {names[0]}: {_plain(first[d].values)}")
        for key in _SAME:
            if ds.attrs.get(key) != first.attrs.get(key):
                raise ConfigError("datasets", f"{name}: {key} = {_plain([ds.attrs.get(key)])}",
                                  f"{key} = {_plain([first.attrs.get(key)])}, as in {names[0]}")
    return dims


def _attrs(datasets, names) -> dict:
    out = {}
    for key in dict.fromkeys(k for ds in datasets for k in ds.attrs):
        values = list(dict.fromkeys(str(ds.attrs[key]) for ds in datasets if key in ds.attrs))
        out[key] = datasets[0].attrs[key] if len(values) == 1 and key in datasets[0].attrs \
            else " | ".join(values)
    out["merged_from"] = "; ".join(
        f"{n} (reps {ds.sizes[schema.REP]}, seed {ds.attrs.get('seed', '?')}: "
        f"{ds.attrs.get('command', '?')})" for ds, n in zip(datasets, names))
    return out


def _run_rows(ds, dims) -> list:
    """Each finished run's record (every per-run number but its run id) as bytes."""
    names = [v for v in ds.data_vars if set(ds[v].dims) == {*dims, schema.REP}
             and v != schema.RUN_ID and ds[v].dtype.kind in "iufb"]
    if not names:
        return []
    rows = np.stack([ds[v].transpose(*dims, schema.REP).values.astype(float).ravel()
                     for v in sorted(names)], axis=1)
    return [r.tobytes() for r in rows if np.isfinite(r).any()]


def duplicates(datasets, names) -> list[str]:
    """Why some of datasets are not independent of the others: one line per pair whose
    runs have identical records (the same file twice, a copy, a simulated sweep run again
    with its seed) or that ran with the same seed and configuration (sweep spec)."""
    dims = _factors(datasets[0])
    rows = [_run_rows(ds, dims) for ds in datasets]
    found = []
    for j in range(1, len(datasets)):
        for i in range(j):
            earlier = set(rows[i])
            same = sum(r in earlier for r in rows[j])
            a, b = datasets[i].attrs, datasets[j].attrs
            if same:
                found.append(f"{names[j]} repeats {same} run record{'s' * (same != 1)} of "
                             f"{names[i]} exactly")
            elif a.get(schema.SWEEP_SPEC) and a.get(schema.SWEEP_SPEC) == b.get(schema.SWEEP_SPEC) \
                    and str(a.get("seed")) == str(b.get("seed")):
                found.append(f"{names[j]} ran with the seed ({a.get('seed')}) and configuration "
                             f"of {names[i]}")
    return found


def merge_reps(datasets: list, names: list | None = None, keep_duplicates: bool = False):
    """One dataset with the repetitions of every dataset in order (rep 0.. of the first,
    then the second's, ...). datasets must share factors, levels, backend and freq_mode
    (ConfigError naming what differs); names label them in `merged_from` (default: their
    order). Datasets that are not independent (`duplicates`: identical run records, or
    the same seed and configuration) are refused, saying why; keep_duplicates merges them
    and names them in the attr `duplicates`, so that no analysis takes them for
    independent repetitions unawares."""
    names = [str(n) for n in (names or [f"dataset {i}" for i in range(len(datasets))])]
    dims = _check(datasets, names)
    repeated = duplicates(datasets, names)
    if repeated and not keep_duplicates:
        raise ConfigError("runs", "; ".join(repeated), "independent datasets (other seeds or "
                          "other sittings): merging these would count the same runs twice as "
                          "independent repetitions (--keep-duplicates merges them, marked)")
    per_run, tables, offset = [], {dim: [] for dim, _ in _TABLES}, 0
    for ds in datasets:
        runs = ds[[v for v in ds.data_vars if set(ds[v].dims) == {*dims, schema.REP}]]
        rid = runs[schema.RUN_ID]
        runs[schema.RUN_ID] = rid.where(rid < 0, rid + offset)
        per_run.append(runs.drop_vars(schema.REP))
        for dim, cols in _TABLES:
            tables[dim].append({c: ds[c].values + (offset if c.endswith("_run") else 0)
                                for c in cols if c in ds})
        # past every id the source uses: a selection (ds.sel) keeps records of runs it dropped
        used = [int(rid.max())] if rid.size else []
        used += [int(ds[c].max()) for _, cols in _TABLES for c in cols
                 if c.endswith("_run") and c in ds and ds[c].size]
        offset += max(used, default=-1) + 1
    merged = xr.concat(per_run, dim=schema.REP, join="exact", data_vars="all",
                       combine_attrs="override")
    merged[schema.RUN_ID] = merged[schema.RUN_ID].fillna(-1).astype(np.int64)
    merged = merged.assign_coords({schema.REP: np.arange(merged.sizes[schema.REP])})
    for dim, cols in _TABLES:
        for c, units in cols.items():
            parts = [t[c] for t in tables[dim] if c in t]
            if parts:
                merged[c] = ((dim,), np.concatenate(parts).astype(np.int64), {"units": units})
    merged.attrs = _attrs(datasets, names)
    if repeated:
        merged.attrs["duplicates"] = "; ".join(repeated)
    return merged
