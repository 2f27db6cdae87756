"""abtlab.bps: exact overlapped time on hand-built interval sets, and the metrics."""
import numpy as np
import pytest

from abtlab import bps
from abtlab.errors import ConfigError
from abtlab.trace import RECORD_DTYPE, Flag, Op


def records(intervals, nbytes=4096, op=Op.WRITE):
    r = np.zeros(len(intervals), RECORD_DTYPE)
    r["op"] = op
    r["bytes"] = nbytes
    r["t_start_ns"] = [s for s, _ in intervals]
    r["t_end_ns"] = [e for _, e in intervals]
    return r


def test_figure2_three_overlapping_then_idle_then_one():
    # R1..R3 overlap partially (dt1 = t1..t6 = 0..10); idle 10..13; R4 = 13..16 (dt2 = 3)
    starts, ends = [0, 2, 6, 13], [5, 8, 10, 16]
    assert bps.overlap_time(starts, ends) == 13
    m = bps.metrics(records(list(zip(starts, ends)), nbytes=1024))
    assert m["blocks"] == 4 * 1024 / 512
    assert m["overlap_s"] == pytest.approx(13e-9)
    assert m["bps"] == pytest.approx(8 / 13e-9)
    assert m["elapsed_s"] == pytest.approx(16e-9)          # the idle gap is in IOPS' period
    assert m["iops"] == pytest.approx(4 / 16e-9)
    assert m["arpt"] == pytest.approx((5 + 6 + 4 + 3) / 4 * 1e-9)


@pytest.mark.parametrize("starts, ends, expect", [
    ([0], [7], 7),                                   # one request
    ([0, 1, 2], [10, 3, 9], 10),                     # nested inside the first
    ([5, 5, 5], [9, 9, 9], 4),                       # identical, counted once
    ([0, 4], [4, 8], 8),                             # touching: no gap
    ([0, 5], [3, 9], 7),                             # disjoint: gap 3..5 excluded
    ([3, 3, 20], [3, 3, 21], 1),                     # zero-length requests add nothing
    ([30, 0, 10, 12], [40, 5, 15, 14], 20),          # unsorted input
    ([], [], 0),
])
def test_overlap_time_exact(starts, ends, expect):
    assert bps.overlap_time(np.array(starts, np.int64), np.array(ends, np.int64)) == expect


def test_overlap_time_matches_fig3_on_random_sets_both_code_paths():
    rng = np.random.default_rng(7)
    for n in (1, 2, 10, 1000):
        s = rng.integers(0, 10_000, n)
        e = s + rng.integers(0, 300, n)
        ref = bps.overlap_time_fig3(s.tolist(), e.tolist())
        assert bps.overlap_time(s, e) == ref                 # unsorted path
        o = np.argsort(s, kind="stable")
        assert bps.overlap_time(s[o], e[o]) == ref           # sorted-by-start path


def test_overlap_time_per_thread_runs_and_unsigned_ns():
    # two "threads", each sequential, concatenated as libabtrace writes them
    a = np.array([[10, 20], [25, 40], [50, 60]], np.uint64)
    b = np.array([[15, 30], [45, 55]], np.uint64)
    both = np.vstack([a, b]) + np.uint64(2**62)              # large values must not wrap
    assert bps.overlap_time(both[:, 0], both[:, 1]) == (40 - 10) + (60 - 45)


def test_figure1_cases_separate_bps_from_iops_and_arpt():
    # Fig. 1(a): two S-size requests one after the other vs one 2S request in T: same IOPS
    two = bps.metrics(records([(0, 10), (10, 20)], nbytes=512))
    one = bps.metrics(records([(0, 10)], nbytes=1024))
    assert two["iops"] == pytest.approx(one["iops"])
    assert one["bps"] == pytest.approx(2 * two["bps"])
    # Fig. 1(c): sequential vs concurrent requests of time T: same ARPT, BPS doubles
    seq = bps.metrics(records([(0, 10), (10, 20)]))
    conc = bps.metrics(records([(0, 10), (0, 10)]))
    assert seq["arpt"] == conc["arpt"]
    assert conc["bps"] == pytest.approx(2 * seq["bps"])


