"""Pool run datasets of one design along `rep`: more repetitions of the same points
from several sweeps (other seeds, other sittings), as one dataset that every analysis
reads like a single sweep's.

The sources share their factors, but not necessarily every level: a grid that wants more
repetitions at its ends than between them, or a cell's failed runs run again at that cell
only, are sweeps over some of the levels. The merged levels are the union (see `_union`);
a run that a source did not have is missing there exactly as a failed run is (NaN, run id
-1), so every analysis counts n per point from the runs that exist.

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
# the design: a dataset made otherwise measures something else. An emulated frequency is
# relative to its sweep's highest level (f_ref_ghz): two sweeps' levels compare only when
# their f_ref agree (absent, as in every other freq_mode, is equal)
_SAME = ("backend", "freq_mode", "f_ref_ghz")


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
        if sorted(_factors(ds)) != sorted(dims):
            raise ConfigError("datasets", f"{name}: factors {_plain(_factors(ds))}",
                              f"the factors of {names[0]}: {_plain(dims)}")
        for key in _SAME:
            if ds.attrs.get(key) != first.attrs.get(key):
                raise ConfigError("datasets", f"{name}: {key} = {_plain([ds.attrs.get(key)])}",
                                  f"{key} = {_plain([first.attrs.get(key)])}, as in {names[0]}")
    return dims


def _numeric(values) -> bool:
    return np.asarray(values).dtype.kind in "iuf"


def _union(datasets, dim) -> np.ndarray:
    """The merged levels of dim: the first dataset's levels in its order, then each new
    level as the sources bring it; a numeric factor whose first levels ascend (freq_ghz
    as sweeps list it: 1.6, 2.0, ... 3.3) stays ascending. Float levels within rounding
    of one another (2.4 and 2.4000000000000004) are one level."""
    levels = list(datasets[0][dim].values)
    for ds in datasets[1:]:
        for v in ds[dim].values:
            if not any(_same_level(v, u) for u in levels):
                levels.append(v)
    first = np.asarray(datasets[0][dim].values)
    if _numeric(first) and np.all(np.diff(first) > 0):
        levels = sorted(levels)
    return np.asarray(levels)       # strings as wide as the longest level


def _same_level(a, b) -> bool:
    if _numeric([a]) and _numeric([b]):
        return bool(np.isclose(float(a), float(b), rtol=1e-9, atol=0))
    return a == b


def _on_levels(runs, union: dict):
    """runs (one source's per-run variables) on the merged levels: its float levels named
    as the union names them, and every run it lacks missing (NaN; run_id NaN until the
    merge makes it -1)."""
    named = {d: [next(u for u in union[d] if _same_level(v, u)) for v in runs[d].values]
             for d in union}
    return runs.assign_coords(named).reindex(union)


def _levels_attr(datasets, names, union) -> str:
    """Which levels each source had, for the factors where some source lacks some of the
    merged levels ('' when every source has them all): 'a.nc: freq_ghz (1.6, 3.3); ...'."""
    short = [d for d in union if any(ds.sizes[d] != len(union[d]) for ds in datasets)]
    return "; ".join(f"{n}: " + ", ".join(f"{d} ({_plain(ds[d].values)})" for d in short)
                     for ds, n in zip(datasets, names)) if short else ""


def _attrs(datasets, names) -> dict:
    out = {}
    for key in dict.fromkeys(k for ds in datasets for k in ds.attrs):
        values = list(dict.fromkeys(str(ds.attrs[key]) for ds in datasets if key in ds.attrs))
        out[key] = datasets[0].attrs[key] if len(values) == 1 and key in datasets[0].attrs \
            else " | ".join(values)
    # one failed run a line, as a sweep writes them, each saying which source it is from
    # (its `rep k` counts that source's repetitions)
    failed = [f"{n}: {line}" for ds, n in zip(datasets, names)
              for line in str(ds.attrs.get(schema.FAILED_RUNS, "")).splitlines() if line.strip()]
    if failed:
        out[schema.FAILED_RUNS] = "\n".join(failed)
    out[schema.MERGED_FROM] = "; ".join(
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
    then the second's, ...). datasets must share their factors, backend and freq_mode (and
    an emulated sweep's f_ref_ghz); ConfigError names what differs. Their levels may
    differ: the merged levels are their union (`_union`), a run a source lacks is missing
    (NaN, run_id -1) as a failed run is, and the attr merged_levels says which levels each
    source had. names label the sources in the attrs (default: their order). Datasets that
    are not independent (`duplicates`: identical run records, or the same seed and
    configuration) are refused, saying why; keep_duplicates merges them and names them in
    the attr `duplicates`, so that no analysis takes them for independent repetitions
    unawares."""
    names = [str(n) for n in (names or [f"dataset {i}" for i in range(len(datasets))])]
    dims = _check(datasets, names)
    repeated = duplicates(datasets, names)
    if repeated and not keep_duplicates:
        raise ConfigError("runs", "; ".join(repeated), "independent datasets (other seeds or "
                          "other sittings): merging these would count the same runs twice as "
                          "independent repetitions (--keep-duplicates merges them, marked)")
    union = {d: _union(datasets, d) for d in dims}
    per_run, tables = _renumbered(datasets, dims, union)
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
    levels = _levels_attr(datasets, names, union)
    if levels:
        merged.attrs[schema.MERGED_LEVELS] = levels
    if schema.FREQ in levels and merged.attrs.get("order") == "blocked":
        # a blocked sweep pairs runs by rep across frequencies; a source without the
        # reference frequency has no pairs, so the pooled runs are compared unpaired
        merged.attrs["order"] = "blocked in each source (pooled unpaired: their frequencies differ)"
    if repeated:
        merged.attrs[schema.MERGED_DUPLICATES] = "; ".join(repeated)
    return merged


def _renumbered(datasets, dims, union):
    """Each source's per-run variables on the merged levels, and its op, commit and batch
    tables, with run ids made unique across the sources."""
    per_run, tables, offset = [], {dim: [] for dim, _ in _TABLES}, 0
    for ds in datasets:
        runs = ds[[v for v in ds.data_vars if set(ds[v].dims) == {*dims, schema.REP}]]
        rid = runs[schema.RUN_ID]
        runs[schema.RUN_ID] = rid.where(rid < 0, rid + offset)
        runs = _on_levels(runs.transpose(*dims, schema.REP), union)
        per_run.append(runs.drop_vars(schema.REP))
        for dim, cols in _TABLES:
            tables[dim].append({c: ds[c].values + (offset if c.endswith("_run") else 0)
                                for c in cols if c in ds})
        # past every id the source uses: a selection (ds.sel) keeps records of runs it dropped
        used = [int(rid.max())] if rid.size else []
        used += [int(ds[c].max()) for _, cols in _TABLES for c in cols
                 if c.endswith("_run") and c in ds and ds[c].size]
        offset += max(used, default=-1) + 1
    return per_run, tables
