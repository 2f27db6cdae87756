import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import abtlab
from abtlab import backends
from abtlab.data import schema, store
from abtlab.sweep import loop as sweep
from abtlab.sweep import parts
from abtlab.errors import ConfigError

HERE = Path(__file__).resolve().parents[1]   # tests/: fakebackend
backends.register("fake", "fakebackend:FakeBackend")
sys.path.insert(0, str(HERE))
LEVELS = {"policy": ["ext4", "nojc"], "threads": [2, 8]}


def test_expand_and_seeds():
    pts = sweep.expand(LEVELS)
    assert len(pts) == 4 and pts[0] == {"policy": "ext4", "threads": 2}
    assert sweep.run_seed(0, 1, 2) == sweep.run_seed(0, 1, 2) != sweep.run_seed(0, 2, 1)


def test_run_assembles_and_round_trips(tmp_path):
    out = tmp_path / "r.nc"
    ds = sweep.run("fake", LEVELS, reps=3, out=out, quiet=True)
    assert ds["throughput"].dims == ("policy", "threads", "rep")
    assert ds["throughput"].attrs["units"] == "bytes/s"
    assert int((ds[schema.RUN_ID] >= 0).sum()) == 12
    assert ds.sizes["op"] == 3 * 2 * (2 + 8) and ds.sizes["commit"] == 24
    schema.validate(ds)
    back = abtlab.load(out)
    np.testing.assert_allclose(back["throughput"].values, ds["throughput"].values)
    rid = int(back[schema.RUN_ID].sel(policy="nojc", threads=8, rep=1))
    assert back.abt.ops(rid).size == 8
    assert list(back.abt.commits(rid)["end"]) == [20, 70]
    assert not store.parts_dir(out).exists()
    for key in ("kernel", "cpu", "backend", "abtlab_version", "start_time", "end_time", "command"):
        assert key in back.attrs


def test_results_independent_of_order(tmp_path):
    a = sweep.run("fake", LEVELS, reps=2, quiet=True, seed=3, order="random")
    for order in ("sequential", "blocked"):
        b = sweep.run("fake", LEVELS, reps=2, quiet=True, seed=3, order=order)
        np.testing.assert_array_equal(a["throughput"].values, b["throughput"].values)
        assert b.attrs["order"] == order


def test_bad_inputs(tmp_path):
    with pytest.raises(ConfigError, match="reps"):
        sweep.run("fake", LEVELS, reps=0, quiet=True)
    with pytest.raises(ConfigError, match="threads"):
        sweep.run("fake", {"policy": ["ext4"], "threads": []}, quiet=True)
    with pytest.raises(ConfigError, match="backend"):
        sweep.run("no-such-backend", LEVELS, quiet=True)


def test_torn_part_is_discarded_and_rerun(tmp_path):
    out = tmp_path / "r.nc"
    d = store.parts_dir(out)
    d.mkdir()
    (d / store.part_name(0, 0)).write_bytes(b"\x89HDF\r\n torn")
    with pytest.warns(UserWarning, match="discarded unreadable part"):
        ds = sweep.run("fake", LEVELS, reps=1, out=out, resume=True, quiet=True)
    assert not d.exists()  # parts are removed once the dataset is written
    kept = out.parent / "r.nc.rejected" / store.part_name(0, 0)
    assert kept.read_bytes() == b"\x89HDF\r\n torn"   # the torn part is kept for inspection
    assert np.isfinite(ds["throughput"].values).all()


_SCRIPT = """
import sys; sys.path.insert(0, {here!r})
from abtlab import backends
from abtlab.sweep import loop as sweep
backends.register("fake", "fakebackend:FakeBackend")
sweep.run("fake", {levels!r}, reps=4, out={out!r}, seed=7, quiet=True, resume={resume},
          options={{"delay": {delay}}})
"""


