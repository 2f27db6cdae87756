"""A result's stored dataset: the run's own per-point values (every repetition of every
scalar variable), without its op, commit and batch records when they would make it large,
and its provenance in attrs. `reduced` is the one function that makes a stored result from
a full run, so anyone can remake it from their own run."""
from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path

from ..data import schema
from ..errors import ConfigError
from ..data.store import load, save
from . import registry

__all__ = ["reduced", "provenance", "add", "dataset", "MAX_FULL_BYTES"]

# a run's own dataset is stored as it is up to this size; above it, reduced
MAX_FULL_BYTES = 1_000_000
_TABLE_DIMS = (schema.OP_DIM, schema.COMMIT_DIM, schema.BATCH_DIM)


def dataset(name: str, folder=None, sim: str | None = None):
    """A stored result's dataset by its name in the registry (data/results/index.toml),
    its measures brought up to this version's (model.remeasure.upgrade). name "sim" is the
    stored result `sim` names (the simulator's counterpart; None: nothing), "" is None."""
    from ..model.remeasure import upgrade
    name = sim if name == "sim" else name
    if not name:
        return None
    return upgrade(load(registry.get(name, folder).path(folder or registry.root())))


def reduced(ds):
    """ds without its per-record tables (op, commit, batch dims and run_id): every
    repetition of every scalar variable stays, so each ratio, CI and count a page quotes
    is computed from it as from the full run. Says so in the `reduced_from` attr."""
    drop = [v for v in ds.variables if set(ds[v].dims) & set(_TABLE_DIMS)] + \
        ([schema.RUN_ID] if schema.RUN_ID in ds else [])
    out = ds.drop_vars(drop)
    out.attrs[schema.ATTR_REDUCED_FROM] = (
        f"abtlab.results.stored.reduced: the run's per-repetition values without its "
        f"{', '.join(d for d in _TABLE_DIMS if d in ds.dims)} records")
    return out


def _git_commit() -> str:
    here = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def _host_minutes(attrs) -> float | None:
    try:
        start = dt.datetime.fromisoformat(str(attrs["start_time"]))
        end = dt.datetime.fromisoformat(str(attrs["end_time"]))
    except (KeyError, ValueError):
        return None
    return round((end - start).total_seconds() / 60, 2)


def provenance(ds, command: str, says: str) -> dict:
    """The attrs a stored result carries beyond its run's own: how to regenerate it and
    what it ran on (a value the run did not record is 'not recorded', never a guess)."""
    a = ds.attrs
    minutes = _host_minutes(a)
    return {
        schema.ATTR_RESULT_COMMAND: command,
        schema.ATTR_RESULT_SAYS: says,
        schema.ATTR_RESULT_COMMIT: str(a.get(schema.ATTR_RESULT_COMMIT) or _git_commit()),
        "seed": a.get("seed", "not recorded"),
        schema.MACHINE: str(a.get(schema.MACHINE, "sim" if a.get("backend") == "sim" else "host")),
        "clock": str(a.get("clock", a.get("freq_mode", "not recorded"))),
        "kernel": str(a.get("kernel", "not recorded")),
        schema.ATTR_HOST_MINUTES: "not recorded" if minutes is None else minutes,
        schema.ATTR_RESULT_DATE: str(a.get("end_time", "not recorded"))[:10],
    }


def add(name: str, source, command: str, says: str, var: str = "throughput", quick: str = "",
        folder=None) -> registry.Result:
    """Register a result from an existing run dataset: store it (reduced when larger
    than MAX_FULL_BYTES) as `<folder>/<name>.nc` with its provenance, and add or replace
    its row in the registry. `command` regenerates it, with `{out}` for its output."""
    folder = Path(folder or registry.root())
    if "{out}" not in command or (quick and "{out}" not in quick):
        raise ConfigError("--command/--quick", command, "a command with {out} where its "
                                 "output path goes, e.g. 'abtlab sweep spec.toml --out {out}'")
    ds = load(source)
    if var not in ds:
        raise ConfigError("--var", var, ", ".join(sorted(map(str, ds.data_vars))))
    big = Path(source).is_dir() or Path(source).stat().st_size > MAX_FULL_BYTES
    out = reduced(ds) if big else ds
    out.attrs.update(provenance(ds, command, says))
    out.attrs[schema.ATTR_SCHEMA_VERSION] = schema.SCHEMA_VERSION
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / f"{name}.nc"
    save(out, dest)
    results = registry.read(folder)
    results[name] = registry.Result(name=name, file=dest.name, command=command, says=says,
                                    var=var, quick=quick)
    registry.write(results, folder)
    return results[name]


def copy_tree(src, dest) -> None:
    """A registry folder copied whole (tests alter a copy, never the stored one)."""
    shutil.copytree(src, dest, dirs_exist_ok=True)
