"""Where the runs of a sweep execute: in this process, or on a dask.distributed cluster.

Real I/O runs must never share a machine: on a cluster they require the worker
resource `abtlab_io` (give it to one worker per machine); simulated runs need none and
spread freely. Both executors yield finished blocks of runs (abtlab.data.block) as they
complete, so the sweep writes each one to the store at once: a block per run, or per
group of a point's runs where they cost milliseconds (a simulated backend's).
"""
from __future__ import annotations

import contextlib
from itertools import groupby

from ..backends import get as get_backend
from ..backends.base import RunContext
from ..data.block import from_results
from ..errors import RunError
from ..extras import require
from .plan import RunSettings

__all__ = ["Task", "execute", "execute_group", "execute_many", "groups", "SerialExecutor", "DaskExecutor", "make_executor"]

IO_RESOURCE = "abtlab_io"


class Task:
    """One repetition of one point: the sweep plan's RunSettings (shared by every task of
    the sweep: its backend, options, reference frequency and frequency mode), the point,
    its index, the repetition and its seed."""
    __slots__ = ("settings", "point", "index", "rep", "seed", "quiet")

    def __init__(self, settings: RunSettings, point, index, rep, seed, quiet=True):
        self.settings, self.point, self.index, self.rep = settings, point, index, rep
        self.seed, self.quiet = seed, quiet

    @property
    def backend(self):
        return self.settings.backend

    @property
    def options(self) -> dict:
        return self.settings.options

    @property
    def f_ref(self):
        return self.settings.f_ref

    @property
    def freq_mode(self) -> str:
        return self.settings.freq_mode


def _backend(task):
    return get_backend(task.backend) if isinstance(task.backend, str) else task.backend


def _isolated(group) -> bool:
    """A group whose clock is its own (a guest's on virtual time, the backend says), so
    another run beside it changes nothing it measures."""
    t = group[0]
    return _backend(t).isolated_clock(t.point, t)


def _context(task, workdir):
    return RunContext(workdir, rep=task.rep, seed=task.seed, quiet=task.quiet,
                      f_ref_ghz=task.f_ref, freq_mode=task.freq_mode, options=dict(task.options))


def _workdir(be):
    """A run's scratch directory: owned (after a kill -9 the next run undoes what is in
    here) and removed by the undo stack, not by a weakref finalizer, where a signal would
    be swallowed. A model does no real I/O: None, and no directory made and removed
    around each group (3 ms of CPU, 8-11 ms of wall each, abtlab.system.leftovers)."""
    if be.simulated:
        return contextlib.nullcontext()
    from ..system import leftovers   # a real run's only: 0.026 CPU s a model's sweep saves
    return leftovers.WorkDir(prefix="abtlab-run-")


def _tagged(exc, task):
    """exc with the run it stopped, `exc.run` = (point index, rep): a keep-going sweep
    marks that run missing and goes on (the attribute survives a dask worker's pickle)."""
    if getattr(exc, "run", None) is None:
        exc.run = (task.index, task.rep)
    return exc


def execute(task: Task):
    """Run one repetition of one point; return its RunBlock."""
    be = _backend(task)
    try:
        with _workdir(be) as work:
            result = be.run_point(task.point, _context(task, work))
    except RunError as exc:
        raise _tagged(exc, task)
    return from_results([result], task.point, task.index, [task.rep])


def groups(tasks):
    """Consecutive tasks of one backend with the same group_key (a guest machine's points:
    one boot), at most its group_size of them, as lists; every other task alone."""
    group, key = [], None
    for t in tasks:
        be = _backend(t)
        k = be.group_key(t)
        if group and (k is None or k != key or len(group) >= be.group_size(t)):
            yield group
            group = []
        group.append(t)
        key = k
        if k is None:
            yield group
            group = []
    if group:
        yield group


def execute_many(tasks):
    """Run one group (Backend.run_group) and yield its RunBlocks in order, then raise the
    first run's RunError: the blocks before it are kept by the sweep."""
    be = _backend(tasks[0])
    with _workdir(be) as work:
        results = be.run_group([(t.point, _context(t, work)) for t in tasks], work)
    failed = next((k for k, r in enumerate(results) if isinstance(r, Exception)), None)
    yield from _blocks(be, tasks[:failed], results[:failed])
    if failed is not None:
        exc = results[failed]
        raise _tagged(exc, tasks[failed]) if isinstance(exc, RunError) else exc


def _blocks(be, tasks, results):
    """A simulated backend's runs cost milliseconds: a point's consecutive runs are one
    block (stored as one part); any other run is a block of its own."""
    pairs = list(zip(tasks, results))
    key = (lambda pair: pair[0].index) if be.simulated else id   # id: each run alone
    for _, same in groupby(pairs, key=key):
        same = list(same)
        t = same[0][0]
        yield from_results([r for _, r in same], t.point, t.index, [u.rep for u, _ in same])


def execute_group(group):
    """On a worker: one group from groups() -> ([RunBlock] in order, the first error or
    None), so the blocks finished before a failed run are kept, as the serial executor keeps them."""
    done = []
    try:
        if len(group) == 1:
            done.append(execute(group[0]))
        else:
            done.extend(execute_many(group))
    except Exception as exc:    # sent back with what finished; raised in the sweep's process
        return done, exc
    return done, None


class SerialExecutor:
    def map(self, tasks):
        for group in groups(tasks):
            if len(group) > 1:
                yield from execute_many(group)
            else:
                yield execute(group[0])

    def close(self):
        pass


class DaskExecutor:
    """scheduler: None (a LocalCluster of `workers` processes), an address, or a Client."""

    def __init__(self, scheduler=None, workers=2, real_io=False):
        dd = require("dask.distributed", "dask", "a sweep on a dask cluster (scheduler=local or an address)")
        Client, LocalCluster = dd.Client, dd.LocalCluster
        self._own = []
        if scheduler is None or scheduler == "local":
            # one worker holds the I/O resource, so real runs never overlap on this machine
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            self._own.append(cluster)
            self.client = Client(cluster)
            self._io_worker = sorted(self.client.scheduler_info()["workers"])[0]
        elif hasattr(scheduler, "submit"):
            self.client, self._io_worker = scheduler, None
        else:
            self.client, self._io_worker = Client(scheduler), None
        self.real_io = real_io

    def map(self, tasks):
        from dask.distributed import as_completed   # an optional dependency (abtlab[dask])

        grouped = list(groups(list(tasks)))   # a guest machine's consecutive points: one boot
        io = {}
        if self.real_io:
            io = ({"workers": [self._io_worker]} if self._io_worker
                  else {"resources": {IO_RESOURCE: 1}})
        # priorities keep the sweep's order (random or blocked) where runs queue on one worker;
        # a guest group touches no host device and its clock is virtual: groups run side by side
        futs = [self.client.submit(execute_group, g, pure=False, priority=len(grouped) - k,
                                   **({} if _isolated(g) else io))
                for k, g in enumerate(grouped)]
        for fut in as_completed(futs):
            done, error = fut.result()
            yield from done
            if error is not None:
                raise error

    def close(self):
        if self._own:
            self.client.close()
            for c in self._own:
                c.close()


def make_executor(scheduler=None, workers=2, real_io=False):
    if scheduler in (None, "serial"):
        return SerialExecutor()
    return DaskExecutor(None if scheduler == "local" else scheduler, workers=workers, real_io=real_io)