def _spawn(out, resume, delay, hang=""):
    code = _SCRIPT.format(here=str(HERE), levels=LEVELS, out=str(out), resume=resume, delay=delay)
    # the killed child cannot remove its temporary run directory: keep it in tmp_path
    env = dict(os.environ, TMPDIR=str(out.parent), ABTLAB_FAKE_HANG=hang)
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    """Killed inside a run (the fake backend says when it is there: an event, not a
    time), the sweep keeps the runs finished before it and a resume finishes the rest."""
    ref = sweep.run("fake", LEVELS, reps=4, seed=7, quiet=True)
    out, hanging = tmp_path / "k.nc", tmp_path / "hanging"
    proc = _spawn(out, False, 0, hang=f"8:2:{hanging}")
    parts = store.parts_dir(out)
    guard = time.monotonic() + 120            # a hang guard, not a target
    while not hanging.exists() and proc.poll() is None and time.monotonic() < guard:
        time.sleep(0.02)
    assert hanging.exists(), "the sweep never reached the run that hangs"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(list(parts.glob("p*.h5")))
    assert 1 <= n_before < 16
    assert _spawn(out, True, 0).wait(timeout=120) == 0
    got = abtlab.load(out)
    np.testing.assert_array_equal(got["throughput"].values, ref["throughput"].values)
    assert int((got[schema.RUN_ID] >= 0).sum()) == 16
    assert got.sizes["op"] == ref.sizes["op"]


def test_accessor_slowdown_on_simulated_run():
    ds = sweep.run("sim", {"policy": ["ext4"], "freq_ghz": [1.6, 3.3], "threads": [32],
                           "file_size": [131072], "record_size": [32768], "files": [1],
                           "device": ["hdd7200"]}, reps=3, quiet=True, freq_mode="simulated")
    sd = ds.abt.slowdown()
    assert float(sd["ratio"].sel(freq_ghz=1.6).squeeze()) == 1.0
    r = sd.sel(freq_ghz=3.3).squeeze()
    assert float(r["ci_low"]) <= float(r["ratio"]) <= float(r["ci_high"])


def test_guest_only_sweeps_need_the_guest_not_root(monkeypatch):
    """Runs that all go to a qemu guest are checked against the guest (qemu runs
    unprivileged), not against the host's root and loop devices."""
    from abtlab.machines import guest
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(guest, "available", lambda: (True, ""))
    be = backends.get("iozone")
    assert be.available_for({"machine": ["guest", "guest:kernel=6.1-legacy"]})
    host = be.available_for({"machine": ["guest", "host"]})
    assert not host and "root" in host.reason
    monkeypatch.setattr(guest, "available", lambda: (False, "qemu-system-x86_64 not found"))
    with pytest.raises(ConfigError, match="qemu-system-x86_64 not found"):
        abtlab.run("iozone", machine="guest", threads=4, policy="ext4", reps=1, quiet=True)


def test_string_levels_are_typed_once_where_they_enter_the_loop():
    """A direct sweep with string levels gives the backend the same typed values as
    abtlab.run does (Policy, Profile, Machine, int): nothing downstream parses a label."""
    from abtlab.backends.base import Backend
    from abtlab.data.result import RunResult
    seen = []

    class Probe(Backend):
        name, simulated = "probe", True
        factors = {"policy": "ext4", "device": "none", "machine": "host", "threads": 1}

        def run_point(self, point, ctx):
            seen.append({k: type(v).__name__ for k, v in point.items()})
            return RunResult(scalars={"throughput": 1.0}, attrs={"freq_mode": "simulated"})
    ds = sweep.run(Probe(), {"policy": ["delayjc:window=4ms"], "device": ["hdd7200"],
                             "machine": ["guest:cpus=2"], "threads": ["4"]}, reps=1, quiet=True)
    # DelayPolicy: the delayjc kind's Policy class (abtlab.policies.KINDS)
    assert seen == [{"policy": "DelayPolicy", "device": "Profile", "machine": "Machine", "threads": "int"}]
    assert list(ds.policy.values) == ["delayjc:window=4ms,max_resets=64,max_age=1s"]   # canonical
    assert list(ds.threads.values) == [4]
    with pytest.raises(ConfigError) as e:
        sweep.run(Probe(), {"policy": ["ext5"]}, reps=1, quiet=True)
    assert e.value.field == "policy" and len(seen) == 1


SIM_LEVELS = {"policy": ["ext4", "nojc"], "freq_ghz": [1.6, 3.3], "threads": [8],
              "file_size": [65536], "record_size": [16384], "files": [1], "device": ["hdd7200"]}
_SIM_SCRIPT = """
import time
from abtlab.sim.backend import SimBackend
from abtlab.sweep import loop as sweep
real = SimBackend.run_group
def slow(self, runs, workdir):
    time.sleep({delay})
    return real(self, runs, workdir)
SimBackend.run_group = slow
sweep.run("sim", {levels!r}, reps=3, out={out!r}, seed=7, quiet=True, order="random",
          resume={resume}, freq_mode="simulated")
"""


