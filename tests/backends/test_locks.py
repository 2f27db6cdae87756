"""abt-locks and the locks driver: the lock excludes (holds never overlap), every entry
is recorded, invalid N or W is rejected naming the option/field."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from abtlab import trace
from abtlab.backends import get
from abtlab.backends.base import RunContext
from abtlab.machines.programs import parse_result
from abtlab.errors import ConfigError


def locks(backends, *args):
    exe = backends / "locks" / "abt-locks"
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_describe_record_size(built_native):
    out = locks(built_native, "--describe").stdout
    assert f"record_size: {trace.RECORD_DTYPE.itemsize}\n" in out and "header_size: 32\n" in out


@pytest.mark.parametrize("lock", ["spin", "mutex"])
def test_holds_are_exclusive_and_complete(built_native, tmp_path, lock):
    tpath = tmp_path / "locks.trace"
    proc = locks(built_native, "--lock", lock, "--threads", 4, "--work", 2000,
                 "--entries", 50, "--trace", tpath)
    assert proc.returncode == 0, proc.stderr
    out = parse_result(proc.stdout)
    assert out["lock"] == lock and int(out["elapsed_ns"]) > 0
    ops = trace.read(tpath, kind=trace.Kind.OPS)
    assert ops.size == 4 * 50
    assert np.all(ops["op"] == trace.Op.LOCK) and np.all(ops["bytes"] == 2000)
    assert np.unique(ops["tid"]).size == 4
    assert all((ops["tid"] == t).sum() == 50 for t in np.unique(ops["tid"]))
    hold = np.sort(ops, order="t_start_ns")
    assert np.all(hold["t_end_ns"] >= hold["t_start_ns"])
    assert np.all(hold["t_start_ns"][1:] >= hold["t_end_ns"][:-1]), "two threads held the lock"


@pytest.mark.parametrize("args,option", [
    (["--threads", "0"], "--threads"), (["--threads", "101"], "--threads"),
    (["--threads", "4x"], "--threads"), (["--work", "0"], "--work"),
    (["--work", "1000001"], "--work"), (["--work", "-5"], "--work"),
    (["--lock", "rwlock"], "--lock"), (["--entries", "0"], "--entries")])
def test_invalid_n_or_w_rejected(built_native, args, option):
    proc = locks(built_native, *args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"abt-locks: {option}:") and "accepted" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("point,field", [
    ({"lock": "spin", "threads": 0, "work": 1}, "threads"),
    ({"lock": "spin", "threads": 101, "work": 1}, "threads"),
    ({"lock": "spin", "threads": 2, "work": 0}, "work"),
    ({"lock": "spin", "threads": 2, "work": 2_000_000}, "work"),
    ({"lock": "spin", "threads": 2.5, "work": 10}, "threads"),
    ({"lock": "ticket", "threads": 2, "work": 10}, "lock")])
def test_validate_point_names_field(point, field):
    with pytest.raises(ConfigError) as exc:
        get("locks").validate_point(point)
    assert exc.value.field == field and exc.value.given == point[field]


def test_driver_run_point(built_native, tmp_path):
    be = get("locks")
    assert be.available()
    res = be.run_point({"lock": "mutex", "threads": 3, "work": 10},
                       RunContext(tmp_path, options={"entries": 20}))
    assert res.scalars["elapsed"] > 0
    assert res.ops.size == 60 and res.attrs["entries_per_thread"] == 20
    assert res.attrs["freq_mode"] == "real" and res.attrs["hardware_threads"] >= 1
    res = be.run_point({"lock": "spin", "threads": 2, "work": 10},
                       RunContext(tmp_path, options={"trace": False}))
    assert res.ops is None and res.attrs["traced"] == 0
    assert list(tmp_path.iterdir()) == []


def test_driver_entries_option_checked(built_native, tmp_path):
    with pytest.raises(ConfigError) as exc:
        get("locks").run_point({"lock": "spin", "threads": 1, "work": 1},
                               RunContext(tmp_path, options={"entries": 0}))
    assert exc.value.field == "entries"


@pytest.mark.parametrize("option, value, accepted", [
    ("entries", 0, "an integer from 1 to 1000000"), ("entries", "many", "an integer from 1 to 1000000"),
    ("entries", 2_000_000, "an integer from 1 to 1000000"), ("trace", "maybe", "true or false"),
    ("timeout", -1, "a number of seconds > 0")])
def test_run_locks_refuses_a_bad_option_before_anything_runs(option, value, accepted, tmp_path, capsys):
    """`abtlab run locks -o entries=N` (lab 4's 10,000 a thread): a bad value is a ConfigError
    naming the option and what it accepts; no dataset is written."""
    from abtlab.cli import main
    with pytest.raises(ConfigError) as exc:
        get("locks").validate_options({option: value})
    assert (exc.value.field, exc.value.given, exc.value.accepted) == (option, value, accepted)
    out = tmp_path / "l.nc"
    assert main(["run", "locks", "-o", f"{option}={value}", "--threads", "1", "--reps", "1",
                 "--out", str(out), "--quiet"]) == 2
    assert f"{option}: got" in capsys.readouterr().err and not out.exists()


def test_run_locks_takes_its_entries_per_thread(built_native, tmp_path):
    from abtlab.cli import main
    import abtlab
    out = tmp_path / "l.nc"
    assert main(["run", "locks", "-o", "entries=300", "-o", "trace=false", "--threads", "2",
                 "-f", "lock=spin,mutex", "--reps", "2", "--warmup", "0", "--out", str(out), "--quiet"]) == 0
    ds = abtlab.load(out)
    assert int(ds.attrs["entries_per_thread"]) == 300 and sorted(map(str, ds.lock.values)) == ["mutex", "spin"]
    assert get("locks").validate_options({"entries": 300.0, "trace": True}) == {"entries": 300, "trace": True}