def test_metrics_counts_only_data_calls_and_failed_calls_without_bytes():
    r = records([(0, 10), (10, 20), (20, 30), (40, 50)], nbytes=4096)
    r["op"] = [Op.OPEN, Op.PREAD, Op.FSYNC, Op.WRITEV]
    r["flags"][3] = Flag.ERROR
    r["bytes"][3] = 5                                       # EIO, not a size
    m = bps.metrics(r, block_size=4096)
    assert (m["ops"], m["bytes"], m["blocks"]) == (2, 4096, 1)
    assert m["overlap_s"] == pytest.approx(20e-9)


def test_metrics_required_bytes_and_dict_input():
    d = {"t_start_ns": np.array([0, 100]), "t_end_ns": np.array([100, 200]),
         "bytes": np.array([1 << 20, 1 << 20])}
    m = bps.metrics(d, required_bytes=1 << 19)              # data sieving moved 4x the need
    assert m["blocks"] == 1024
    assert m["bandwidth"] == pytest.approx((2 << 20) / 200e-9)
    assert m["bps"] == pytest.approx(1024 / 200e-9)


def test_metrics_of_empty_trace_is_nan_not_an_error():
    m = bps.metrics(np.zeros(0, RECORD_DTYPE))
    assert m["ops"] == 0 and np.isnan(m["bps"]) and np.isnan(m["arpt"])


@pytest.mark.parametrize("kwargs, field", [
    ({"block_size": 0}, "block_size"), ({"block_size": 1.5}, "block_size"),
    ({"block_size": True}, "block_size"), ({"required_bytes": -1}, "required_bytes"),
])
def test_metrics_bad_arguments(kwargs, field):
    with pytest.raises(ConfigError) as exc:
        bps.metrics(records([(0, 1)]), **kwargs)
    assert exc.value.field == field


@pytest.mark.parametrize("trace, field", [
    ({"t_start_ns": [0]}, "trace"), ([1, 2, 3], "trace"),
    (np.zeros(2, [("op", "u2")]), "trace"),
])
def test_metrics_bad_trace(trace, field):
    with pytest.raises(ConfigError) as exc:
        bps.metrics(trace)
    assert exc.value.field == field


@pytest.mark.parametrize("starts, ends, field", [
    ([0, 5], [3], "starts/ends"), ([0, 5], [3, 4], "ends"),
    ([0.0, np.nan], [1.0, 2.0], "starts"), (["a"], ["b"], "starts"),
])
def test_overlap_time_bad_input(starts, ends, field):
    with pytest.raises(ConfigError) as exc:
        bps.overlap_time(starts, ends)
    assert exc.value.field == field


@pytest.mark.parametrize("layout", ["per-thread", "by start", "shuffled"])
def test_float_times_give_the_integer_overlap(layout, monkeypatch):
    """Float times (seconds) take their own sort; the union is the integer one, exactly
    here: ns scaled by 2**-30 are exact binary fractions, and so are their sums."""
    from abtlab.bps import radix
    monkeypatch.setattr(radix, "MIN_SIZE", 1000)      # integers through the radix sort
    rng = np.random.default_rng(5)
    threads, per = 8, 4000
    dur, gap = rng.integers(1, 20_000, (threads, per)), rng.integers(0, 30_000, (threads, per))
    end = np.cumsum(dur + gap, axis=1)
    s, e = (end - dur).ravel(), end.ravel()
    order = {"per-thread": np.arange(s.size), "by start": np.argsort(s, kind="stable"),
             "shuffled": rng.permutation(s.size)}[layout]
    s, e = s[order], e[order]
    ns = bps.overlap_time(s, e)
    assert ns == bps.overlap_time_fig3(s.tolist(), e.tolist())
    sec = bps.overlap_time(s * 2.0 ** -30, e * 2.0 ** -30)
    assert isinstance(sec, np.floating) and sec == ns * 2.0 ** -30
