"""Simulator invariants (abtlab.sim): durability order, locking, policies, determinism."""
from __future__ import annotations

import numpy as np
import pytest

import abtlab.sim as sim
from abtlab.data import schema
from abtlab.errors import ConfigError
from abtlab.trace import Op

SMALL = dict(threads=24, cores=2)
SMALL_NO_THREADS = dict(cores=2)


def _covering_ok(r):
    """Every fsync returns after the end of the first commit that started after the
    thread's last metadata change before it (the commit of its transaction)."""
    ops, c = r.ops, r.commits
    order = np.argsort(c["start"])
    s, e = c["start"][order], c["end"][order]
    for tid in np.unique(ops["tid"]):
        mine = ops[ops["tid"] == tid]
        for f in mine[mine["op"] == Op.FSYNC]:
            meta = mine[np.isin(mine["op"], [Op.OPEN, Op.WRITE]) & (mine["t_end_ns"] <= f["t_start_ns"])]
            last = meta["t_end_ns"].max()
            k = np.searchsorted(s, last, side="left")
            assert k < s.size, "an fsync returned but its transaction was never committed"
            assert f["t_end_ns"] >= e[k]


@pytest.mark.parametrize("kw", [dict(workload="iozone", device="hdd7200-nocache"),
                                dict(workload="metarates", files=3),
                                dict(workload="iozone", policy="delayjc:window=2ms"),
                                dict(workload="metarates", files=2, policy="delayjc:adaptive"),
                                dict(workload="iozone", policy="batch:min_us=100,max_us=3000"),
                                dict(workload="iozone", data_flush="commit", device="hdd7200-nocache"),
                                dict(workload="iozone", commit_lock_us=20.0),
                                dict(workload="metarates", files=2, data_flush="commit",
                                     commit_lock_us=0.0)])
def test_fsync_never_returns_before_its_commit(kw):
    for r in sim.simulate_point(reps=3, seed=5, **SMALL, **kw):
        assert len(r.commits["start"]) >= 1
        _covering_ok(r)


def test_commits_do_not_overlap_and_lock_writes():
    r = sim.simulate_point(reps=1, seed=2, threads=64, cores=4, device="hdd7200-nocache", freq_ghz=3.3)[0]
    s, e = r.commits["start"], r.commits["end"]
    assert np.all(s[1:] >= e[:-1])
    w = r.ops[r.ops["op"] == Op.WRITE]
    for a, b in zip(s, e):
        inside = (w["t_start_ns"] > a) & (w["t_start_ns"] < b)
        assert np.all(w["t_end_ns"][inside] >= b)   # a write arriving during a commit waits it out


def test_fsync_commits_the_block_allocation_of_its_write_back():
    """delalloc: the write-back allocates blocks in the transaction running then. Two
    threads on one core: thread 1's fsync requests commit 0; thread 0's write-back starts
    while commit 0 runs, so its allocation is in transaction 1, which it must commit."""
    kw = dict(threads=2, cores=1, file_size=65536, record_size=32768, fsync_cpu_us=500.0,
              quantum_us=100000.0, cpu_dist="fixed", dev_dist="fixed", device="loop")
    r = sim.simulate_point(reps=1, **kw)[0]
    f = r.ops[r.ops["op"] == Op.FSYNC]
    late = f[np.argmax(f["t_start_ns"])]
    s, e = r.commits["start"], r.commits["end"]
    assert s.size == 2 and late["t_start_ns"] < s[0] < late["t_end_ns"]
    assert late["t_end_ns"] == e[1]                  # it waited for transaction 1's commit
    old = sim.simulate_point(reps=1, fsync_allocates=False, **kw)[0]   # writes only
    f = old.ops[old.ops["op"] == Op.FSYNC]
    assert old.commits["end"].size == 1 and f["t_end_ns"].max() > old.commits["end"][0]


def test_short_lock_lets_writes_through_a_running_commit():
    kw = dict(threads=64, cores=4, device="hdd7200-nocache", data_flush="commit", seed=2)
    whole = sim.simulate_point(reps=1, **kw)[0]
    brief = sim.simulate_point(reps=1, commit_lock_us=10.0, **kw)[0]

    def through(r):     # writes that start and end inside one commit
        w = r.ops[r.ops["op"] == Op.WRITE]
        return sum(int(np.sum((w["t_start_ns"] > a + 10_000) & (w["t_end_ns"] < b)))
                   for a, b in zip(r.commits["start"], r.commits["end"]))
    assert through(whole) == 0 and through(brief) > 0


