"""The analytical ABT model of Chang, Li, Grove and Cameron ("How Processor Speedups Can Slow
Down I/O Performance", IEEE MASCOTS 2014; section III, eqs. 1-10) as functions over traces.

The same functions work on real, emulated and simulated traces: an op table
(trace.RECORD_DTYPE, tid = thread index) and a commit table (dict of arrays: tid,
start, locking, flushing, logging, end, handles, blocks; ns on the ops' clock).
"""
from __future__ import annotations

from .classify import LABELS, as_dataarray, blocked_fsyncs, classify, classify_writes
from .equations import (blocked_time, fcr, fcr_approx, iozone_throughput, t_op, t_write_x,
                        t_write_y, t_write_z, throughput_by_class)
from .measures import WORKLOADS, commit_waits, measures

__all__ = ["measures", "commit_waits", "classify", "classify_writes", "blocked_fsyncs",
           "as_dataarray", "LABELS", "WORKLOADS", "t_op", "t_write_x", "t_write_y",
           "t_write_z", "blocked_time", "iozone_throughput", "throughput_by_class", "fcr",
           "fcr_approx", "fit_sim_params"]


def fit_sim_params(ops, commits, **kw):
    """Fit simulator parameters from a run's traces (see abtlab.model.calibrate)."""
    from .calibrate import fit_sim_params as _fit
    return _fit(ops, commits, **kw)
