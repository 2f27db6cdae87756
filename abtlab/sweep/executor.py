"""Where the runs of a sweep execute: in this process, or on a dask.distributed cluster.

Real I/O runs must never share a machine: on a cluster they require the worker
resource `abtlab_io` (give it to one worker per machine); simulated runs need none and
spread freely. Both executors yield finished parts as they complete, so the sweep
writes each one to the store at once.
"""
from __future__ import annotations

__all__ = ["Task", "execute", "execute_group", "SerialExecutor", "DaskExecutor", "make_executor"]

IO_RESOURCE = "abtlab_io"


class Task:
    __slots__ = ("backend", "point", "index", "rep", "seed", "options", "f_ref", "freq_mode", "quiet")

    def __init__(self, backend, point, index, rep, seed, options, f_ref, freq_mode, quiet=True):
        self.backend, self.point, self.index, self.rep = backend, point, index, rep
        self.seed, self.options, self.f_ref, self.freq_mode, self.quiet = (
            seed, options, f_ref, freq_mode, quiet)


def execute(task: Task):
    """Run one repetition of one point; return its part Dataset."""
    from ..data.assemble import result_to_part
    from ..backends import get
    from ..backends.base import RunContext
    from ..system import leftovers
    be = get(task.backend) if isinstance(task.backend, str) else task.backend
    # owned (after a kill -9 the next run undoes what is in here) and removed by the
    # undo stack, not by a weakref finalizer, where a signal would be swallowed
    with leftovers.WorkDir(prefix="abtlab-run-") as work:
        ctx = RunContext(work, rep=task.rep, seed=task.seed, quiet=task.quiet,
                         f_ref_ghz=task.f_ref, freq_mode=task.freq_mode, options=dict(task.options))
        result = be.run_point(task.point, ctx)
    return result_to_part(result, task.point, task.index, task.rep)


def execute_group(group):
    """On a worker: a group of tasks from guest_point.batches (one task, or a guest
    machine's points for one boot) -> ([(task, part)] in order, the first error or None),
    so the parts finished before a failed point are kept, as the serial executor keeps them."""
    from ..backends.guest_point import execute_batch
    done = []
    try:
        if len(group) == 1:
            done.append((group[0], execute(group[0])))
        else:
            done.extend(execute_batch(group))
    except Exception as exc:    # sent back with what finished; raised in the sweep's process
        return done, exc
    return done, None


class SerialExecutor:
    def map(self, tasks):
        from ..backends.guest_point import batches, execute_batch
        for group in batches(tasks):   # consecutive points of one guest machine share a boot
            if len(group) > 1:
                yield from execute_batch(group)
            else:
                yield group[0], execute(group[0])

    def close(self):
        pass


class DaskExecutor:
    """scheduler: None (a LocalCluster of `workers` processes), an address, or a Client."""

    def __init__(self, scheduler=None, workers=2, real_io=False):
        from dask.distributed import Client, LocalCluster
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
        from dask.distributed import as_completed

        from ..backends.guest_point import batches
        groups = list(batches(list(tasks)))   # a guest machine's consecutive points: one boot
        kw = {}
        if self.real_io:
            kw = ({"workers": [self._io_worker]} if self._io_worker
                  else {"resources": {IO_RESOURCE: 1}})
        # priorities keep the sweep's order (random or blocked) where runs queue on one worker
        futs = [self.client.submit(execute_group, g, pure=False, priority=len(groups) - k, **kw)
                for k, g in enumerate(groups)]
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
