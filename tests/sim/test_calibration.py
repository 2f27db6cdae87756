"""Calibration of the simulator from a run dataset (abtlab.sim.calibration, `abtlab calibrate`)."""
from __future__ import annotations

import pytest

import abtlab.sim as sim
from abtlab.data import store
from abtlab.cli import main
from abtlab.errors import ConfigError
from abtlab.sim.calibration import calibrate, to_toml

TRUE = dict(threads=4, cores=4, cpu_dist="fixed", dev_dist="fixed", nonscaling=0.0,
            open_us=40.0, write_fixed_us=25.0, write_us_per_kib=0.0, close_us=6.0)
# abt-iozone's barrier: each thread takes its clock when it runs after the release
RUNS_CLOCK = dict(start="poll", poll_us=0.0, poll_cpu_us=0.0)


@pytest.fixture(scope="module")
def run_ds():
    ds = sim.simulate(reps=2, freq_ghz=[1.65, 3.3], **TRUE)
    ds.attrs["freq_mode"] = "emulated"       # calibrate as from an emulated-frequency run
    ds.attrs["f_ref_ghz"] = 3.3
    return ds


def test_recovers_cpu_costs_at_the_reference_frequency(run_ds):
    p = calibrate(run_ds)
    for k in ("open_us", "close_us"):
        assert p[k] == pytest.approx(TRUE[k], rel=0.02), k
    write = p["write_fixed_us"] + p["write_us_per_kib"] * sim.make().record_size / 1024
    assert write == pytest.approx(TRUE["write_fixed_us"], rel=0.02)
    assert p["nonscaling"] == 0.0 and p["calibration"]["runs"] == 4
    assert p["device_overrides"]["commit_fixed_us"] > 0


def test_a_write_is_priced_per_kib_so_smaller_records_cost_less():
    """Calibrated on 32 KiB records whose CPU is their copy, a 4 KiB record costs an
    eighth (a cost read at one size and kept fixed priced every record the same)."""
    truth = {**TRUE, "write_fixed_us": 0.0, "write_us_per_kib": 2.5}
    ds = sim.simulate(reps=1, freq_ghz=[3.3], record_size=32 * 1024, **truth)
    ds.attrs.update(freq_mode="emulated", f_ref_ghz=3.3)
    p = sim.make(**{k: v for k, v in calibrate(ds).items() if k in ("write_fixed_us",
                                                                   "write_us_per_kib")},
                 record_size=4096, file_size=4096)
    assert p.write_fixed_us + p.write_us_per_kib * 4 == pytest.approx(10.0, rel=0.03)


