"""Whether a point's repetitions start their writers differently: each repetition's order
of the threads' first writes (from the op records) and the spread of those first writes.
On a deterministic machine (the guest's virtual clock) a repetition is a sample only if
something real differs between them; this shows whether the writers' start order, which
decides which writers the first commit catches, does (Kendall's tau near 0 between two
repetitions: unrelated orders; 1: the same order)."""
from __future__ import annotations

import itertools

import numpy as np

from ..data import schema
from ..errors import ConfigError

__all__ = ["first_writes", "start_orders"]

WRITE = 2           # ABT_OP_WRITE (backends/include/abt_trace.h)


def first_writes(ds, run: int) -> dict:
    """thread -> the start (ns) of its first write in run `run` of ds's op records."""
    m = (ds["op_run"].values == run) & (ds["op_kind"].values == WRITE)
    tid, t0 = ds["op_tid"].values[m], ds["op_t_start"].values[m]
    order = np.lexsort((t0, tid))
    tid, t0 = tid[order], t0[order]
    first = np.r_[True, tid[1:] != tid[:-1]] if len(tid) else np.zeros(0, bool)
    return dict(zip(tid[first].tolist(), t0[first].tolist()))


def start_orders(ds, **point) -> dict:
    """At one point (e.g. policy="ext4", freq_ghz=1.6): the repetitions with records, each
    one's spread of first writes (ms), and Kendall's tau between every two repetitions'
    orders of their writers' first writes (over the threads both have)."""
    from scipy.stats import kendalltau
    if "op_run" not in ds:
        raise ConfigError("dataset", "no op records", "a run with its records (not a reduced result)")
    runs = [int(r) for r in np.ravel(ds[schema.RUN_ID].sel(**point).values) if r >= 0]
    firsts = [first_writes(ds, r) for r in runs]
    firsts = [f for f in firsts if f]
    spread = [(max(f.values()) - min(f.values())) / 1e6 for f in firsts]
    taus = []
    for a, b in itertools.combinations(firsts, 2):
        common = sorted(set(a) & set(b))
        if len(common) > 1:
            taus.append(float(kendalltau([a[k] for k in common], [b[k] for k in common])[0]))
    return {"reps": len(firsts), "spread_ms": spread, "tau": taus}
