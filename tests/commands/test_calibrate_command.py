"""`abtlab calibrate`: bad input is refused by name before any fit or simulation."""
from __future__ import annotations

import pytest

import abtlab.sim as sim
from abtlab.cli import main
from abtlab.data import store


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    ds = sim.simulate(reps=1, freq_ghz=[1.65, 3.3], threads=4, cores=4, file_size=64 * 1024)
    ds.attrs.update(freq_mode="emulated", f_ref_ghz=3.3, backend="iozone")
    path = tmp_path_factory.mktemp("cal") / "run.nc"
    store.save(ds, path)
    return path


@pytest.mark.parametrize("argv, field", [
    (["--validate", "--reps", "0"], "reps"),
    (["--sel", "threads=5"], "sel"),
    (["--sel", "nosuch=1"], "sel")])
def test_bad_options_are_named(run_file, capsys, argv, field):
    assert main(["calibrate", str(run_file), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"abtlab calibrate: error: {field}:" in err[0]


def test_a_start_the_simulator_cannot_take_is_named(run_file, tmp_path, capsys):
    ds = store.load(run_file)
    ds.attrs["start"] = "fork"
    path = tmp_path / "fork.nc"
    store.save(ds, path)
    assert main(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "dataset.start" in err and "barrier | poll" in err
