"""Calibration recovers known simulator parameters from simulated traces."""
from __future__ import annotations

import pytest

import abtlab.sim as sim
from abtlab.model import fit_sim_params

FIXED = dict(cpu_dist="fixed", dev_dist="fixed", nonscaling=0.0)


def test_cpu_costs_and_flush_from_one_thread():
    p = sim.make(threads=1, cores=1, device="loop", freq_ghz=1.65, **FIXED)
    r = sim.run_once(p, 0)
    fit = fit_sim_params(r.ops, r.commits, freq_ghz=1.65, f_ref_ghz=3.3, nonscaling=0.0)
    assert fit["open_us"] == pytest.approx(p.open_us, rel=1e-3)
    assert fit["close_us"] == pytest.approx(p.close_us, rel=1e-3)
    write = p.write_fixed_us + p.write_us_per_kib * p.record_size / 1024
    assert fit["write_fixed_us"] == pytest.approx(write, rel=1e-3)
    dev = p.device_params()
    flush = dev["flush_fixed_us"] + dev["flush_us_per_kib"] * p.file_size / 1024
    # the gap holds the fsync CPU part too: 8 us at 3.3 GHz, doubled at 1.65 GHz
    assert fit["flush_us"] == pytest.approx(flush + 2 * p.fsync_cpu_us, rel=1e-3)


def test_commit_cost_line_from_many_commits():
    p = sim.make(workload="metarates", threads=12, files=6, cores=2, device="hdd7200-nocache", **FIXED)
    r = sim.run_once(p, 1)
    fit = fit_sim_params(r.ops, r.commits)
    dev = p.device_params()
    assert fit["commit_count"] >= 3
    assert fit["commit_fixed_us"] == pytest.approx(dev["commit_fixed_us"], rel=1e-3)
    assert fit["commit_us_per_block"] == pytest.approx(dev["commit_us_per_block"], rel=1e-3)
    assert fit["dev_cv"] == pytest.approx(0.0, abs=1e-6)


def test_commit_spread_is_seen():
    p = sim.make(workload="metarates", threads=12, files=6, cores=2, dev_cv=0.3)
    r = sim.run_once(p, 1)
    assert 0.1 < fit_sim_params(r.ops, r.commits)["dev_cv"] < 0.6


@pytest.mark.parametrize("kw", [dict(workload="iozone", threads=64, cores=2, device="loop"),
                                dict(workload="metarates", threads=12, files=6, cores=2,
                                     device="hdd7200-nocache")])
def test_journal_blocks_per_handle(kw):
    """Files share metadata blocks, so real commits log well under a block per handle;
    the estimate comes back from simulated traces with a known value."""
    p = sim.make(blocks_per_handle=0.4, **kw, **FIXED)
    r = sim.run_once(p, 2)
    assert r.commits["handles"].sum() > r.commits["handles"].size      # commits share handles
    assert fit_sim_params(r.ops, r.commits)["blocks_per_handle"] == pytest.approx(0.4, rel=0.05)


def _round_robin(threads, cores, writes, cpu_ns):
    """Op records of threads that each write `writes` times then fsync, on `cores` cores
    taking turns one write a slice: a thread waits in its write for the others' turns
    (its first write starts when it first runs, as after IOzone's barrier)."""
    import numpy as np

    from abtlab.trace import RECORD_DTYPE, Op
    recs, last, step = [], {}, 0
    left = {t: writes for t in range(threads)}
    while any(left.values()):
        ready = [t for t in range(threads) if left[t]]
        turn = [ready[(step * cores + k) % len(ready)] for k in range(min(cores, len(ready)))]
        for t in turn:
            end = (step + 1) * cpu_ns
            recs.append((0, t, int(Op.WRITE), 0, 32768, last.get(t, step * cpu_ns), end))
            last[t], left[t] = end, left[t] - 1
            if not left[t]:
                recs.append((0, t, int(Op.FSYNC), 0, 0, end, end + 1000))
        step += 1
    return np.array(recs, RECORD_DTYPE)


def test_write_cpu_from_busy_cores_when_writes_wait_for_them():
    """16 threads on 2 cores, 100 us of CPU a write: a write's median duration is its
    wait for the other 14 threads' turns (800 us). With the cores, the fit takes the busy
    cores' time per write instead."""
    from abtlab.model.calibrate import busy_write_us
    ops = _round_robin(threads=16, cores=2, writes=10, cpu_ns=100_000)
    # without the cores, the quiet write op (first run to last write, per write)
    # exact: the 10th percentile of the waits (the median would be 735, the 20th 715)
    assert fit_sim_params(ops, None)["write_fixed_us"] == pytest.approx(705.0, abs=1e-9)
    assert busy_write_us(ops, 2) == pytest.approx(100.0, abs=1e-9)
    assert fit_sim_params(ops, None, cores=2)["write_fixed_us"] == pytest.approx(100.0, abs=1e-9)
    assert busy_write_us(ops, 16) != busy_write_us(ops, 16)          # no waiting: nan


def test_write_cpu_is_the_write_op_when_writes_do_not_wait():
    """Each thread's clock starting when it runs (abt-iozone's barrier, the simulator's
    polled start without a timer), a write op is its writes' CPU."""
    p = sim.make(threads=8, cores=1, device="hdd7200-nocache", start="poll", poll_us=0.0,
                 poll_cpu_us=0.0, **FIXED)
    r = sim.run_once(p, 0)
    fit = fit_sim_params(r.ops, r.commits, cores=1)
    write = p.write_fixed_us + p.write_us_per_kib * 32
    assert fit["write_fixed_us"] == pytest.approx(write, rel=1e-3)
