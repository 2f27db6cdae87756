"""--out is checked before anything runs; a dataset is never overwritten without --resume
or --force; --resume refuses another command, naming the field."""
from __future__ import annotations

import os

import pytest

import abtlab
from abtlab import backends
from abtlab.data import store
from abtlab.sweep import loop as sweep
from abtlab.errors import ConfigError, TraceError

backends.register("fake", "fakebackend:FakeBackend")
LEVELS = {"policy": ["ext4"], "threads": [2, 4]}


def _run(out, **kw):
    return sweep.run("fake", LEVELS, reps=2, out=out, quiet=True, **kw)


def test_a_foreign_file_is_refused_unless_forced(tmp_path):
    out = tmp_path / "notes.nc"
    out.write_text("my notes")
    with pytest.raises(ConfigError, match="out: .*another file: --force replaces it"):
        _run(out)
    assert out.read_text() == "my notes" and not store.parts_dir(out).exists()
    _run(out, force=True)
    assert store.is_dataset(out)


def test_a_finished_dataset_is_never_overwritten_without_resume_or_force(tmp_path):
    out = tmp_path / "r.nc"
    first = _run(out, seed=1)
    before = out.stat().st_mtime_ns
    with pytest.raises(ConfigError, match="finished abtlab dataset"):
        _run(out, seed=1)
    assert out.stat().st_mtime_ns == before
    again = _run(out, seed=1, resume=True)            # same command: nothing left to run
    assert out.stat().st_mtime_ns == before
    assert (again["throughput"].values == first["throughput"].values).all()
    _run(out, seed=2, force=True)
    assert out.stat().st_mtime_ns != before


@pytest.mark.parametrize("kind", ["directory", "no parent", "read-only"])
def test_an_unwritable_out_is_refused_before_any_run(tmp_path, kind, monkeypatch):
    ran = []
    monkeypatch.setattr(sweep, "_sweep", lambda *a, **k: ran.append(1))
    out = {"directory": tmp_path, "no parent": tmp_path / "missing" / "r.nc",
           "read-only": tmp_path / "ro" / "r.nc"}[kind]
    if kind == "read-only":
        out.parent.mkdir()
        real = os.access                                            # root ignores chmod
        monkeypatch.setattr(os, "access", lambda p, mode: str(p) != str(out.parent)
                            and real(p, mode))
    with pytest.raises(ConfigError, match="^out: "):
        _run(out)
    assert ran == [] and list(tmp_path.glob("*.tmp*")) == []


@pytest.mark.parametrize("change, field", [
    ({"options": {"delay": 0.01}}, "delay"),
    ({"levels": {"policy": ["ext4"], "threads": [2, 8]}}, r"threads \(--threads\)"),
    ({"seed": 5}, r"seed \(--seed\)"),
    ({"reps": 3}, r"reps \(--reps\)"),
])
def test_resume_with_another_command_names_the_field(tmp_path, change, field):
    out = tmp_path / "r.nc"
    store.write_spec(out, {"backend": "fake", "factors": LEVELS, "options": {"freq_mode": "native"},
                           "seed": 0, "reps": "2", "order": "random"})
    kw = {"levels": LEVELS, "options": {}, "seed": 0, "reps": 2, **change}
    with pytest.raises(ConfigError, match=f"^{field}: "):
        sweep.run("fake", kw["levels"], reps=kw["reps"], out=out, quiet=True, resume=True,
                  seed=kw["seed"], options=kw["options"])
    sweep.run("fake", LEVELS, reps=2, out=out, quiet=True, resume=True)   # the same: runs


def test_a_corrupt_dataset_gives_abtlabs_error(tmp_path):
    out = tmp_path / "r.nc"
    _run(out)
    raw = bytearray(out.read_bytes())
    raw[len(raw) // 3: len(raw) // 3 + 4096] = b"\xff" * 4096   # metadata and data garbled
    out.write_bytes(bytes(raw))
    with pytest.raises(TraceError, match="not a readable run dataset"):
        abtlab.load(out)
    from abtlab.cli import main
    assert main(["stats", str(out)]) == 2


def test_a_trace_that_is_a_directory_gives_abtlabs_error(tmp_path):
    from abtlab import trace
    with pytest.raises(TraceError, match="cannot be read"):
        trace.read(tmp_path)


def test_a_sweep_stopped_before_its_first_repetition_leaves_no_parts(tmp_path, monkeypatch):
    out = tmp_path / "r.nc"

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(sweep, "_run_points", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run(out)
    assert not store.parts_dir(out).exists()
    monkeypatch.undo()
    _run(out)                                   # the same command again, without --resume
    assert store.is_dataset(out)


def test_parts_with_repetitions_or_rejected_ones_are_kept(tmp_path):
    out = tmp_path / "r.nc"
    store.write_spec(out, {"backend": "fake"})
    (store.parts_dir(out) / "rejected").mkdir()
    assert not store.drop_unstarted(out) and store.parts_dir(out).is_dir()
    (store.parts_dir(out) / "rejected").rmdir()
    assert store.drop_unstarted(out) and not store.parts_dir(out).exists()