def test_toml_round_trip_into_the_simulator(run_ds, tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(to_toml(calibrate(run_ds)))
    p = sim.make(params=str(f))
    assert p.open_us == pytest.approx(TRUE["open_us"], rel=0.02)
    assert sim.simulate_point(reps=1, params=str(f), threads=3)[0].scalars["fsync_calls"] == 3


def test_cli_writes_params(run_ds, tmp_path, capsys):
    path = tmp_path / "run.nc"
    store.save(run_ds, path)
    out = tmp_path / "params.toml"
    assert main(["calibrate", str(path), "--out", str(out)]) == 0
    assert sim.make(params=str(out)).close_us == pytest.approx(TRUE["close_us"], rel=0.02)
    assert main(["calibrate", str(tmp_path / "none.nc")]) == 2
    assert "run" in capsys.readouterr().err


def test_dataset_without_traces_is_rejected(run_ds):
    with pytest.raises(ConfigError) as e:
        calibrate(run_ds.drop_vars([v for v in run_ds.data_vars if v.startswith("op_")]))
    assert e.value.field == "dataset"


def test_cli_validates_against_the_run(run_ds, tmp_path, capsys):
    """--validate simulates the run's points with the fitted parameters and prints the
    error per point; the dataset stands in for a real IOzone run of the same points."""
    real = run_ds.copy()
    real.attrs["backend"] = "iozone"
    path = tmp_path / "run.nc"
    store.save(real, path)
    assert main(["calibrate", str(path), "--validate", "--reps", "2"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.strip().startswith(("1.65", "3.3"))]
    assert len(rows) == 2 and "throughput" in out and "%" in rows[0]
    assert "(3.3 / 1.65 GHz), measured vs simulated" in out and "unblocked_threads" in out
    assert "[device_overrides]" not in out              # no --out: the table only
    assert main(["calibrate", str(path), "--validate", "--reps", "0"]) == 2
    assert "reps" in capsys.readouterr().err


def test_cli_fits_and_validates_one_level_of_a_factor(run_ds, tmp_path, capsys):
    """--sel FACTOR=VALUE fits and validates only those runs; a level the run does not
    have is refused naming --sel and the levels it has."""
    real = run_ds.copy()
    real.attrs["backend"] = "iozone"
    path = tmp_path / "run.nc"
    store.save(real, path)
    assert main(["calibrate", str(path), "--sel", "freq_ghz=3.3", "--validate", "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert "1.65" not in out and "throughput" in out
    assert main(["calibrate", str(path), "--sel", "freq_ghz=2.0"]) == 2
    err = capsys.readouterr().err
    assert "sel" in err and "1.65, 3.3" in err
    assert main(["calibrate", str(path), "--sel", "warp=9"]) == 2
    assert "sel" in capsys.readouterr().err


def test_one_guest_of_several_machines_is_fitted_with_its_own_knobs(run_ds):
    """A dataset of several machines joins their attrs ('a | b'); picking one guest
    takes its vCPUs, disk depth, slices, elevator and write-back from its spec."""
    import xarray as xr
    from abtlab.data import schema
    ids = run_ds[schema.RUN_ID]
    guest = "guest:cpus=4,depth=256,kernel=6.1-legacy"
    ids = xr.concat([ids, ids], "machine")          # the same runs stand in for both
    two = run_ds.assign({schema.RUN_ID: ids.assign_coords(machine=[guest, "host"])})
    two.attrs.update(kernel_sched="default | cfs34", kernel_iosched="none | bfq",
                     mount_options="defaults | dioread_lock", guest_cpus="1 | 4",
                     guest_disk_queue_depth="1 | 256", kernel="6.1 | 6.1")
    p = calibrate(two, machine=guest)
    assert (p["cores"], p["queue_depth"], p["quantum_us"], p["dioread"]) == (4, 1, 2250.0, "lock")
    assert p["calibration"]["runs"] == 4
    p = calibrate(two)                                   # no machine picked: the joined attrs
    assert "quantum_us" not in p and p["dioread"] == "nolock"
    two.attrs.update(guest_disk="null_blk completion_nsec=12667000 mbps=125", cpu_logical=2)
    assert "shadow_wait" in calibrate(two, machine=guest)
    p = calibrate(two, machine="host")                   # not the guest's disk or vCPUs
    assert "shadow_wait" not in p and p["cores"] == 2


def test_a_guest_runs_cores_and_disk_depth_are_the_guests(run_ds):
    """A guest run was made on the guest's vCPUs and in-guest disk, not on the host's
    cores; a dataset of several machines (joined attrs) gives neither."""
    ds = run_ds.copy()
    ds.attrs.update(cpu_logical=2, guest_cpus="4", guest_disk_queue_depth="256")
    p = calibrate(ds)
    assert p["cores"] == 4 and p["queue_depth"] == 256
    ds.attrs.update(kernel_iosched="bfq")       # one process's queue at a time
    assert calibrate(ds)["queue_depth"] == 1
    ds.attrs.update(guest_cpus="1 | 4", guest_disk_queue_depth="1 | 256", kernel_iosched="none")
    p = calibrate(ds)
    assert p["cores"] == 2 and "queue_depth" not in p


def test_a_guest_disk_is_taken_from_its_settings_not_fitted(run_ds):
    """In virtual time the in-guest null_blk's latency is a timer: calibration uses its
    numbers (one completion a flush, three a small commit, transfer at mbps)."""
    ds = run_ds.copy()
    ds.attrs["guest_disk"] = ("null_blk memory_backed=1 irqmode=2 completion_nsec=12667000 "
                              "mbps=125 hw_queue_depth=1 cache_size=16MiB max_sectors=2560")
    dev = calibrate(ds)["device_overrides"]
    assert dev["flush_fixed_us"] == 12667.0 and dev["commit_fixed_us"] == 3 * 12667.0
    assert dev["flush_us_per_kib"] == pytest.approx(1024 / 125)
    assert dev["commit_us_per_block"] == pytest.approx(4 * 1024 / 125)
    assert calibrate(ds)["dev_cv"] == 0.0
    assert calibrate(ds)["shared_transfer"] is True     # mbps: one budget for the device
    assert calibrate(ds)["shadow_wait"] is True and dev["commit_record_us"] == 2 * 12667.0
    ds.attrs["guest_disk"] += " | null_blk memory_backed=1 irqmode=0"   # several disks: fitted
    assert calibrate(ds)["device_overrides"]["commit_fixed_us"] != 3 * 12667.0


@pytest.mark.parametrize("disk, want", [
    ("null_blk memory_backed=1 disk_model=hdd7200 disk_fixed_ns=0 hw_queue_depth=1 "
     "cache_size=0MiB max_sectors=2560", "hdd7200"),
    ("null_blk memory_backed=1 disk_model=hdd7200-nocache disk_fixed_ns=0 hw_queue_depth=1",
     "hdd7200-nocache"),
    ("null_blk memory_backed=1 disk_model=fixed disk_fixed_ns=12670000 hw_queue_depth=1", None)])
def test_the_drive_model_disk_is_the_simulators_device_of_that_name(disk, want):
    from abtlab.sim.calibration import guest_device
    dev = guest_device({"guest_disk": disk})
    if want is None:                                  # fixed: a latency per request
        assert dev["flush_fixed_us"] == 12670.0 and dev["cache_kib"] == 0.0
    else:
        assert dev == sim.DEVICES[want]
    assert guest_device({"guest_disk": disk + " | brd rq_mode=1 completion_nsec=1"}) is None


@pytest.mark.parametrize("kernel, mount, mode", [
    ("guest linux 6.1 + delayjc (TCG) 6.1", "defaults", "nolock"),
    ("guest linux 6.1 + delayjc (TCG) 6.1", "dioread_lock", "lock"),
    ("6.18.44-fc", "nodelalloc,dioread_lock", "lock"),
    ("3.4.2", "defaults", "lock"),           # before 244adf6426ee (5.6): dioread_lock was the default
    ("5.6.0", "", "nolock")])
def test_write_back_mode_follows_the_kernel_and_mount_options(run_ds, kernel, mount, mode):
    ds = run_ds.copy()
    ds.attrs.update(kernel=kernel, mount_options=mount)
    assert calibrate(ds)["dioread"] == mode


def test_fsync_cpu_from_the_spacing_of_fsyncs_on_a_busy_core():
    """Threads that outnumber the cores reach fsync one after another, a thread's writes
    and its fsync's write-back CPU apart: calibration recovers that CPU (undilated by
    emulation: its dilation is spun after the call); and a cfs34 run's slices are
    3.4's (2.25 ms)."""
    ds = sim.simulate(reps=2, freq_ghz=[1.65, 3.3], **{**TRUE, "threads": 16, "cores": 1},
                      **RUNS_CLOCK, fsync_cpu_us=300.0, quantum_us=5000.0, device="hdd7200-nocache", dilation=True)
    ds.attrs.update(freq_mode="emulated", f_ref_ghz=3.3, cpu_logical=1, kernel_sched="cfs34")
    p = calibrate(ds)
    assert p["fsync_cpu_us"] == pytest.approx(300.0, rel=0.1) and p["quantum_us"] == 2250.0
    assert p["dilation"] is True
    assert "fsync_cpu_us" not in calibrate(ds.assign_attrs(cpu_logical=64))   # cores >= threads


def test_fsync_cpu_is_read_from_the_runs_nearest_the_reference_clock():
    """By dilation a lower clock's fsync spacing also holds the writes' dilated tail,
    which would be taken for fsync CPU: the estimate comes from the runs nearest f_ref."""
    import numpy as np

    from abtlab.sim.calibration import _median_fsync_cpu
    from abtlab.trace import RECORD_DTYPE, Op

    def run(gap_us):     # 8 threads on one core, 2 writes each, fsyncs gap_us apart
        ops = np.zeros(24, RECORD_DTYPE)
        ops["tid"] = np.repeat(np.arange(8), 3)
        ops["op"] = np.tile([int(Op.WRITE), int(Op.WRITE), int(Op.FSYNC)], 8)
        ops["t_start_ns"] = np.repeat(np.arange(8) * gap_us * 1000, 3)
        return ops
    seen = [(run(500.0), None, 3.3), (run(900.0), None, 1.65), (run(900.0), None, 1.65)]
    # 3.3 GHz: 500 - 2 x 100 = 300 us; 1.65 GHz: 900 - 2 x 200 = 500 us
    assert _median_fsync_cpu(seen, 3.3, 0.0, 1, 100.0, dilation=True) == pytest.approx(300.0)
    assert _median_fsync_cpu(seen[1:], 3.3, 0.0, 1, 100.0, dilation=True) == pytest.approx(500.0)


def test_runs_without_a_commit_are_refused_naming_why(tmp_path, capsys):
    """NOJC runs have no journal: the commit terms cannot be fitted, and a file whose
    commit terms are silently the simulator's defaults would pass for a calibration."""
    ds = sim.simulate(reps=2, freq_ghz=[1.6, 3.3], policy="nojc", threads=16,
                      file_size=64 * 1024, record_size=32 * 1024)
    assert ds.sizes["commit"] == 0
    with pytest.raises(ConfigError, match="no journal commit") as e:
        calibrate(ds)
    assert e.value.field == "dataset"
    path, out = tmp_path / "n.nc", tmp_path / "p.toml"
    store.save(ds, path)
    assert main(["calibrate", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "abtlab calibrate: error: dataset:" in err[0] and "NOJC" in err[0]
    assert not out.exists()


def test_what_the_runs_cannot_tell_is_left_to_the_defaults_and_named(run_ds, tmp_path, capsys):
    """Threads no more than the cores give no fsync spacing to read the fsync's CPU from:
    fsync_cpu_us is not written (as a measured 0 would be), the file names it among the
    defaults and the command says so in one line."""
    p = calibrate(run_ds)
    # (and the simulator's records stamp jbd2's locking at its start: no journal CPU read)
    assert "fsync_cpu_us" not in p
    assert p["calibration"]["defaults"] == ["fsync_cpu_us", "commit_cpu_us"]
    path, out = tmp_path / "run.nc", tmp_path / "p.toml"
    store.save(run_ds, path)
    assert main(["calibrate", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["abtlab calibrate: warning: not fitted from these runs, the simulator's "
                   "defaults apply: fsync_cpu_us, commit_cpu_us"]
    text = out.read_text()
    assert 'defaults = ["fsync_cpu_us", "commit_cpu_us"]' in text and "fsync_cpu_us =" not in text
    assert sim.make(params=str(out)).fsync_cpu_us == sim.make().fsync_cpu_us


def test_fsyncs_closer_than_their_writes_give_no_fsync_cpu():
    """When fsyncs start closer together than their threads' writes take (threads not
    one after another on the cores), the estimate is not clipped to a measured 0."""
    import numpy as np

    from abtlab.sim.calibration import _fsync_cpu
    from abtlab.trace import RECORD_DTYPE, Op
    ops = np.zeros(24, RECORD_DTYPE)
    ops["tid"] = np.repeat(np.arange(8), 3)
    ops["op"] = np.tile([int(Op.WRITE), int(Op.WRITE), int(Op.FSYNC)], 8)
    ops["t_start_ns"] = np.repeat(np.arange(8) * 4_000, 3)      # fsyncs 4 us apart
    assert _fsync_cpu(ops, 2, 100.0, 1.0) is None                # 8 - 2 x 100 us < 0
    ops["t_start_ns"] = np.repeat(np.arange(8) * 150_000, 3)
    assert _fsync_cpu(ops, 2, 100.0, 1.0) == pytest.approx(100.0)   # 300 - 200 us


def test_the_write_op_fit_recovers_known_costs_when_threads_outnumber_cores():
    """Simulated with known costs and each thread's clock from when it runs (as
    abt-iozone's barrier), 16 threads on 4 cores with noisy CPU: the write op's quiet
    duration gives a write's CPU, and the opens' and closes' give theirs."""
    truth = {**TRUE, "threads": 16, "cpu_dist": "lognormal", "cpu_cv": 0.1,
             "write_fixed_us": 0.0, "write_us_per_kib": 2.5}
    ds = sim.simulate(reps=2, freq_ghz=[1.65, 3.3], **truth, **RUNS_CLOCK)
    ds.attrs.update(freq_mode="emulated", f_ref_ghz=3.3)
    p = calibrate(ds)
    assert p["write_us_per_kib"] == pytest.approx(2.5, rel=0.1)
    assert p["open_us"] == pytest.approx(TRUE["open_us"], rel=0.1)
    assert p["close_us"] == pytest.approx(TRUE["close_us"], rel=0.1)


@pytest.mark.parametrize("attrs, want, defaults", [
    ({}, {"start": "poll", "poll_us": 0.0, "poll_cpu_us": 0.0}, []),
    ({"sweep_spec": '{"options": {"start": "poll"}}'}, {"start": "poll", "poll_us": 51.0},
     ["poll_us", "poll_cpu_us"]),
    ({"start": "barrier", "sweep_spec": '{"options": {"start": "poll"}}'},
     {"start": "poll", "poll_us": 0.0, "poll_cpu_us": 0.0}, [])])
def test_the_start_is_read_from_the_run(run_ds, attrs, want, defaults):
    """abt-iozone's barrier: a thread's clock starts when it runs (the simulator's poll
    with no timer); IOzone's poll: its timer, a default the file names."""
    p = calibrate(run_ds.copy().assign_attrs(backend="iozone", **attrs))
    assert {k: p[k] for k in want} == want
    assert p["calibration"]["start_defaults"] == defaults


def test_a_start_the_simulator_does_not_know_is_refused(run_ds):
    """A simulated run's start is its own; a real run's must be abt-iozone's."""
    assert calibrate(run_ds)["start"] == "barrier"
    with pytest.raises(ConfigError) as e:
        calibrate(run_ds.copy().assign_attrs(backend="iozone", start="fork"))
    assert e.value.field == "dataset.start" and "barrier | poll" in str(e.value)


def _journal_run(lag_ms, lock_step_us):
    """One thread's ops (write, fsync at 1 ms) and two commits: the first starts lag_ms
    after the fsync began, each locks lock_step_us after it starts."""
    import numpy as np

    from abtlab.trace import RECORD_DTYPE, Op
    ops = np.zeros(2, RECORD_DTYPE)
    ops["op"] = [int(Op.WRITE), int(Op.FSYNC)]
    ops["t_start_ns"], ops["t_end_ns"] = [0, 1_000_000], [1_000_000, 2_000_000]
    start = np.array([1_000_000 + lag_ms * 1_000_000, 900_000_000], np.int64)
    lock = start + int(lock_step_us * 1000)
    return ops, {"start": start, "locking": lock, "flushing": lock + 10, "end": lock + 1000}


def test_the_journal_thread_is_read_from_the_commit_records():
    """commit_cpu_us: jbd2's start -> locking step at f_ref; jbd2_front: whether the first
    commit started within a slice of the first fsync (less its data write-back)."""
    from abtlab.sim.run_evidence import journal_params
    ops, com = _journal_run(lag_ms=300, lock_step_us=2.0)
    out, note = journal_params([(ops, com, 1.65)], 3.3, 0.0, 36_000.0, flush_us=500.0)
    assert out["commit_cpu_us"] == pytest.approx(1.0) and out["jbd2_front"] is False
    assert note["wake_lag_ms"] == [299.5]
    ops, com = _journal_run(lag_ms=5, lock_step_us=2.0)
    assert journal_params([(ops, com, 1.65)], 3.3, 0.0, 36_000.0, 500.0)[0]["jbd2_front"] is True
    ops, com = _journal_run(lag_ms=5, lock_step_us=0.0)     # a simulated run's records
    assert "commit_cpu_us" not in journal_params([(ops, com, 1.65)], 3.3, 0.0, 36_000.0, 0.0)[0]
    del com["locking"]            # no locking phase traced: left to the default
    assert "commit_cpu_us" not in journal_params([(ops, com, 1.65)], 3.3, 0.0, 36_000.0, 0.0)[0]


def test_a_guests_vcpus_sharing_one_icount_stream_share_its_costs(run_ds):
    """Under qemu's icount the vCPUs take turns at one instruction stream: each of 4 busy
    vCPUs runs at a quarter of it, so the costs on the simulator's 4 cores are 4x the
    undisturbed ones; the file says so."""
    ds = run_ds.copy().assign_attrs(guest_cpus="4", clock="virtual", icount=(
        "-icount shift=1,sleep=off: one guest instruction = 2 ns of virtual time, shared by "
        "all 4 vCPUs on one host thread"))
    p, plain = calibrate(ds), calibrate(run_ds.copy().assign_attrs(guest_cpus="4"))
    assert p["cores"] == plain["cores"] == 4 and p["calibration"]["vcpus_per_stream"] == 4
    for k in ("open_us", "close_us", "write_fixed_us"):
        assert p[k] == pytest.approx(4 * plain[k]), k
    assert plain["calibration"]["vcpus_per_stream"] == 1


def test_the_file_says_what_was_measured_and_what_is_a_default(run_ds):
    from abtlab.sim.calibration import FITTED
    cal = calibrate(run_ds)["calibration"]
    assert set(cal["measured"]) | set(cal["defaults"]) == set(FITTED)
    assert not set(cal["measured"]) & set(cal["defaults"])
    assert "jbd2_front" in cal["measured"] and "commit_cpu_us" in cal["defaults"]
    assert {"cores", "start", "device_overrides"} <= set(cal["settings"])