def test_shadow_wait_holds_writes_until_the_commits_log_is_written():
    """With a short T_LOCKED a write arriving during a commit goes through; with the
    shadow wait it waits until the commit's log blocks are written: the commit's end
    less its record (here 5 ms), never to the end itself."""
    kw = dict(threads=64, cores=4, device="hdd7200-nocache", data_flush="commit", seed=2,
              commit_lock_us=10.0, device_overrides={"commit_record_us": 5000.0})
    brief = sim.simulate_point(reps=1, **kw)[0]
    shadow = sim.simulate_point(reps=1, shadow_wait=True, **kw)[0]

    def resumed(r):     # (writes started inside a commit, of them ending record_us before its end)
        w = r.ops[r.ops["op"] == Op.WRITE]
        n = held = 0
        for a, b in zip(r.commits["start"], r.commits["end"]):
            inside = (w["t_start_ns"] > a + 10_000) & (w["t_start_ns"] < b - 5_000_000)
            n += int(inside.sum())
            held += int(np.sum(inside & (w["t_end_ns"] >= b - 5_000_000) & (w["t_end_ns"] < b)))
        return n, held
    (n0, held0), (n1, held1) = resumed(brief), resumed(shadow)
    assert n0 > 0 and held0 < n0 and n1 > 0 and held1 == n1


def test_commit_writes_back_member_data_in_ordered_mode():
    kw = dict(threads=1, cores=1, device="hdd7200-nocache", cpu_dist="fixed", dev_dist="fixed")
    own, shared = (sim.simulate_point(reps=1, data_flush=m, **kw)[0] for m in ("fsync", "commit"))
    dev = sim.DEVICES["hdd7200-nocache"]
    journal = dev["commit_fixed_us"] + dev["commit_us_per_block"] * 3    # 2 + one handle
    data = dev["commit_us_per_file"] + dev["flush_us_per_kib"] * 128
    for r, want in ((own, journal), (shared, journal + data)):
        c = r.commits
        assert (c["end"][0] - c["flushing"][0]) * 1e-3 == pytest.approx(want, rel=1e-6)


def test_batched_repetitions_equal_single_runs():
    p = sim.make(threads=16, cores=2, policy="delayjc:adaptive")
    batch = sim.run_reps(p, [3, 4])
    for seed, r in zip((3, 4), batch):
        one = sim.run_once(p, seed)
        assert np.array_equal(one.ops, r.ops) and one.scalars == r.scalars


def test_threaded_repetitions_equal_one_thread():
    """Repetitions split over threads give exactly what one thread gives."""
    p = sim.make(threads=16, cores=2, device="hdd7200-nocache")
    seeds = np.arange(20, 41)
    one, three = sim.run_raw(p, seeds, jobs=1), sim.run_raw(p, seeds, jobs=3)
    for a, b in zip(one, three):
        assert np.array_equal(a, b)
    with pytest.raises(ConfigError) as e:
        sim.run_raw(p, seeds, jobs=0)
    assert e.value.field == "jobs"