def _sim_kw(**kw):
    return dict(reps=3, seed=7, quiet=True, order="random", freq_mode="simulated", **kw)


def _written(monkeypatch) -> list:
    """The names of the parts store.write_block writes from here on."""
    written, real = [], store.write_block
    monkeypatch.setattr(store, "write_block", lambda out, b, **kw: written.append(store.block_name(b))
                        or real(out, b, **kw))
    return written


def _keep_parts_at_once(monkeypatch):
    """A simulated sweep that keeps its parts from its first group, as one that has run
    for longer than parts.KEEP_AFTER_S does."""
    monkeypatch.setattr(parts, "KEEP_AFTER_S", 0.0)


def test_a_simulated_point_is_one_part_whatever_the_order(tmp_path, monkeypatch):
    """A model's runs cost milliseconds and do not depend on their order: each point's
    repetitions run as one group and are written as one part; the dataset is the one
    an in-memory sweep gives, run for run."""
    _keep_parts_at_once(monkeypatch)
    written = _written(monkeypatch)
    ds = sweep.run("sim", SIM_LEVELS, out=tmp_path / "s.nc", **_sim_kw())
    assert sorted(written) == [f"p{i:05d}-r0000-0002.h5" for i in range(4)]
    ref = sweep.run("sim", SIM_LEVELS, **_sim_kw())
    for v in ("throughput", "commits", schema.RUN_ID, "op_run", "op_t_end", "commit_end"):
        np.testing.assert_array_equal(ds[v].values, ref[v].values, err_msg=v)
    assert ds.attrs["order"] == "random"


def test_a_short_simulated_sweep_writes_its_dataset_alone(tmp_path, monkeypatch):
    """Younger than parts.KEEP_AFTER_S, a simulated sweep keeps its finished groups in
    memory: no part, no parts folder, and the dataset an in-memory sweep gives."""
    monkeypatch.setattr(parts, "KEEP_AFTER_S", 1e9)
    written, specs, real_spec = _written(monkeypatch), [], store.write_spec
    monkeypatch.setattr(store, "write_spec", lambda out, spec: specs.append(out) or real_spec(out, spec))
    out = tmp_path / "s.nc"
    ds = sweep.run("sim", SIM_LEVELS, out=out, **_sim_kw())
    assert written == [] and specs == [] and not store.parts_dir(out).exists()
    ref = sweep.run("sim", SIM_LEVELS, **_sim_kw())
    for v in ("throughput", "commits", schema.RUN_ID, "op_run", "op_t_end", "commit_end"):
        np.testing.assert_array_equal(ds[v].values, ref[v].values, err_msg=v)
        np.testing.assert_array_equal(abtlab.load(out)[v].values, ref[v].values, err_msg=v)


def test_a_simulated_sweep_past_its_first_second_writes_what_it_held_then_each_group(
        tmp_path, monkeypatch):
    """Once a simulated sweep is older than parts.KEEP_AFTER_S, the groups it held go to
    disk first, then each group as it finishes; the spec goes with the first part."""
    from abtlab.sim.backend import SimBackend
    monkeypatch.setattr(parts, "KEEP_AFTER_S", 1e9)
    written, calls, real = _written(monkeypatch), [], SimBackend.run_group

    def run_group(self, runs, workdir):
        calls.append(len(runs))
        if len(calls) == 3:             # the sweep comes of age during its third group
            monkeypatch.setattr(parts, "KEEP_AFTER_S", 0.0)
        if len(calls) == 4:
            assert written == [f"p{i:05d}-r0000-0002.h5" for i in range(3)]
            assert (store.parts_dir(out) / store.SPEC_FILE).is_file()
        return real(self, runs, workdir)
    monkeypatch.setattr(SimBackend, "run_group", run_group)
    out = tmp_path / "s.nc"
    sweep.run("sim", SIM_LEVELS, out=out, **_sim_kw())
    assert written == [f"p{i:05d}-r0000-0002.h5" for i in range(4)]
    assert out.exists() and not store.parts_dir(out).exists()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_a_short_simulated_sweep_stopped_keeps_its_finished_groups(tmp_path, monkeypatch, stop):
    """A signal (KeyboardInterrupt, as abtlab.system.cleanup raises it) or an error stops
    a young simulated sweep: the groups it held are written before it stops, and resume
    runs only the others, to the dataset of an unbroken sweep."""
    from abtlab.sim.backend import SimBackend
    monkeypatch.setattr(parts, "KEEP_AFTER_S", 1e9)
    ref = sweep.run("sim", SIM_LEVELS, **_sim_kw())
    calls, real = [], SimBackend.run_group

    def stop_at_third(self, runs, workdir):
        calls.append(len(runs))
        if len(calls) == 3:
            raise stop("stopped")
        return real(self, runs, workdir)
    monkeypatch.setattr(SimBackend, "run_group", stop_at_third)
    out = tmp_path / "s.nc"
    with pytest.raises(stop):
        sweep.run("sim", SIM_LEVELS, out=out, **_sim_kw())
    kept = store.read_parts(out)
    assert len(kept) == 2 and all(b.reps.tolist() == [0, 1, 2] for b in kept.values())
    calls.clear()
    monkeypatch.setattr(SimBackend, "run_group",
                        lambda self, runs, workdir: calls.append(len(runs)) or real(self, runs, workdir))
    got = sweep.run("sim", SIM_LEVELS, out=out, resume=True, **_sim_kw())
    assert calls == [3, 3]
    for v in ("throughput", "commits", schema.RUN_ID, "op_t_end", "commit_end"):
        np.testing.assert_array_equal(got[v].values, ref[v].values, err_msg=v)


