"""abtlab.stats.start_order on constructed records: the same order twice is tau 1, a
reversed one -1, and the spread is the first writes' range."""
import numpy as np
import pytest
import xarray as xr

from abtlab.data import schema
from abtlab.errors import ConfigError
from abtlab.stats.start_order import WRITE, first_writes, start_orders


def _ds(orders):
    """One point, a repetition per order: thread k's first write at orders[r][k] ms (and a
    second write later, and an open before, neither of which counts)."""
    run, tid, kind, t0 = [], [], [], []
    for r, order in enumerate(orders):
        for k, ms in enumerate(order):
            for kd, t in ((1, ms - 0.5), (WRITE, ms), (WRITE, ms + 50)):
                run.append(r); tid.append(k); kind.append(kd); t0.append(int(t * 1e6))
    ds = xr.Dataset({schema.RUN_ID: (("policy", "rep"), [list(range(len(orders)))]),
                     "op_run": ("op", run), "op_tid": ("op", tid), "op_kind": ("op", kind),
                     "op_t_start": ("op", t0)}, coords={"policy": ["ext4"]})
    return ds


def test_same_order_is_tau_one_reversed_minus_one_and_spread_is_the_range():
    up, down = [1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]
    out = start_orders(_ds([up, up, down]), policy="ext4")
    assert out["reps"] == 3
    assert out["spread_ms"] == pytest.approx([3.0, 3.0, 3.0])
    assert out["tau"] == pytest.approx([1.0, -1.0, -1.0])


def test_first_writes_takes_each_threads_earliest_write_only():
    assert first_writes(_ds([[5.0, 1.0]]), 0) == {0: 5_000_000, 1: 1_000_000}


def test_a_failed_repetition_is_left_out_and_a_reduced_result_refused():
    ds = _ds([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    ds[schema.RUN_ID][0, 1] = -1
    assert start_orders(ds, policy="ext4") == {"reps": 1, "spread_ms": [2.0], "tau": []}
    with pytest.raises(ConfigError, match="records"):
        start_orders(ds.drop_vars(["op_run"]), policy="ext4")