def test_params_from_dict_and_toml(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text("cores = 3\nopen_us = 99.0\n[device_overrides]\ncommit_fixed_us = 1234.0\n")
    p = sim.make(params=str(f), threads=5)
    assert (p.cores, p.open_us, p.threads) == (3, 99.0, 5)
    assert p.device_params()["commit_fixed_us"] == 1234.0
    assert sim.make(params={"cores": 3}, cores=1).cores == 1         # keywords win
    ds = sim.simulate(reps=1, params=str(f), threads=[4, 6], cpu_dist="fixed")
    assert ds.attrs["sim_cores"] == 3 and list(ds.threads.values) == [4, 6]
    bad = tmp_path / "bad.toml"
    bad.write_text("cores = [")
    for src in (str(bad), str(tmp_path / "missing.toml")):
        with pytest.raises(ConfigError) as e:
            sim.make(params=src)
        assert e.value.field == "params"
    with pytest.raises(ConfigError) as e:
        sim.make(params={"warp": 1})
    assert e.value.field == "warp"


def test_nojc_never_blocks():
    for wl in ("iozone", "metarates"):
        for r in sim.simulate_point(reps=3, seed=1, policy="nojc", workload=wl, files=2, **SMALL):
            assert len(r.commits["start"]) == 0
            assert r.scalars["commits"] == 0 and r.scalars["blocked_full"] == 0
            assert r.scalars["threads_clear_of_commits"] == SMALL["threads"]


@pytest.mark.parametrize("kw", [dict(workload="iozone", threads=64, device="hdd7200-nocache"),
                                dict(workload="iozone", threads=32, device="loop", freq_ghz=1.6),
                                dict(workload="metarates", threads=16, files=4)])
@pytest.mark.parametrize("delay", ["delayjc:window=16ms", "delayjc:window=1ms", "delayjc:adaptive"])
def test_delayjc_commits_no_more_than_ext4(kw, delay):
    for seed in range(3):
        base = sim.simulate_point(reps=1, seed=seed, policy="ext4", **kw)[0]
        late = sim.simulate_point(reps=1, seed=seed, policy=delay, **kw)[0]
        assert late.scalars["commits"] <= base.scalars["commits"]


def test_same_seed_same_output_and_seed_matters():
    a, b = (sim.simulate_point(reps=1, seed=7, **SMALL)[0] for _ in range(2))
    c = sim.simulate_point(reps=1, seed=8, **SMALL)[0]
    assert np.array_equal(a.ops, b.ops) and a.scalars == b.scalars
    assert all(np.array_equal(a.commits[k], b.commits[k]) for k in a.commits)
    assert not np.array_equal(a.ops, c.ops)


def test_fixed_distributions_give_no_variation():
    rs = sim.simulate_point(reps=3, seed=0, cpu_dist="fixed", dev_dist="fixed", **SMALL)
    assert rs[0].scalars == rs[1].scalars == rs[2].scalars


def test_frequency_scales_cpu_not_device():
    slow, fast = (sim.simulate_point(reps=1, seed=0, policy="nojc", threads=1, cores=1,
                                     cpu_dist="fixed", dev_dist="fixed", nonscaling=0.0,
                                     freq_ghz=f)[0] for f in (1.65, 3.3))
    def dur(r, op):
        sel = r.ops[r.ops["op"] == op]
        return float(np.sum(sel["t_end_ns"] - sel["t_start_ns"]))
    assert dur(slow, Op.WRITE) == pytest.approx(2 * dur(fast, Op.WRITE), rel=1e-3)
    fs, ff = dur(slow, Op.FSYNC), dur(fast, Op.FSYNC)
    assert fs > ff and fs - ff == pytest.approx(8.0e3, rel=1e-2)   # only fsync's 8 us CPU part scales


def test_dilation_spins_an_fsyncs_cpu_after_it_returns():
    """Frequency by dilation (the backends spin after each call): an fsync's CPU runs at
    f_ref before its write-back, so its commit starts 300 us earlier at 1.65 GHz, and
    the thread spins the other 300 us after the commit: the same fsync duration. At
    f_ref dilation changes nothing."""
    kw = dict(threads=1, cores=1, cpu_dist="fixed", dev_dist="fixed", nonscaling=0.0,
              fsync_cpu_us=300.0, device="hdd7200-nocache", queue_depth=1)
    def run(**more):
        r = sim.simulate_point(reps=1, seed=0, **kw, **more)[0]
        f = r.ops[r.ops["op"] == Op.FSYNC][0]
        wait = (r.commits["start"][0] - f["t_start_ns"]) / 1e3    # until its commit starts
        return wait, (f["t_end_ns"] - f["t_start_ns"]) / 1e3
    (clock_wait, clock_dur), (dil_wait, dil_dur) = (run(freq_ghz=1.65, dilation=d)
                                                    for d in (False, True))
    assert clock_wait - dil_wait == pytest.approx(300.0, abs=1.0)
    assert dil_dur == pytest.approx(clock_dur, abs=1.0)
    assert run(freq_ghz=3.3, dilation=True) == run(freq_ghz=3.3, dilation=False)


def test_dataset_schema_and_labels():
    ds = sim.simulate(reps=2, policy=["ext4", "nojc"], freq_ghz=[1.6, 3.3], **SMALL)
    schema.validate(ds)
    assert ds.attrs["freq_mode"] == "simulated" and ds.attrs["backend"] == "sim"
    assert ds.sizes["rep"] == 2 and list(ds.policy.values) == ["ext4", "nojc"]
    assert int(ds.commits.sel(policy="nojc").sum()) == 0
    assert ds.sizes["commit"] == int(ds.commits.sel(policy="ext4").sum())
    assert ds.sizes["op"] == 8 * 24 * (2 + 4 + 2)   # runs x threads x (open, barrier, 4 writes, fsync, close)


def test_backend_runs_and_validates():
    from abtlab.backends import get
    from abtlab.backends.base import RunContext
    b = get("sim")
    assert b.available()
    r = b.run_point({"threads": 8, "policy": "delayjc:adaptive"},
                    RunContext(workdir=None, seed=1, options={"workload": "metarates", "cores": 2}))
    assert r.attrs["freq_mode"] == "simulated" and r.scalars["fsync_calls"] == 8
    with pytest.raises(ConfigError) as e:
        b.validate_point({"device": "floppy"})
    assert e.value.field == "device"


def test_backend_params_file_under_options(tmp_path):
    from abtlab.backends import get
    from abtlab.backends.base import RunContext
    f = tmp_path / "p.toml"
    f.write_text("cores = 3\nclose_us = 50.0\n")
    b = get("sim")
    r = b.run_point({"threads": 4}, RunContext(workdir=None, seed=0, options={"params": str(f)}))
    assert r.attrs["sim_cores"] == 3 and r.attrs["sim_close_us"] == 50.0   # file beats defaults
    r = b.run_point({"threads": 4}, RunContext(workdir=None, seed=0,
                                               options={"params": str(f), "cores": "2"}))
    assert r.attrs["sim_cores"] == 2                                       # options beat the file


@pytest.mark.parametrize("kw,field", [
    (dict(threads=0), "threads"), (dict(record_size=1 << 20), "record_size"),
    (dict(device="floppy"), "device"), (dict(policy="bogus"), "policy"),
    (dict(cpu_dist="cauchy"), "cpu_dist"), (dict(freq_ghz=-1.0), "freq_ghz"),
    (dict(nonscaling=2.0), "nonscaling"), (dict(workload="fio"), "workload"),
    (dict(warp=9), "warp"), (dict(device_overrides={"x": 1}), "device_overrides.x"),
    (dict(quantum_us=0), "quantum_us"), (dict(commit_lock_us=-1.0), "commit_lock_us"),
    (dict(data_flush="later"), "data_flush"), (dict(fsync_allocates="yes"), "fsync_allocates"),
    (dict(queue_depth=0), "queue_depth"), (dict(queue_depth=257), "queue_depth"),
    (dict(dilation="yes"), "dilation"), (dict(dilation=True, freq_ghz=4.0), "freq_ghz")])
def test_bad_parameters_name_the_field(kw, field):
    with pytest.raises(ConfigError) as e:
        sim.make(**kw)
    assert e.value.field == field
    with pytest.raises(ConfigError) as e:
        sim.simulate(reps=0)
    assert e.value.field == "reps"


def test_queue_depth_serves_requests_at_once():
    """Depth 1: one FIFO queue, so the device is never busy with two requests; a deep queue
    serves data flushes side by side, so no-journal fsyncs wait less."""
    kw = dict(threads=32, cores=2, device="hdd7200-nocache", policy="nojc", cpu_dist="fixed",
              dev_dist="fixed")
    fifo = sim.simulate_point(reps=1, seed=1, queue_depth=1, **kw)[0]
    deep = sim.simulate_point(reps=1, seed=1, queue_depth=32, **kw)[0]
    assert deep.scalars["mean_fsync"] < 0.5 * fifo.scalars["mean_fsync"]
    assert fifo.attrs["sim_queue_depth"] == 1 and deep.attrs["sim_queue_depth"] == 32
    for r in (fifo, sim.simulate_point(reps=1, seed=1, **{**kw, "policy": "ext4"})[0]):
        f = r.ops[r.ops["op"] == Op.FSYNC]
        assert f.size == 32


def test_simulate_is_a_durable_sweep_that_resumes(tmp_path, monkeypatch):
    """simulate(out=) keeps every finished point, its repetitions as one part; stopped
    after its first, it resumes to the same dataset as an unbroken run (common seeds:
    rep r uses seed + r everywhere)."""
    from abtlab.sim.backend import SimBackend
    from abtlab.data import store
    from abtlab.errors import RunError
    kw = dict(reps=2, seed=3, threads=[4, 8], freq_ghz=[1.6, 3.3], **SMALL_NO_THREADS)
    whole = sim.simulate(**kw)
    assert whole.attrs["kernel"].startswith("simulated") and whole.attrs["cpu"] == "simulated, 2 cores"
    out = tmp_path / "s.nc"
    real, calls = SimBackend.run_group, []

    def stop_after_one(self, runs, workdir):
        calls.append(len(runs))
        if len(calls) > 1:
            raise RunError("stopped")
        return real(self, runs, workdir)
    monkeypatch.setattr(SimBackend, "run_group", stop_after_one)
    with pytest.raises(RunError):
        sim.simulate(out=out, **kw)
    assert calls == [2, 2] and not out.exists()
    parts = store.read_parts(out)
    assert list(parts) == ["p00000-r0000-0001.h5"] and parts["p00000-r0000-0001.h5"].reps.tolist() == [0, 1]
    monkeypatch.setattr(SimBackend, "run_group", real)
    resumed = sim.simulate(out=out, resume=True, **kw)
    assert out.exists() and not store.parts_dir(out).exists()
    assert np.array_equal(resumed.throughput.values, whole.throughput.values)
    # the reps of one point ran as one group, seeded seed + r, as simulate_point does
    one = sim.simulate_point(reps=2, seed=3, threads=4, freq_ghz=1.6, **SMALL_NO_THREADS)
    assert [r.scalars["throughput"] for r in one] == list(
        whole.throughput.sel(threads=4, freq_ghz=1.6).values.ravel())


def test_simulate_without_traces_keeps_the_scalars():
    a = sim.simulate(reps=1, threads=[4], **SMALL_NO_THREADS)
    b = sim.simulate(reps=1, threads=[4], traces=False, **SMALL_NO_THREADS)
    assert a.sizes["op"] > 0 and b.sizes["op"] == 0
    assert float(a.throughput.squeeze()) == float(b.throughput.squeeze())
    with pytest.raises(ConfigError) as e:
        sim.simulate(reps=1, threads=[4], traces="maybe", **SMALL_NO_THREADS)
    assert e.value.field == "traces"


def test_dioread_nolock_converts_in_a_later_transaction():
    """dioread=lock (3.4's write-back): every fsync's allocation joins the transaction
    running when its write-back starts, so 16 writers that all reach fsync before the
    first data flush ends share one commit. nolock (the default since 5.6): the
    conversion joins the transaction running when the data I/O completes, and writers
    whose data completes after a commit started need another one."""
    kw = dict(threads=16, cores=1, device="hdd7200-nocache", queue_depth=1, cpu_dist="fixed",
              dev_dist="fixed", file_size=131072, record_size=32768)
    lock = sim.simulate_point(reps=1, seed=1, dioread="lock", **kw)[0]
    nolock = sim.simulate_point(reps=1, seed=1, dioread="nolock", **kw)[0]
    assert lock.scalars["commits"] == 1 and nolock.scalars["commits"] >= 2
    with pytest.raises(ConfigError) as e:
        sim.make(dioread="maybe")
    assert e.value.field == "dioread"


def test_shared_transfer_sends_requests_through_one_rate():
    """4 fsyncs of 1 MiB at once on a device serving 4 requests: each on its own server,
    they end together; with a shared transfer (a bandwidth-limited device) each waits
    for the transfers before it, 10.24 ms of 1 MiB apart. At depth 1 it changes nothing."""
    kw = dict(threads=4, cores=4, cpu_dist="fixed", dev_dist="fixed", policy="nojc",
              file_size=1 << 20, record_size=1 << 15, queue_depth=4,
              device_overrides={"flush_fixed_us": 10000.0, "flush_us_per_kib": 10.0})
    def ends(**more):
        r = sim.simulate_point(reps=1, seed=0, **{**kw, **more})[0]
        return np.sort(r.ops[r.ops["op"] == Op.FSYNC]["t_end_ns"] / 1e3)
    apart = np.diff(ends(shared_transfer=True))
    assert np.ptp(ends()) < 100 and apart == pytest.approx([10240.0] * 3, abs=100)
    assert np.array_equal(ends(queue_depth=1), ends(queue_depth=1, shared_transfer=True))


def test_run_takes_any_simulator_parameter_as_an_option():
    """`abtlab run sim -o start=poll`: every SimParams field is a run option; others are
    refused naming the option, before anything runs."""
    import abtlab
    ds = abtlab.run("sim", threads=8, reps=1, freq="1.6", start="poll", commit_cpu_us=500.0)
    assert ds.attrs["sim_start"] == "poll" and float(ds.attrs["sim_commit_cpu_us"]) == 500.0
    with pytest.raises(ConfigError) as e:
        abtlab.run("sim", threads=8, reps=1, warp=1)
    assert e.value.field == "warp" and "SimParams" in e.value.accepted


def test_a_built_in_backend_is_found_without_reading_entry_points(monkeypatch):
    """`abtlab run sim` pays no entry-point scan: that is for names not built in."""
    import importlib.metadata
    from abtlab import backends

    def scan(**kw):
        raise AssertionError("entry points read for a built-in backend")
    monkeypatch.setattr(importlib.metadata, "entry_points", scan)
    monkeypatch.setattr(backends, "_entry_points_loaded", False)
    assert backends.get("sim").name == "sim"
    with pytest.raises(AssertionError):     # an unknown name looks for a plugin
        backends.get("no-such-backend")
