"""Run a backend over a grid of factor levels, repetitions interleaved in random order.

Every finished repetition is written atomically to `<out>.parts/` before the next
starts, so a killed sweep resumes (`resume=True`) without re-running or losing a run.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import __version__, store
from .assemble import assemble, result_to_part
from .backends import get as get_backend
from .backends.base import RunContext
from .errors import ConfigError, RunError
from .progress import Progress

__all__ = ["expand", "run", "run_seed"]


def expand(levels: dict) -> list[dict]:
    """Every combination of factor levels, in a stable order."""
    keys = list(levels)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(levels[k] for k in keys))]


def run_seed(base_seed: int, point_index: int, rep: int) -> int:
    """Seed for one repetition: independent of execution order, so runs are reproducible."""
    h = hashlib.sha256(f"{base_seed}:{point_index}:{rep}".encode()).digest()
    return int.from_bytes(h[:4], "little")


def _now():
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def run(backend, levels: dict, reps: int = 3, out=None, seed: int = 0, resume: bool = False,
        quiet: bool = False, shuffle: bool = True, warmup: int = 0, options: dict | None = None,
        attrs: dict | None = None, command: str | None = None):
    """Run every point of levels x reps; return the assembled xarray.Dataset.

    backend: a registry name or Backend instance. levels: factor -> list of levels.
    out: NetCDF path; without it, parts go to a temporary directory that is removed.
    """
    from . import accessor  # noqa: F401  (registers ds.abt)
    be = get_backend(backend) if isinstance(backend, str) else backend
    avail = be.available()
    if not avail:
        raise ConfigError("backend", be.name, f"a backend that can run here ({avail.reason})")
    if not isinstance(reps, int) or reps < 1:
        raise ConfigError("reps", reps, "an integer >= 1")
    levels = {k: list(v) for k, v in levels.items()}
    for k, v in levels.items():
        if not v:
            raise ConfigError(k, v, "at least one level")
    points = [be.validate_point(p) for p in expand(levels)]
    options = dict(options or {})
    tmp_out = None
    if out is None:
        tmp_out = Path(tempfile.mkdtemp(prefix="abtlab-sweep-")) / "run.nc"
        out = tmp_out
    out = Path(out)
    if not resume and store.parts_dir(out).exists():
        raise ConfigError("out", str(out), "a path without unfinished parts (pass resume=True / --resume to continue it)")
    started = _now()
    done = store.read_parts(out) if resume else {}
    todo = [(i, r) for i in range(len(points)) for r in range(reps)
            if store.part_name(i, r) not in done]
    if shuffle:
        np.random.default_rng(seed).shuffle(todo)
    f_ref = max(levels["freq_ghz"]) if "freq_ghz" in levels else None
    prog = Progress(len(todo) + warmup, label=f"{be.name}", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="abtlab-run-") as work:
        for w in range(warmup):  # discarded: first runs pay cold caches and page-ins
            ctx = RunContext(Path(work), rep=-1, seed=run_seed(seed, -1, w), quiet=True,
                             f_ref_ghz=f_ref, options=options)
            be.run_point(points[w % len(points)], ctx)
            prog.step("warm-up (discarded)")
        for i, r in todo:
            ctx = RunContext(Path(work), rep=r, seed=run_seed(seed, i, r), quiet=quiet,
                             f_ref_ghz=f_ref, options=options)
            try:
                result = be.run_point(points[i], ctx)
            except RunError as exc:
                raise RunError(f"{be.name} point {points[i]} rep {r}: {exc}") from exc
            name = store.part_name(i, r)
            part = result_to_part(result, points[i], i, r)
            store.write_part(out, name, part)
            done[name] = part
            prog.step(_short(points[i]))
    from .system.facts import collect
    meta = {**collect(), "backend": be.name, "abtlab_version": __version__, "start_time": started,
            "end_time": _now(), "command": command or " ".join(sys.argv), "reps": reps,
            "seed": seed, **(attrs or {})}
    ds = assemble(list(done.values()), levels, meta)
    if tmp_out is None:
        store.save(ds, out)
        shutil.rmtree(store.parts_dir(out), ignore_errors=True)
    else:
        shutil.rmtree(tmp_out.parent, ignore_errors=True)
    return ds


def _short(point):
    return " ".join(f"{k}={v}" for k, v in point.items())
