"""The ABT model (Chang et al., MASCOTS 2014, eqs. 1-10) on hand-built traces: each case of Figs. 5 and 6."""
from __future__ import annotations

import numpy as np
import pytest

from abtlab import model
from abtlab.errors import ConfigError
from abtlab.model.measures import measures_reps
from abtlab.trace import RECORD_DTYPE, Op


def trace(rows):
    """rows: (tid, op, start_ns, end_ns, bytes)."""
    out = np.zeros(len(rows), RECORD_DTYPE)
    for i, (tid, op, s, e, b) in enumerate(rows):
        out[i] = (1000, tid, int(op), 0, b, s, e)
    return out


def commits(*spans):
    s = np.array([a for a, _ in spans], np.int64)
    e = np.array([b for _, b in spans], np.int64)
    n = len(spans)
    return {"tid": np.arange(n), "start": s, "locking": s, "flushing": s, "logging": s,
            "end": e, "handles": np.ones(n), "blocks": np.ones(n)}


def iozone_thread(tid, w0, w1, f1, nbytes=100):
    """open, barrier, two writes spanning [w0, w1], fsync until f1, close."""
    mid = (w0 + w1) // 2
    return [(tid, Op.OPEN, 0, 5, 0), (tid, Op.BARRIER, 5, 10, 0),
            (tid, Op.WRITE, w0, mid, nbytes // 2), (tid, Op.WRITE, mid, w1, nbytes - nbytes // 2),
            (tid, Op.FSYNC, w1, f1, 0), (tid, Op.CLOSE, f1, f1 + 1, 0)]


# Fig. 5: one commit L1 = [100, 200]; K_i (tid 0) triggers it.
FIG5 = (iozone_thread(0, 10, 50, 200)        # K_i: X (its write ends before the commit)
        + iozone_thread(1, 10, 90, 200)      # not affected: X
        + iozone_thread(2, 20, 250, 400)     # fully blocked: Y
        + iozone_thread(3, 150, 260, 400)    # partially blocked: Z
        + iozone_thread(4, 250, 300, 400))   # after the commit: X
L1 = (100, 200)


def test_fig5_classes():
    res = model.classify(trace(FIG5), commits(L1))
    labels = [res["labels"][c] for c in res["write_class"][:, 0]]
    assert labels == ["X", "X", "Y", "Z", "X"]


def test_fig5_measures_and_eq3():
    m = model.measures(trace(FIG5), commits(L1), "iozone", file_size=100)
    assert (m["threads_clear_of_commits"], m["blocked_full"], m["blocked_partial"]) == (3, 1, 1)
    assert m["blocked_inside"] == 0
    # the paper's T_write: the write op only (IOzone's default: fsync after the clock stops)
    t_write = np.array([50 - 10, 90 - 10, 250 - 20, 260 - 150, 300 - 250]) * 1e-9
    assert m["throughput"] == pytest.approx(np.sum(100 / t_write))
    assert m["mean_write"] == pytest.approx(t_write.mean())
    # IOzone -e: the clock runs on to the end of the thread's fsync
    t_write_e = np.array([200 - 10, 200 - 10, 400 - 20, 400 - 150, 400 - 250]) * 1e-9
    assert m["throughput_fsync"] == pytest.approx(np.sum(100 / t_write_e))
    assert m["mean_write_fsync"] == pytest.approx(t_write_e.mean())
    assert m["commits"] == 1 and m["fsync_calls"] == 5
    assert m["elapsed"] == pytest.approx(401e-9)
    # waits: threads 0,1 covered by L1 (end 200); 2,3,4 fsync after it: own duration
    waits = np.array([200 - 50, 200 - 90, 400 - 250, 400 - 260, 400 - 300]) * 1e-9
    assert m["mean_commit_wait"] == pytest.approx(waits.mean())


def test_fsync_off_has_no_fsync_inclusive_throughput():
    m = model.measures(trace(FIG5), commits(L1), "iozone", file_size=100, fsync=False)
    t_write = np.array([40, 80, 230, 110, 50]) * 1e-9
    assert m["throughput"] == pytest.approx(np.sum(100 / t_write))
    assert np.isnan(m["throughput_fsync"]) and np.isnan(m["mean_write_fsync"])


def test_a_thread_without_fsync_leaves_the_fsync_inclusive_throughput_undefined():
    rows = [r for r in FIG5 if not (r[0] == 4 and r[1] == Op.FSYNC)]
    m = model.measures(trace(rows), commits(L1), "iozone", file_size=100)
    assert np.isnan(m["throughput_fsync"]) and np.isfinite(m["throughput"])


def test_a_write_released_inside_the_commit_is_blocked_not_unaffected():
    """3.4's T_LOCKED and shadow-buffer stalls end a few ms before jbd2_end_commit:
    eqs. (5)-(6) read literally count such a write X; it is I, blocked."""
    ops = trace(iozone_thread(0, 10, 50, 200)       # before the commit: X
                + iozone_thread(1, 60, 180, 300)    # starts before, released inside: I
                + iozone_thread(2, 120, 190, 300)   # starts and ends inside: I
                + iozone_thread(3, 200, 260, 300))  # starts at the commit's end: X
    res = model.classify(ops, commits(L1))
    assert [res["labels"][c] for c in res["write_class"][:, 0]] == ["X", "I", "I", "X"]
    m = model.measures(ops, commits(L1), "iozone")
    assert (m["threads_clear_of_commits"], m["blocked_inside"]) == (2, 2)
    assert m["blocked_full"] == m["blocked_partial"] == 0


def test_eq5_eq6_decompose_eq4():
    q_w, r_w, q_jc, r_jc = 20.0, 250.0, 100.0, 200.0
    assert model.t_write_y(q_w, r_w, q_jc, r_jc) == model.t_write_x(q_w, r_w) == 230.0
    assert model.t_write_z(150.0, 260.0, q_jc, r_jc) == model.t_write_x(150.0, 260.0) == 110.0
    assert model.blocked_time(q_w, q_jc, r_jc, "Y") == 100.0
    assert model.blocked_time(150.0, q_jc, r_jc, "Z") == 50.0
    assert model.blocked_time(10.0, q_jc, r_jc, "X") == 0.0


def test_eq7_eq8_split_eq3():
    t = np.array([190.0, 230.0, 110.0])
    parts = model.throughput_by_class(100.0, t, ["X", "Y", "Z"])
    assert parts["Y"] == pytest.approx(100 / 230)
    assert parts["total"] == pytest.approx(model.iozone_throughput(100.0, t))


def test_many_commits_y_wins_over_z():
    # one write [150, 700] is Z for L1=[100,200] and Y for L2=[300,400]
    ops = trace(iozone_thread(0, 10, 50, 200) + iozone_thread(1, 150, 700, 800))
    res = model.classify(ops, commits((100, 200), (300, 400)))
    assert [res["labels"][c] for c in res["write_class"][1]] == ["Z", "Y"]
    m = model.measures(ops, commits((100, 200), (300, 400)), "iozone")
    assert (m["threads_clear_of_commits"], m["blocked_full"], m["blocked_partial"]) == (1, 1, 0)
    assert m["commits"] == 2


def test_commits_outside_the_run_not_counted():
    m = model.measures(trace(FIG5), commits((-500, -400), L1, (10_000, 10_100)), "iozone")
    assert m["commits"] == 1


def test_nojc_no_commits():
    empty = {k: np.zeros(0) for k in ("tid", "start", "locking", "flushing", "logging", "end",
                                      "handles", "blocks")}
    for c in (empty, None):
        m = model.measures(trace(FIG5), c, "iozone")
        assert m["commits"] == 0 and m["threads_clear_of_commits"] == 5
        assert m["blocked_full"] == 0 and m["blocked_partial"] == 0 and m["blocked_inside"] == 0
        assert m["mean_commit_wait"] == pytest.approx(m["mean_fsync"])


# Fig. 6: Metarates, L1 = [100, 300] triggered by K_i, L2 = [300, 500].
FIG6 = [
    (0, Op.OPEN, 0, 10, 0), (0, Op.FSYNC, 10, 300, 0), (0, Op.CLOSE, 300, 305, 0),   # K_i
    (1, Op.OPEN, 0, 50, 0), (1, Op.FSYNC, 50, 300, 0), (1, Op.CLOSE, 300, 310, 0),   # group 1
    (2, Op.OPEN, 0, 150, 0), (2, Op.FSYNC, 150, 500, 0), (2, Op.CLOSE, 500, 520, 0), # group 2
]


def test_fig6_blocked_fsyncs_and_fcr():
    c = commits((100, 300), (300, 500))
    res = model.classify(trace(FIG6), c)
    assert res["fsync_blocked"].tolist() == [False, False, True]
    m = model.measures(trace(FIG6), c, "metarates")
    assert (m["threads_clear_of_commits"], m["blocked_full"]) == (2, 1)
    assert np.isnan(m["blocked_partial"])
    t_all = np.array([10 + 290 + 5, 50 + 250 + 10, 150 + 350 + 20]) * 1e-9
    assert m["fcr"] == pytest.approx(3 / t_all.sum())
    assert m["fcr_approx"] == pytest.approx(3 / (np.array([290, 250, 350]) * 1e-9).sum())
    assert m["mean_commit_wait"] == pytest.approx(np.mean([290, 250, 350]) * 1e-9)
    assert m["commits"] == 2


def test_fcr_counts_written_data_and_aggregate_rate_is_files_per_wall_time():
    # mdtest -w: open, write, fsync, close; two workers, one file each
    rows = [(0, Op.OPEN, 0, 10, 0), (0, Op.WRITE, 10, 30, 4096), (0, Op.FSYNC, 30, 100, 0),
            (0, Op.CLOSE, 100, 110, 0),
            (1, Op.OPEN, 50, 60, 0), (1, Op.WRITE, 60, 70, 4096), (1, Op.FSYNC, 70, 190, 0),
            (1, Op.CLOSE, 190, 200, 0)]
    m = model.measures(trace(rows), None, "metarates")
    assert m["fcr"] == pytest.approx(2 / ((110 + 150) * 1e-9))   # write time included
    assert m["fcr_aggregate"] == pytest.approx(2 / (200 * 1e-9))  # first open to last close


def test_fcr_many_files_per_worker():
    # F=2 files per worker, N=1: eq. (9) -> 2 / (sum of both creates)
    rows = [(0, Op.OPEN, 0, 10, 0), (0, Op.FSYNC, 10, 40, 0), (0, Op.CLOSE, 40, 50, 0),
            (0, Op.OPEN, 50, 60, 0), (0, Op.FSYNC, 60, 160, 0), (0, Op.CLOSE, 160, 170, 0)]
    m = model.measures(trace(rows), None, "metarates")
    assert m["fcr"] == pytest.approx(2 / ((10 + 30 + 10 + 10 + 100 + 10) * 1e-9))
    assert m["threads_clear_of_commits"] == 1


def test_commit_wait_rule():
    # fsync [10, 300] covered by commit ending at 250 -> 240; fsync [400, 420] after
    # the last commit -> own duration 20
    w = model.commit_waits([10, 400], [300, 420], [250])
    assert w.tolist() == [240, 20]


def test_bad_input_names_the_field():
    with pytest.raises(ConfigError) as e:
        model.measures(trace(FIG5), None, "fio")
    assert e.value.field == "workload"
    with pytest.raises(ConfigError) as e:
        model.measures(np.zeros(3), None, "iozone")
    assert e.value.field == "ops"
    with pytest.raises(ConfigError) as e:
        model.measures(trace(FIG5), commits((200, 100)), "iozone")
    assert e.value.field == "commits.end"
    with pytest.raises(ConfigError) as e:
        model.measures(trace(FIG5), None, "iozone", file_size=-1)
    assert e.value.field == "file_size"


def test_spans_same_whether_records_grouped_by_thread_or_not():
    """Recorders write each thread's records together; merged traces may interleave them.
    Both orders give the same spans and measures."""
    from abtlab.model.spans import op_durations, thread_spans
    grouped = trace(FIG5 + iozone_thread(9, 30, 40, 45) + [(7, Op.OPEN, 1, 2, 0)])
    mixed = grouped[np.random.default_rng(0).permutation(grouped.size)]
    a, b = thread_spans(grouped), thread_spans(mixed)
    for f in ("tids", "write_start", "write_end", "fsync_end", "bytes_written"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert list(a.tids) == [0, 1, 2, 3, 4, 7, 9] and a.bytes_written[0] == 100
    assert not a.wrote[5] and a.fsync_end[5] == np.iinfo(np.int64).min
    for x, y in zip(op_durations(grouped, Op.FSYNC), op_durations(mixed, Op.FSYNC)):
        np.testing.assert_array_equal(x, y)
    c = commits(L1)
    assert model.measures(grouped, c, "iozone") == model.measures(mixed, c, "iozone")


def test_stonewalling_counts_each_thread_up_to_its_first_record_after_the_first_finisher():
    """IOzone's default: thread 0's write loop ends at 40; thread 1 checks the flag before
    its record at 60 (counts 2 records, 30 bytes, over 60 - 0); thread 2 starts its first
    record at 45, after the flag: 0 bytes; thread 0 counts all of its own."""
    rows = [(0, Op.WRITE, 0, 20, 10), (0, Op.WRITE, 20, 40, 10),
            (1, Op.WRITE, 0, 30, 15), (1, Op.WRITE, 30, 35, 15), (1, Op.WRITE, 60, 90, 15),
            (2, Op.WRITE, 45, 80, 10), (2, Op.WRITE, 80, 100, 10)]
    m = model.measures(trace(rows), None, "iozone", fsync=False)
    assert m["throughput_stonewall"] == pytest.approx(20 / 40e-9 + 30 / 60e-9 + 0)
    # without stonewalling every thread counts all of its bytes over its whole write op
    assert m["throughput"] == pytest.approx(20 / 40e-9 + 45 / 90e-9 + 20 / 55e-9)


def _same(a: dict, b: dict):
    assert list(a) == list(b)
    for k in a:
        assert a[k] == b[k] or (np.isnan(a[k]) and np.isnan(b[k])), k


@pytest.mark.parametrize("kw", [dict(threads=64, policy="ext4", device="hdd7200"),
                                dict(threads=32, policy="delayjc:window=4ms"),
                                dict(threads=16, policy="nojc"), dict(threads=16, fsync=False),
                                dict(threads=8, workload="metarates", files=2)])
def test_measures_of_many_repetitions_equal_each_alone(kw):
    """measures_reps (one numpy pass over a simulated point's repetitions) gives measures()'s
    numbers to the last bit, with the bytes each thread wrote as S too."""
    from abtlab.sim import core, params
    p = params.make(**kw)
    runs = core.run_reps(p, list(range(12)))
    ops, coms = np.stack([r.ops for r in runs]), [r.commits for r in runs]
    from abtlab.model.measures import _shared_layout
    assert p.workload != "iozone" or _shared_layout(ops) is not None   # one pass, not a loop
    for size in (p.file_size, None):
        got = measures_reps(ops, coms, p.workload, file_size=size, fsync=p.fsync)
        for r, g in zip(runs, got):
            _same(model.measures(r.ops, r.commits, p.workload, file_size=size,
                                          fsync=p.fsync), g)


def test_measures_of_repetitions_with_other_layouts_are_measured_one_by_one():
    """Records in another order in one repetition (or not grouped by thread): each
    repetition is measured alone, with the same numbers."""
    one = trace(FIG5)
    other = one[::-1].copy()
    other["t_start_ns"] = other["t_start_ns"] + 7
    other["t_end_ns"] = other["t_end_ns"] + 7
    ops = np.stack([one, other])
    coms = [commits((100, 200)), commits((107, 207), (300, 310))]
    got = measures_reps(ops, coms, "iozone")
    for o, c, g in zip(ops, coms, got):
        _same(model.measures(o, c, "iozone"), g)
    with pytest.raises(ConfigError):
        measures_reps(ops, coms[:1], "iozone")


def test_measures_of_many_repetitions_do_not_depend_on_the_chunk_size(monkeypatch):
    import sys
    from abtlab.sim import core, params
    mod = sys.modules["abtlab.model.measures"]
    p = params.make(threads=16, device="hdd7200")
    runs = core.run_reps(p, list(range(10)))
    ops, coms = np.stack([r.ops for r in runs]), [r.commits for r in runs]
    whole = measures_reps(ops, coms, "iozone", file_size=p.file_size)
    monkeypatch.setattr(mod, "_CELLS", 1)       # one repetition at a time
    for a, b in zip(whole, measures_reps(ops, coms, "iozone", file_size=p.file_size)):
        _same(a, b)
