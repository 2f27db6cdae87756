"""abtlab.model.terms: the timing terms of the paper's account, on hand-built traces."""
import numpy as np
import pytest

from abtlab.model.terms import TERMS, timing_terms
from test_measures import commits, iozone_thread, trace


def test_terms_of_a_commit_that_starts_while_late_writers_still_write():
    ops = trace(iozone_thread(0, 0, 40, 150)         # the lead: writes 0-40 us, fsync
                + iozone_thread(1, 20, 60, 150)      # done before the commit starts
                + iozone_thread(2, 80, 300, 400))    # still writing when it starts: blocked
    c = commits((100, 200))
    c["locking"] = np.array([110])
    t = timing_terms(ops, c)
    assert set(t) == set(TERMS)
    assert t["lead_to_commit"] == pytest.approx(100e-9)
    assert t["commit_lock"] == pytest.approx(10e-9)
    assert t["first_commit"] == pytest.approx(100e-9)
    assert t["writer_lag"] == pytest.approx(20e-9) and t["writer_spread"] == pytest.approx(80e-9)
    assert t["write_op_unblocked"] == pytest.approx(40e-9)
    assert t["write_op_blocked"] == pytest.approx(220e-9)
    assert t["writers_before_first_commit"] == 2


def test_a_run_without_commits_has_no_commit_terms():
    t = timing_terms(trace(iozone_thread(0, 0, 40, 150)), None)
    assert np.isnan(t["lead_to_commit"]) and np.isnan(t["first_commit"])
    assert t["write_op_unblocked"] == pytest.approx(40e-9) and np.isnan(t["write_op_blocked"])


def _oncpu(rows):
    """rows: (t_in, t_out) ns of the workload's threads on a CPU."""
    a, b = zip(*rows) if rows else ((), ())
    return {"pid": np.zeros(len(a), np.int64), "cpu": np.zeros(len(a), np.int64),
            "t_in": np.array(a, np.int64), "t_out": np.array(b, np.int64)}


def test_cpu_terms_count_the_workloads_cpu_time_inside_the_lead_delay_and_the_lag():
    from abtlab.model.terms import CPU_TERMS, cpu_terms
    ops = trace(iozone_thread(0, 0, 40, 150) + iozone_thread(1, 20, 60, 150)
                + iozone_thread(2, 80, 300, 400))
    # the workload runs -10-30, 50-90 and 95-120 ns (cut at the lead, 0, and the commit's
    # start, 100): 30 + 40 + 5 = 75 ns of its CPU inside the lead's delay, 25 ns elsewhere
    on = _oncpu([(-10, 30), (50, 90), (95, 120)])
    t = cpu_terms(ops, on, commits((100, 200)))
    assert set(t) == set(CPU_TERMS)
    assert t["lead_to_commit_cpu"] == pytest.approx(75e-9)
    # writers start at 0, 20, 80: CPU before each after the lead 0, 20, 30 + 30 = 60
    assert t["writer_lag_cpu"] == pytest.approx(20e-9)
    none = cpu_terms(ops, on, None)
    assert np.isnan(none["lead_to_commit_cpu"]) and none["writer_lag_cpu"] == pytest.approx(20e-9)
    assert all(np.isnan(v) for v in cpu_terms(ops, _oncpu([]), commits((100, 200))).values())


def test_busy_time_before_a_time_is_the_intervals_clipped_sum():
    from abtlab.model.terms import _busy_before
    rng = np.random.default_rng(3)
    a = rng.integers(0, 1000, 200)
    b = a + rng.integers(0, 50, 200)      # overlapping intervals: two CPUs' and more
    t = rng.integers(-10, 1100, 300)
    want = [int(np.clip(np.minimum(x, b) - a, 0, None).sum()) for x in t]
    np.testing.assert_array_equal(_busy_before({"t_in": a, "t_out": b}, t), want)


def test_terms_table_carries_the_stored_cpu_terms():
    import abtlab
    from abtlab.model.terms import terms_table
    ds = abtlab.run("sim", reps=2, threads="8", freq="1.6,3.3", quiet=True)
    assert "lead_to_commit_cpu" not in terms_table(ds)      # the simulator has no trace
    ds["lead_to_commit_cpu"] = ds.throughput * 0 + 0.25
    ds["writer_lag_cpu"] = ds.throughput * 0 + 0.5
    df = terms_table(ds)
    assert list(df.lead_to_commit_cpu) == [0.25, 0.25] and list(df.writer_lag_cpu) == [0.5, 0.5]
    assert df.lead_to_commit.notna().all()
