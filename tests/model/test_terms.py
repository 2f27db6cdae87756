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
