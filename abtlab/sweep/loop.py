"""Run a backend over a grid of factor levels, repetitions interleaved in random order.

Every finished repetition is written atomically to `<out>.parts/` before the next
starts, so a killed sweep resumes (`resume=True`) without re-running or losing a run.
A simulated backend's runs cost milliseconds and do not depend on their order: a point's
repetitions run back to back as one group, kept as one part, not fsynced (a part a
crash of the machine tears is found on resume and its runs repeated), and written only
once the sweep has run for a second (abtlab.sweep.parts).
Repetitions are fixed (`reps=5`) or adaptive (`reps=Reps(min=3, max=50, target=0.05)`):
a point gets more runs only while the CI half-width of its mean (or of its slowdown
ratio against the lowest frequency) is wider than the target.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from ..about import __version__
from ..data import space, store
from ..data.arrays import RunArrays
from ..data.schema import FAILED_RUNS, SWEEP_SPEC, timestamp
from ..data.assemble import assemble_arrays
from ..backends import get as get_backend
from ..errors import ConfigError, DiskFullError, RunError
from ..factors.typed import typed_levels
from ..system import cleanup
from ..system.facts import collect
from ..system import quietness
from ..system.runlock import MachineLock, OutputLock
from .executor import Task, make_executor
from .plan import ORDERS, SEEDS, SETTINGS, Execution, Output, RunSettings, Sweep, expand
from .parts import Parts
from .reps import Reps, config_of, more_reps
from ..progress import Progress

__all__ = ["expand", "run", "run_seed", "Reps", "ORDERS"]



def run_seed(base_seed: int, point_index: int, rep: int, seeds: str = "per_run") -> int:
    """Seed for one repetition: independent of execution order, so runs are reproducible.
    seeds="common": repetition r of every point uses base_seed + r (common random numbers:
    the simulator's points then differ by their parameters only)."""
    if seeds == "common":
        return base_seed + rep
    h = hashlib.sha256(f"{base_seed}:{point_index}:{rep}".encode()).digest()
    return int.from_bytes(h[:4], "little")


# run options that are on/off: a string such as "false" or "maybe" is refused, not taken as true
BOOL_OPTIONS = ("fsync", "direct", "processes")


def _check(be, reps, levels, options):
    avail = be.available_for(levels)    # where the points run is the backend's answer
    if not avail:
        raise ConfigError("backend", be.name, f"a backend that can run here ({avail.reason})")
    if not isinstance(reps, Reps) and not (isinstance(reps, int) and not isinstance(reps, bool)
                                           and reps >= 1):
        raise ConfigError("reps", reps, "an integer >= 1 or a Reps rule")
    if not levels:
        raise ConfigError("factors", levels, "at least one factor with its levels")
    for k, v in levels.items():
        if not v:
            raise ConfigError(k, v, "at least one level")
    for k in BOOL_OPTIONS:
        if k in options and not isinstance(options[k], (bool, np.bool_)):
            raise ConfigError(k, options[k], "true or false (a boolean, not a string)")
    be.check_levels(levels)   # e.g. each guest kernel buildable here


def run(backend, levels: dict, reps=3, out=None, **settings):
    """Run every point of levels x reps; return the assembled xarray.Dataset (with
    dataset=False, where it was written without xarray, its RunArrays instead).

    backend: a registry name or Backend instance. levels: factor -> list of levels.
    reps: an int (fixed) or a Reps rule (adaptive). out: NetCDF path; without it, parts
    stay in memory (nothing to resume). settings (abtlab.sweep.plan.SETTINGS, with their
    defaults): seed, seeds, order, warmup, options, attrs, command, freq_mode, quiet,
    resume, force, dataset, scheduler, workers, wait, keep_going.
    seeds: "per_run" (a hash of seed, point and repetition) or "common" (run_seed). An
    existing dataset at out is never replaced without resume (which first checks the
    stored spec against this call) or force. order: "random" (points and repetitions
    interleaved at random), "blocked" (repetition r of one configuration runs at every
    frequency back to back, in random order, blocks in random order: slowdown ratios are
    then paired and drift between blocks cancels) or "sequential"; a simulated backend
    runs a point's repetitions together whatever the order, which cannot change a model's
    values. scheduler: None/"serial", "local" (a dask LocalCluster of `workers`), a
    scheduler address or a dask Client. A run on real devices holds the machine
    (`system.runlock`): it waits for another, or with wait=False fails at once.
    keep_going: a run that fails (RunError: a guest's check, a tool's exit) leaves its
    repetition missing (NaN, run id -1) and the sweep goes on; the dataset lists each in
    its attr `failed_runs`, and a sweep where every run failed raises the first error.
    Without it the first failure stops the sweep, its finished runs kept for --resume.
    """
    plan = _plan(backend, levels, reps, out, settings)
    out = plan.output.path
    with contextlib.ExitStack() as held:
        if out is not None:
            held.enter_context(OutputLock(out))
            if (finished := _prepare_out(plan)) is not None:
                return finished
            per_point = reps.min if isinstance(reps, Reps) else reps
            space.check_free(out, space.estimate_bytes(plan.points, per_point))
        if plan.backend.holds_host_devices(plan.levels):   # where its points run: its answer
            held.enter_context(MachineLock(plan.command or " ".join(sys.argv),
                                           wait=plan.execution.wait))
            plan = dataclasses.replace(plan, attrs={**plan.attrs,
                                                    quietness.ATTR: quietness.announce()})
        run = _sweep(plan)
        return run.to_dataset() if plan.output.dataset and isinstance(run, RunArrays) else run


def _plan(backend, levels, reps, out, settings) -> Sweep:
    """The sweep's plan, every setting checked before anything runs."""
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise TypeError(f"run() got an unexpected keyword argument {unknown[0]!r}")
    s = {**SETTINGS, **settings}
    be = get_backend(backend) if isinstance(backend, str) else backend
    levels = typed_levels(levels, be.factor_parsers)   # a no-op for abtlab.run's levels
    options = be.validate_options(dict(s["options"] or {}))
    freq_mode = s["freq_mode"] or options.pop("freq_mode", None) or "native"
    _check(be, reps, levels, options)
    if s["order"] not in ORDERS:
        raise ConfigError("order", s["order"], " | ".join(ORDERS))
    if s["seeds"] not in SEEDS:
        raise ConfigError("seeds", s["seeds"], " | ".join(SEEDS))
    points = tuple(be.validate_point(p) for p in expand(levels))
    if not isinstance(s["keep_going"], (bool, np.bool_)):
        raise ConfigError("keep_going", s["keep_going"], "true or false")
    f_ref = max(levels["freq_ghz"]) if "freq_ghz" in levels else None
    return Sweep(be, levels, points, reps, s["seed"], s["seeds"], s["order"], s["warmup"],
                 RunSettings(backend if isinstance(backend, str) else be, options, f_ref, freq_mode),
                 Output(None if out is None else Path(out), s["resume"], s["force"], s["dataset"]),
                 Execution(s["scheduler"], s["workers"], bool(s["keep_going"]), s["wait"]),
                 s["quiet"], s["command"], dict(s["attrs"] or {}),
                 _spec(be, levels, options, freq_mode, s, reps))


def _spec(be, levels, options, freq_mode, s, reps) -> dict:
    """What a --resume must match: the backend, levels, options that change what is
    measured (not where files are kept), seed, repetitions and order."""
    recorded = {k: v for k, v in options.items()
                if k not in be.place_options and k not in store.PLACE_OPTIONS}
    spec = {"backend": be.name, "factors": levels, "options": {**recorded, "freq_mode": freq_mode},
            "seed": s["seed"], "reps": str(reps), "order": s["order"]}
    if s["seeds"] != "per_run":
        spec["seeds"] = s["seeds"]
    return spec


def _prepare_out(plan: Sweep):
    """Check out before anything runs; return the finished dataset a resume finds there
    (nothing left to run), else None."""
    out, resume, force, spec = (plan.output.path, plan.output.resume, plan.output.force,
                                plan.spec)
    store.check_out(out, resume=resume, force=force)
    if force:
        store.start_fresh(out)
        return None
    if resume:
        store.check_resume(out, spec)
        if out.exists() and not store.parts_dir(out).exists():
            return store.load(out)
    return None


def _task(plan: Sweep, i: int, r: int, quiet=None) -> Task:
    """Repetition r of point i, with its seed (independent of the order runs go in)."""
    return Task(plan.run, plan.points[i], i, r, run_seed(plan.seed, i, r, plan.seeds),
                plan.quiet if quiet is None else quiet)


def _sweep(plan: Sweep):
    be, out = plan.backend, plan.output.path
    started = timestamp()
    done = store.read_parts(out) if plan.output.resume else {}
    parts = Parts(out, plan.spec, be.simulated)
    ex = make_executor(plan.execution.scheduler, workers=plan.execution.workers,
                       real_io=not be.simulated)
    # shown from the first second: a real run's warm-up (a guest's: a whole boot) comes first
    prog = Progress(_planned(plan.reps, len(plan.points), done), label=be.name, quiet=plan.quiet)
    try:
        try:
            if plan.warmup and not plan.output.resume and not be.simulated:
                _warm_up(ex, plan, prog)
            failed = {} if plan.execution.keep_going else None
            with prog.phase("running"):
                _run_points(ex, plan, parts, done, prog, failed)
            if failed and not done:         # nothing to keep: the first error, as without
                raise next(iter(failed.values()))
        except DiskFullError as exc:
            raise _kept(exc, parts, done, out) from None
        except BaseException as exc:
            parts.write_held()      # stopped by an error or a signal: resume keeps them
            if isinstance(exc, RunError):
                raise RunError(f"{be.name}: {exc}") from exc
            raise
        finally:
            ex.close()
            if out is not None:     # stopped before any repetition: nothing to resume
                store.drop_unstarted(out)
        meta = _meta(plan, started)
        if failed:
            meta[FAILED_RUNS] = failed_text(plan.points, failed)
        # a guest sweep's many records take seconds to assemble and write
        with prog.phase("writing the dataset" if out is not None else "assembling the dataset"):
            try:
                return _finish(be, done, plan.levels, meta, out, parts)
            except DiskFullError as exc:
                raise _kept(exc, parts, done, out) from None
            except BaseException:
                parts.write_held()      # stopped mid-write: resume keeps the finished runs
                raise
    finally:
        prog.close()


def _warm_up(ex, plan: Sweep, prog):
    """Runs discarded before the sweep: the first runs pay cold caches, page-ins and lazy
    init (a model's results do not depend on what ran before: none for it)."""
    n = plan.warmup
    with prog.phase(f"warm-up ({n} discarded run{'s' * (n > 1)})", counts=False):
        for _ in ex.map([_task(plan, w % len(plan.points), -1 - w, True) for w in range(n)]):
            pass


def _meta(plan: Sweep, started) -> dict:
    return {"backend": plan.backend.name, "abtlab_version": __version__, "start_time": started,
            "command": plan.command or " ".join(sys.argv), "seed": plan.seed,
            "reps": str(plan.reps), "order": plan.order,
            SWEEP_SPEC: json.dumps(plan.spec, default=str), **plan.attrs}


def _finish(be, done, levels, meta, out, parts=None):
    """The finished runs as one dataset (RunArrays, or a Dataset where the backend adds
    coordinates: a machine level's clock and kernel), written to out (when given) and its
    parts removed."""
    meta = {**collect(), **meta, "end_time": timestamp()}
    ds = assemble_arrays(list(done.values()), levels, meta)
    ds.attrs.update(be.dataset_labels(ds.attrs))
    coords = be.dataset_coords(levels)
    if coords:
        ds = ds.to_dataset().assign_coords(coords)
    if out is not None:
        _write_dataset(ds, out, parts)
    return ds


def _write_dataset(ds, out, parts=None):
    """Write the dataset and remove its parts, safe against a second signal: the
    temporary file is an undo on the cleanup stack (a teardown removes it whatever
    interrupted save's own removal), and signals are held around the rename and, once
    the dataset is in place, around the parts' removal (raised after it: the dataset
    is complete, the parts are gone, and nothing is left for --resume to redo)."""
    tmp = store.temp_path(out)
    token = cleanup.push(lambda: tmp.unlink(missing_ok=True), f"temporary dataset file {tmp}",
                         machine=False)
    try:
        store.save(ds, out, hold=cleanup.deferred)
        with cleanup.deferred():
            if parts is not None:
                parts.finished = True
            store.keep_rejected(out)
            shutil.rmtree(store.parts_dir(out), ignore_errors=True)
    finally:
        cleanup.pop(token)


def _kept(exc, parts, done, out) -> DiskFullError:
    """A full disk's error, saying which finished runs are kept for --resume."""
    lost = parts.write_held(best_effort=True)
    kept = sum(b.reps.size for b in done.values()) - lost
    where = store.parts_dir(out) if out is not None else "memory"
    said = f"{kept} finished run{'s' * (kept != 1)} kept in {where}" if kept else \
        "no finished run could be kept"
    return DiskFullError(f"{exc}: {said}{f', {lost} lost' if lost and kept else ''}; free "
                         "space, then run the same command with --resume")


def _planned(reps, npoints, done) -> int:
    """Runs still to do at the start (an adaptive rule's minimum; it may add more)."""
    per_point = reps.min if isinstance(reps, Reps) else reps
    return per_point * npoints - sum(b.reps.size for b in done.values())


def failed_text(points, failed) -> str:
    """One line per failed run: its point, repetition and error."""
    return "\n".join(f"{_short(points[i])} rep {r}: {exc}" for (i, r), exc in sorted(failed.items()))


def _run_points(ex, plan: Sweep, parts, done, prog, failed=None):
    """Run until every point has its repetitions (more for an adaptive rule). failed: a
    dict to keep going in, (point index, rep) -> the RunError of a run that failed;
    None: the first failure stops the sweep."""
    be, points, levels, reps, order = plan.backend, plan.points, plan.levels, plan.reps, plan.order
    rng = np.random.default_rng(plan.seed)
    rule = reps if isinstance(reps, Reps) else None
    wanted = {i: (rule.min if rule else reps) for i in range(len(points))}
    held = {(b.point_index, int(r)) for b in done.values() for r in b.reps}
    prog.total = sum(wanted.values()) - len(held)
    while True:
        todo = [(i, r) for i, n in wanted.items() for r in range(n)
                if (i, r) not in held and (failed is None or (i, r) not in failed)]
        if not todo:
            if rule is None:
                return
            more = more_reps(rule, points, levels, done, wanted, paired=order == "blocked")
            if not more:
                return
            prog.total += sum(n - wanted[i] for i, n in more.items())
            wanted.update(more)
            continue
        if not be.simulated:    # a model has no drift for the order to cancel
            todo = _ordered(todo, points, order, rng)
        try:
            for block in ex.map([_task(plan, i, r) for i, r in todo]):
                parts.add(block)
                done[store.block_name(block)] = block
                held.update((block.point_index, int(r)) for r in block.reps)
                prog.step(_short(block.point), n=block.reps.size)
        except RunError as exc:
            run = getattr(exc, "run", None)
            if failed is None or run is None or run in failed:
                raise
            # the rest of this round is planned again, without it
            failed[run] = exc
            prog.step(f"{_short(points[run[0]])} FAILED", n=1)
            print(f"abtlab: run failed, kept as missing (keep_going): {_short(points[run[0]])} "
                  f"rep {run[1]}: {exc}", file=sys.stderr)


def _ordered(todo, points, order, rng):
    """The (point, rep) runs still to do, in the sweep's order."""
    if order == "sequential":
        return todo
    if order == "random":
        return [todo[k] for k in rng.permutation(len(todo))]
    blocks: dict = {}
    for i, r in todo:
        blocks.setdefault((config_of(points[i]), r), []).append((i, r))
    keys = list(blocks)
    return [run for k in rng.permutation(len(keys))
            for run in (blocks[keys[k]][j] for j in rng.permutation(len(blocks[keys[k]])))]


def _short(point):
    return " ".join(f"{k}={v}" for k, v in point.items())