def test_sigkilled_simulated_sweep_resumes_from_its_last_group(tmp_path, monkeypatch):
    """kill -9 between groups: the finished points stay on disk, one part each with all
    their repetitions, and resume runs only the others; every repetition once."""
    from abtlab.sim.backend import SimBackend
    ref = sweep.run("sim", SIM_LEVELS, **_sim_kw())
    out = tmp_path / "k.nc"
    code = _SIM_SCRIPT.format(levels=SIM_LEVELS, out=str(out), resume=False, delay=1.0)
    proc = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ, TMPDIR=str(tmp_path)))
    parts = store.parts_dir(out)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(parts.glob("p*.h5")):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = store.read_parts(out)
    assert 1 <= len(kept) < 4 and all(b.reps.tolist() == [0, 1, 2] for b in kept.values())
    calls, real = [], SimBackend.run_group
    monkeypatch.setattr(SimBackend, "run_group",
                        lambda self, runs, workdir: calls.append(len(runs)) or real(self, runs, workdir))
    sweep.run("sim", SIM_LEVELS, out=out, resume=True, **_sim_kw())
    assert calls == [3] * (4 - len(kept))
    got = abtlab.load(out)
    for v in ("throughput", "commits", schema.RUN_ID, "op_t_end", "commit_end"):
        np.testing.assert_array_equal(got[v].values, ref[v].values, err_msg=v)
    assert int((got[schema.RUN_ID] >= 0).sum()) == 12 and got.sizes["op"] == ref.sizes["op"]


def _fsynced(monkeypatch) -> list:
    """The paths os.fsync is called on from here on (files, and folders as `dir:...`)."""
    synced, real = [], os.fsync

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        synced.append(f"dir:{Path(path).name}" if os.path.isdir(path) else Path(path).name)
        return real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_a_models_parts_are_not_fsynced_a_real_runs_are(tmp_path, monkeypatch):
    """A simulated part is renamed into place without fsync (a crash of the machine may
    lose it: its runs are repeated, milliseconds each); a real run's part, and every
    dataset, are fsynced with their folder."""
    synced = _fsynced(monkeypatch)
    sweep.run("sim", SIM_LEVELS, out=tmp_path / "s.nc", **_sim_kw())
    assert synced == [".s.nc.tmp-%d" % os.getpid(), f"dir:{tmp_path.name}"]
    synced.clear()
    sweep.run("fake", LEVELS, reps=1, out=tmp_path / "r.nc", quiet=True)
    parts = [n for n in synced if n.startswith(".p0")]
    assert len(parts) == 4 and synced.count("dir:r.nc.parts") == 4
    assert synced[-2:] == [".r.nc.tmp-%d" % os.getpid(), f"dir:{tmp_path.name}"]


