"""One run's records as labelled pandas DataFrames (`ds.abt.ops(rid, frame=True)`,
`ds.abt.commits(rid, frame=True)`): op names instead of codes, times in ns with their
unit in the column name, and each record's duration. abtlab.data.runs keeps the raw
arrays, which the analyses read."""
from __future__ import annotations

import numpy as np

from ..trace import Flag, Op
from . import runs, schema

__all__ = ["ops_frame", "commits_frame", "OP_NAMES"]

OP_NAMES = {int(op): op.name.lower() for op in Op}     # 2 -> "write"


def _flag_names(flags) -> list[str]:
    return ["|".join(f.name.lower() for f in Flag if int(v) & int(f)) for v in flags]


def ops_frame(ds, run_id):
    """One row per operation: `tid`, `op` (its name: open, write, fsync, ...; an unknown
    code as 'op<N>'), `flags` (names joined by '|': direct, creat, ...), `bytes`,
    `t_start_ns`, `t_end_ns` (the run's clock: CLOCK_MONOTONIC, or the guest's) and
    `duration_ns`, in time order."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    rec = runs.ops(ds, run_id)
    df = pd.DataFrame({
        "tid": rec["tid"],
        "op": pd.Categorical([OP_NAMES.get(int(c), f"op{int(c)}") for c in rec["op"]]),
        "flags": _flag_names(rec["flags"]),
        "bytes": rec["bytes"],
        "t_start_ns": rec["t_start_ns"], "t_end_ns": rec["t_end_ns"],
        "duration_ns": rec["t_end_ns"].astype(np.int64) - rec["t_start_ns"].astype(np.int64)})
    df.attrs = {"run_id": int(run_id), "units": {"bytes": "bytes", "t_start_ns": "ns",
                                                  "t_end_ns": "ns", "duration_ns": "ns"}}
    return df.sort_values("t_start_ns", kind="stable").reset_index(drop=True)


def commits_frame(ds, run_id):
    """One row per journal commit: `tid` (the transaction), `start_ns`, `locking_ns`,
    `flushing_ns`, `logging_ns`, `end_ns` (the times jbd2 enters each phase, on the run's
    clock), `duration_ns` (end - start), `handles` and `blocks`."""
    import pandas as pd          # deferred: see ops_frame
    cols = runs.commits(ds, run_id)
    df = pd.DataFrame({(k if schema.COMMIT_COLUMNS[f"commit_{k}"] != "ns" else f"{k}_ns"): v
                       for k, v in cols.items()})
    if "end_ns" in df and "start_ns" in df:
        df["duration_ns"] = df["end_ns"].astype(np.int64) - df["start_ns"].astype(np.int64)
    df.attrs = {"run_id": int(run_id), "units": {c: "ns" for c in df.columns if c.endswith("_ns")}}
    return df
