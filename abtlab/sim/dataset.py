"""Assemble simulated RunResults into one run dataset (schema.py conventions).

A small local assembler for the simulator: factor dims x rep for the scalar measures,
and the ragged op/commit tables on their own dims tagged with run_id."""
from __future__ import annotations

import datetime as _dt
import itertools

import numpy as np

from .. import schema

__all__ = ["assemble_sim_dataset"]


def _now():
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _tables(results, traces):
    ops, com = [], []
    for run, r in enumerate(results):
        if traces and r.ops is not None and r.ops.size:
            ops.append({"op_run": np.full(r.ops.size, run), "op_tid": r.ops["tid"],
                        "op_kind": r.ops["op"], "op_flags": r.ops["flags"],
                        "op_bytes": r.ops["bytes"], "op_t_start": r.ops["t_start_ns"],
                        "op_t_end": r.ops["t_end_ns"]})
        if traces and r.commits is not None and len(r.commits["start"]):
            c = r.commits
            com.append({"commit_run": np.full(len(c["start"]), run),
                        **{f"commit_{k}": np.asarray(c[k]) for k in
                           ("tid", "start", "locking", "flushing", "logging", "end",
                            "handles", "blocks")}})
    return ops, com


def _table_vars(chunks, columns, dim):
    if not chunks:
        return {}
    return {name: ((dim,), np.concatenate([c[name] for c in chunks]), {"units": units})
            for name, units in columns.items()}


def assemble_sim_dataset(levels: dict, reps: int, results: list, command: str,
                         start_time: str, traces: bool = True):
    """levels: factor dim -> list of values (grid order = itertools.product, rep last);
    results: RunResults in that order."""
    import xarray as xr
    dims = list(levels) + [schema.REP]
    shape = [len(v) for v in levels.values()] + [reps]
    names = sorted({k for r in results for k in r.scalars})
    data = {k: np.full(shape, np.nan) for k in names}
    run_id = np.zeros(shape, np.int64)
    for run, idx in enumerate(itertools.product(*[range(s) for s in shape])):
        run_id[idx] = run
        for k, v in results[run].scalars.items():
            data[k][idx] = v
    dvars = {k: (dims, v, {"units": schema.VARIABLES[k].units,
                           "long_name": schema.VARIABLES[k].long_name}) for k, v in data.items()}
    dvars[schema.RUN_ID] = (dims, run_id, {"units": "1"})
    ops, com = _tables(results, traces)
    dvars.update(_table_vars(ops, schema.OP_COLUMNS, schema.OP_DIM))
    dvars.update(_table_vars(com, schema.COMMIT_COLUMNS, schema.COMMIT_DIM))
    coords = {k: list(v) for k, v in levels.items()}
    coords[schema.REP] = np.arange(reps)
    attrs = _attrs(results[0].attrs, levels, command, start_time)
    attrs["filesystem"] = "; ".join(sorted({r.attrs["filesystem"] for r in results}))
    return xr.Dataset(dvars, coords=coords, attrs=attrs)


def _attrs(first, levels, command, start_time):
    import platform
    from .. import __version__
    per_point = {f"sim_{k}" for k in levels} | {"sim_policy", "sim_freq_ghz"}
    attrs = {k: v for k, v in first.items() if k not in per_point}
    attrs.update(kernel=f"simulated (host {platform.release()})",
                 cpu=f"simulated, {first.get('sim_cores', '?')} cores",
                 abtlab_version=__version__, command=command,
                 start_time=start_time, end_time=_now())
    return attrs