def test_a_simulated_part_torn_by_a_crash_is_run_again(tmp_path, monkeypatch):
    """What an unsynced part may be after a crash of the machine (cut short, or empty):
    set aside on resume, its point run again, the dataset the same as an unbroken run's."""
    _keep_parts_at_once(monkeypatch)
    ref = sweep.run("sim", SIM_LEVELS, **_sim_kw())
    for cut in (0.5, 0.0):
        out = tmp_path / f"c{cut}.nc"
        with pytest.raises(KeyboardInterrupt):     # stopped after its second part
            _stop_after_parts(out, 2)
        part = sorted(store.parts_dir(out).glob("p*.h5"))[1]
        data = part.read_bytes()
        part.write_bytes(data[:int(len(data) * cut)])
        with pytest.warns(UserWarning, match="discarded unreadable part"):
            got = sweep.run("sim", SIM_LEVELS, out=out, resume=True, **_sim_kw())
        for v in ("throughput", "commits", schema.RUN_ID, "op_t_end", "commit_end"):
            np.testing.assert_array_equal(got[v].values, ref[v].values, err_msg=v)
        assert (out.parent / f"{out.name}.rejected" / part.name).exists()


def _stop_after_parts(out, n):
    """A simulated sweep to out, interrupted once n of its parts are written."""
    real = store.write_block

    def write(o, b, **kw):
        path = real(o, b, **kw)
        if len(list(store.parts_dir(o).glob("p*.h5"))) >= n:
            raise KeyboardInterrupt
        return path
    import unittest.mock
    with unittest.mock.patch.object(store, "write_block", write):
        sweep.run("sim", SIM_LEVELS, out=out, **_sim_kw())


def test_keep_going_leaves_a_failed_run_missing_and_lists_it(tmp_path):
    """keep_going: the runs that fail (threads 8, repetition 1, both policies) are NaN
    with run id -1 and listed in failed_runs; every other run is what an unbroken sweep
    gives. Without it the first failure stops the sweep and its finished runs stay for
    --resume; when every run fails, the first error is raised."""
    from abtlab.errors import RunError
    ref = sweep.run("fake", LEVELS, reps=3, quiet=True, seed=5)
    out = tmp_path / "k.nc"
    ds = sweep.run("fake", LEVELS, reps=3, out=out, quiet=True, seed=5, keep_going=True,
                   options={"fail": "8:1"})
    bad = dict(threads=8, rep=1)
    assert np.isnan(ds["throughput"].sel(**bad).values).all()
    assert (ds[schema.RUN_ID].sel(**bad).values == -1).all()
    good = ds["throughput"].where(~((ds.threads == 8) & (ds.rep == 1)))
    np.testing.assert_array_equal(good.values, ref["throughput"].where(~np.isnan(good)).values)
    lines = abtlab.load(out).attrs[sweep.FAILED_RUNS].splitlines()
    assert len(lines) == 2 and all("threads=8 rep 1: fake: fake failure" in ln or
                                   "threads=8 rep 1: fake failure" in ln for ln in lines), lines
    assert not store.parts_dir(out).exists()
    stopped = tmp_path / "s.nc"
    with pytest.raises(RunError, match="fake failure"):
        sweep.run("fake", LEVELS, reps=3, out=stopped, quiet=True, seed=5, order="sequential",
                  options={"fail": "8:1"})
    assert store.read_parts(stopped)           # what finished before it, kept for --resume
    with pytest.raises(RunError, match="fake failure"):
        sweep.run("fake", LEVELS, reps=2, quiet=True, keep_going=True, options={"fail": "*"})
    with pytest.raises(ConfigError, match="keep_going"):
        sweep.run("fake", LEVELS, reps=2, quiet=True, keep_going="yes")


def test_keep_going_from_the_command_line_and_the_spec(tmp_path, capsys):
    """`abtlab run --keep-going` writes the dataset, names each failed run on stderr and
    exits 1; a spec says it in [execution], and a non-boolean there is refused naming it."""
    from abtlab.cli import main
    from abtlab.sweep.spec import parse_spec
    out = tmp_path / "c.nc"
    code = main(["run", "fake", "--threads", "2,8", "--reps", "2", "--warmup", "0", "-o", "fail=8:1",
                 "--keep-going", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and out.exists()
    assert "abtlab run: 1 run failed, left missing" in err and "threads=8 rep 1" in err
    assert main(["run", "fake", "--threads", "2,8", "--reps", "2", "--warmup", "0", "-o", "fail=8:1",
                 "--quiet", "--out", str(tmp_path / "d.nc")]) == 2
    spec = {"backend": "fake", "factors": {"threads": [2]}, "execution": {"keep_going": True}}
    assert parse_spec(spec).keep_going is True and parse_spec({**spec, "execution": {}}).keep_going is False
    with pytest.raises(ConfigError, match="execution.keep_going"):
        parse_spec({**spec, "execution": {"keep_going": "true"}})
