"""delayJC, the LD_PRELOAD group commit around fsync/fdatasync (backends/delayjc).

`preload_env` builds the environment that runs any program under it; `load_batches`
reads the per-batch stats it writes at exit (trace kind BATCHES: one BATCH record
open..close with bytes=members, flags=resets, then one FLUSH record start..end with
bytes=members, or ABT_F_ERROR and bytes=errno). A process forked or exec'd under the
library writes its own batches to `<path>.<pid>`; `load_batches` reads those too.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from .. import about
from .. import policies, trace
from ..errors import ConfigError, TraceError, UnavailableError

__all__ = ["library_path", "preload_env", "load_batches", "summary", "COLUMNS"]

ROOT = about.ROOT
LIBRARY = ROOT / "backends" / "delayjc" / "libdelayjc.so"
# keys of load_batches; all but `error` map to schema.BATCH_COLUMNS batch_<key>
COLUMNS = ("open", "close", "members", "resets", "flush_start", "flush_end", "error", "window_us")


def library_path() -> Path:
    """The built library; UnavailableError says how to build it if it is missing."""
    if not LIBRARY.is_file():
        raise UnavailableError(f"{LIBRARY} is not built: run `make -C {LIBRARY.parents[1]}`")
    return LIBRARY


def preload_env(policy, stats_path=None) -> dict:
    """Environment additions for running a program under delayJC with `policy`
    (a delayjc Policy or spec string); merge into os.environ for a subprocess."""
    pol = policies.parse(policy)
    if not pol.needs_preload:
        raise ConfigError("policy", pol.label, "a delayjc policy (delayjc:window=..., delayjc:adaptive)")
    env = {"LD_PRELOAD": str(library_path()), **pol.preload_env()}
    if stats_path is not None:
        env["ABT_DELAYJC_STATS"] = os.fspath(stats_path)
    return env


def _stats_files(path: Path) -> list[Path]:
    kids = [p for p in path.parent.glob(path.name + ".*") if re.fullmatch(r"\.\d+", p.name[len(path.name):])]
    return [path] + sorted(kids)


def load_batches(path) -> dict:
    """Batch stats as numpy arrays keyed by COLUMNS (ns times; error = errno or 0)."""
    path = Path(path)
    recs = np.concatenate([trace.read(p, kind=trace.Kind.BATCHES) for p in _stats_files(path)])
    batch, flush = recs[recs["op"] == trace.Op.BATCH], recs[recs["op"] == trace.Op.FLUSH]
    if batch.size != flush.size:
        raise TraceError(f"{path}: {batch.size} batch records but {flush.size} flush records")
    failed = (flush["flags"] & trace.Flag.ERROR) != 0
    out = {
        "open": batch["t_start_ns"].astype(np.int64), "close": batch["t_end_ns"].astype(np.int64),
        "members": batch["bytes"].astype(np.int64), "resets": batch["flags"].astype(np.int64),
        "flush_start": flush["t_start_ns"].astype(np.int64),
        "flush_end": flush["t_end_ns"].astype(np.int64),
        "error": np.where(failed, flush["bytes"], 0).astype(np.int64),
        # the batch record's tid field carries the window the batch used, in us
        "window_us": batch["tid"].astype(np.int64),
    }
    # failed flushes store errno in bytes; members then come from the batch record
    order = np.argsort(out["open"], kind="stable")
    return {k: v[order] for k, v in out.items()}


def summary(batches: dict, sync_calls: int | None = None) -> dict:
    """Batches, mean members per batch, flushes vs sync calls (served members when
    `sync_calls` is not given), mean batch hold (close - open) and flush time in ns."""
    n = int(batches["members"].size)
    members = int(batches["members"].sum())
    calls = members if sync_calls is None else int(sync_calls)
    return {
        "batches": n,
        "mean_members": members / n if n else float("nan"),
        "flushes": n,
        "sync_calls": calls,
        "flushes_per_call": n / calls if calls else float("nan"),
        "mean_hold_ns": float(np.mean(batches["close"] - batches["open"])) if n else float("nan"),
        "mean_flush_ns": float(np.mean(batches["flush_end"] - batches["flush_start"])) if n else float("nan"),
        "failed_flushes": int(np.count_nonzero(batches["error"])),
    }
