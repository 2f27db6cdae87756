"""The simulator on the paper's quantity: the write op timed, why each write waited (its
own record of lock waits), IOzone's poll start, the journal thread's CPU and the paper's
disk with its write cache (abtlab.sim; simulated data)."""
from __future__ import annotations

import numpy as np
import pytest

import abtlab.sim as sim
from abtlab.errors import ConfigError
from abtlab.sim import devices
from abtlab.trace import Op

FIXED = dict(cpu_dist="fixed", dev_dist="fixed")


def _writes(r):
    w = r.ops[r.ops["op"] == Op.WRITE]
    tids = np.unique(w["tid"])
    q = np.array([w["t_start_ns"][w["tid"] == t].min() for t in tids])
    e = np.array([w["t_end_ns"][w["tid"] == t].max() for t in tids])
    return tids, q, e


@pytest.mark.parametrize("policy", ["ext4", "nojc", "delayjc:window=16ms"])
def test_evidence_counts_partition_the_writers(policy):
    r = sim.simulate_point(reps=1, seed=4, threads=256, cores=4, device="hdd7200-nocache",
                           policy=policy)[0]
    s = r.scalars
    assert s["unblocked_threads"] + s["journal_blocked_full"] + s["journal_blocked_partial"] == 256
    assert "write_wait_cpu" not in s and s["write_wait_dirty"] == 0.0
    if policy == "nojc":
        assert s["unblocked_threads"] == 256 and s["write_wait_journal"] == 0.0
    elif policy == "ext4":
        assert s["unblocked_threads"] < 256 and s["write_wait_t_locked"] > 0


def test_a_blocked_writer_waited_while_a_commit_held_the_lock():
    """Every writer the simulator calls blocked has a write op that spans a commit's
    start, and (whole-commit lock) every writer whose write op spans a commit's start
    while it still writes is blocked."""
    r = sim.simulate_point(reps=1, seed=1, threads=256, cores=4, device="hdd7200-nocache")[0]
    _, q, e = _writes(r)
    s, end = r.commits["start"], r.commits["end"]
    spans = ((q[:, None] < s[None, :]) & (e[:, None] > s[None, :])).any(axis=1)
    inside = ((q[:, None] >= s[None, :]) & (q[:, None] < end[None, :])).any(axis=1)
    blocked = 256 - r.scalars["unblocked_threads"]
    assert blocked > 0
    assert np.count_nonzero(spans | inside) >= blocked


def test_poll_start_spreads_the_release_over_one_poll_period():
    kw = dict(threads=64, cores=64, file_size=32768, record_size=32768, policy="nojc", **FIXED)
    first = {}
    for start in ("barrier", "poll"):
        r = sim.simulate_point(reps=1, seed=3, start=start, poll_us=500.0, **kw)[0]
        first[start] = _writes(r)[1]
    assert np.ptp(first["barrier"]) == 0
    spread = np.ptp(first["poll"]) * 1e-3
    assert 400 < spread <= 500 + 2 * 2.0       # up to one period, plus the poll's CPU


@pytest.mark.parametrize("cv", [0.1, 0.0])
def test_poll_phases_leave_the_other_draws_alone(cv):
    from abtlab.sim import core
    a, b = (sim.make(threads=16, cores=2, start=s, cpu_cv=cv) for s in ("barrier", "poll"))
    prog = core.program(a)
    da, db = core.draws(a, prog, [5, 6], 40), core.draws(b, prog, [5, 6], 40)
    bar = prog == 12                               # Op.BARRIER
    assert np.array_equal(da[0], db[0]) and np.array_equal(da[2], db[2])
    assert np.array_equal(da[1][:, :, ~bar], db[1][:, :, ~bar])
    phase = db[1][:, :, bar, 1]
    assert np.all((phase >= 0) & (phase < 1)) and np.ptp(phase) > 0.5


def test_journal_thread_cpu_delays_the_commit_behind_busy_cores():
    """One core: with the journal thread at the back of the run queue, a commit starts
    only after the writers queued before it; at the front, after one write at most."""
    kw = dict(threads=64, cores=1, device="hdd7200-nocache", quantum_us=1e6, **FIXED)
    free = sim.simulate_point(reps=1, seed=0, **kw)[0].commits["start"][0]
    front = sim.simulate_point(reps=1, seed=0, commit_cpu_us=50.0, **kw)[0].commits["start"][0]
    back = sim.simulate_point(reps=1, seed=0, commit_cpu_us=50.0, jbd2_front=False,
                              **kw)[0].commits["start"][0]
    write_us = 4 * (4.0 + 0.8 * 32)
    assert 50e3 <= front - free <= (50 + write_us + 30) * 1e3
    assert back - free > 20 * write_us * 1e3


def test_cached_disk_takes_a_write_back_at_interface_speed_and_flushes_at_commit():
    kw = dict(threads=1, cores=1, device="hdd7200", file_size=131072, **FIXED)
    r = sim.simulate_point(reps=1, seed=0, **kw)[0]
    dev = sim.DEVICES["hdd7200"]
    f = r.ops[r.ops["op"] == Op.FSYNC][0]
    c = r.commits
    wb = dev["flush_fixed_us"] + dev["flush_us_per_kib"] * 128        # into the cache
    assert (c["start"][0] - f["t_start_ns"]) * 1e-3 == pytest.approx(8.0 * 3.3 / 3.3 + wb, rel=0.05)
    media = dev["destage_fixed_us"] + 2 * dev["destage_us_per_file"] + dev["media_us_per_kib"] * 16
    # the commit: its log into the cache, a flush (the data and the log written back), the record
    assert (c["end"][0] - c["start"][0]) * 1e-3 == pytest.approx(
        media + dev["commit_fixed_us"], rel=0.1)
    nocache = sim.simulate_point(reps=1, seed=0, **{**kw, "device": "hdd7200-nocache"})[0]
    assert nocache.commits["start"][0] - f["t_start_ns"] > 2 * (c["start"][0] - f["t_start_ns"])


def test_cached_disk_table_matches_the_drive_model(built_native):
    """hdd7200's write-back and record costs are those of abt_disk.h's own model (the
    table rounds the fit: 6944 -> 6900, 8362.6 -> 8360, 34.17 -> 34)."""
    fit = devices.fit_cache("hdd7200")
    dev = devices.DEVICES["hdd7200"]
    for k in ("destage_fixed_us", "commit_fixed_us", "destage_us_per_file"):
        assert dev[k] == pytest.approx(fit[k], rel=0.01), k
    assert set(devices.SOURCES) <= set(dev)


def test_bad_start_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match="start"):
        sim.make(start="fork")
    with pytest.raises(ConfigError, match="commit_cpu_us"):
        sim.make(commit_cpu_us=-1.0)


@pytest.mark.parametrize("kw", [dict(), dict(policy="delayjc:window=4ms"),
                                dict(commit_lock_us=200.0, shadow_wait=True),
                                dict(start="poll", commit_cpu_us=1500.0, device="hdd7200")])
def test_the_evidence_counts_are_model_waits_on_the_lock_waits(kw):
    """The simulator's counts are what model.waits gives for its lock waits as t_locked
    off-CPU intervals (the general path, with its joins)."""
    from abtlab.model.waits import wait_measures
    from abtlab.sim import core
    p = sim.make(threads=128, cores=2, device=kw.pop("device", "hdd7200-nocache"), **kw)
    prog = core.program(p)
    times, _, _ = core.run_raw(p, [7], prog)
    r = core.run_reps(p, [7])[0]
    ns = np.rint(times[0] * 1e3).astype(np.int64)
    w = ns[:, 2] >= 0
    offcpu = {"pid": r.ops["pid"][w].astype(np.int64), "t_out": ns[w, 2], "t_in": ns[w, 3],
              "cause": np.full(int(w.sum()), "t_locked", object)}
    want = wait_measures(r.ops, offcpu, r.commits)
    want.pop("write_wait_cpu")
    got = {k: r.scalars[k] for k in want}
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_the_paper_machine_preset_shows_the_papers_signature():
    """examples/sim_paper_machine.toml at the paper's cell (docs/guide/simulator.md):
    ext4's write op slower at 3.3 GHz, fewer writers unblocked, NOJC and delayJC not."""
    from abtlab import about
    preset = about.EXAMPLES / "sim_paper_machine.toml"
    kw = dict(params=str(preset), device="hdd7200", threads=256, file_size=131072,
              record_size=32768)

    def mean(policy, f, var):
        rs = sim.simulate_point(reps=3, seed=0, policy=policy, freq_ghz=f, **kw)
        return np.mean([r.scalars[var] for r in rs])
    ext4 = [mean("ext4", f, "throughput") for f in (1.6, 3.3)]
    assert ext4[1] / ext4[0] < 0.85
    assert mean("ext4", 3.3, "unblocked_threads") < 0.7 * mean("ext4", 1.6, "unblocked_threads")
    nojc = [mean("nojc", f, "throughput") for f in (1.6, 3.3)]
    assert nojc[1] / nojc[0] > 1.5
    assert mean("delayjc:window=16ms", 3.3, "throughput") > 2 * ext4[1]
