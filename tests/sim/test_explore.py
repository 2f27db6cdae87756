"""The sensitivity sweep (abtlab.sim.explore): shape, signature logic, bad axes."""
from __future__ import annotations

import numpy as np
import pytest

from abtlab.errors import ConfigError
from abtlab.sim import explore

SMALL = dict(threads=24, reps=2)


def test_sweep_shape_and_signature():
    ds = explore.sensitivity(axes={"write_fixed_us": [30.0, 400.0], "data_flush": ["fsync", "commit"]},
                             **SMALL)
    assert dict(ds.sizes) == {"write_fixed_us": 2, "data_flush": 2, "policy": 2, "freq_ghz": 2}
    assert ds.attrs["freq_mode"] == "simulated"
    e = ds.sel(policy="ext4")
    ratio = e.throughput.sel(freq_ghz=3.3) / e.throughput.sel(freq_ghz=1.6)
    np.testing.assert_allclose(ds.ext4_speedup, ratio)
    want = ((ratio < 1) & (ds.fewer_batched) & (ds.more_commits) & (ds.delayjc_over_ext4 > 1))
    assert (ds.paper_like == want).all()
    assert np.all(ds.commits.sel(policy=ds.attrs["delay_policy"]) <= e.commits + 1e-9)
    table = explore.format_table(ds)
    assert len(table.splitlines()) == 1 + 4 and "paper-like" in table


def test_device_axis_goes_to_the_device():
    # a commit's cost reaches the writers through their fsyncs (the write op itself ends
    # before the first commit at this size)
    ds = explore.sensitivity(axes={"commit_fixed_us": [1000.0, 40000.0]}, **SMALL)
    w = ds.mean_write_fsync.sel(policy="ext4", freq_ghz=1.6)
    assert float(w.isel(commit_fixed_us=1)) > float(w.isel(commit_fixed_us=0))


@pytest.mark.parametrize("axes,field", [({"warp": [1]}, "axes.warp"),
                                        ({"freq_ghz": [1.0]}, "axes.freq_ghz"),
                                        ({"cores": []}, "axes.cores")])
def test_bad_axes_are_named(axes, field):
    with pytest.raises(ConfigError) as e:
        explore.sensitivity(axes=axes, **SMALL)
    assert e.value.field == field


CALIBRATED = {"cores": 1, "write_fixed_us": 80.0, "fsync_cpu_us": 277.0, "quantum_us": 2250.0,
              "dilation": True, "device_overrides": {"flush_fixed_us": 12667.0}}


def test_params_file_is_the_start_and_keywords_win(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('cores = 1\nwrite_fixed_us = 80.0\nqueue_depth = 1\n'
                 '[device_overrides]\nflush_fixed_us = 12667.0\n[calibration]\nruns = 3\n')
    cal = explore.sensitivity(axes={"threads": [8]}, params=str(f), file_size=65536, reps=2)
    plain = explore.sensitivity(axes={"threads": [8]}, file_size=65536, reps=2)
    assert cal.attrs["params"] == str(f)
    # the file's 12.7 ms data flush (preset: 2 ms) and its one core show in the write times
    w = [float(d.mean_write.sel(policy="ext4", freq_ghz=1.6, threads=8)) for d in (cal, plain)]
    assert w[0] != w[1]
    p = explore._params({**explore.PAPER_POINT, **CALIBRATED, "cores": 2}, {}, "ext4", 1.6)
    assert p.cores == 2 and p.write_fixed_us == 80.0
    assert p.device_params()["flush_fixed_us"] == 12667.0


def test_vcpus_multiply_the_cpu_costs():
    base = {**explore.PAPER_POINT, **CALIBRATED}
    one = explore._params(base, {"vcpus": 1}, "ext4", 3.3)
    four = explore._params(base, {"vcpus": 4}, "ext4", 3.3)
    assert (one.cores, four.cores) == (1, 4)
    assert four.write_fixed_us == 4 * one.write_fixed_us == 320.0
    assert four.fsync_cpu_us == 4 * one.fsync_cpu_us
    assert four.device_params() == one.device_params()


def test_records_larger_than_the_file_stay_empty():
    ds = explore.sensitivity(axes={"file_size": [16384, 65536], "record_size": [32768]},
                             threads=8, reps=1)
    assert np.isnan(ds.throughput.sel(file_size=16384)).all()
    assert np.isfinite(ds.throughput.sel(file_size=65536)).all()


def test_candidates_rank_the_signature_first():
    ds = explore.sensitivity(axes={"threads": [8, 16, 24]}, params=CALIBRATED, file_size=65536,
                             reps=1)
    ds["slowdown"][:] = [False, True, True]
    ds["more_commits"][:] = [False, False, True]
    ds["paper_like"][:] = False
    rows = explore.candidates(ds, 2).splitlines()
    assert len(rows) == 3 and rows[1].split()[0] == "24" and rows[2].split()[0] == "16"


def test_cli_prints_the_best_cells(capsys, tmp_path):
    out = tmp_path / "s.nc"
    assert explore.main(["--axis", "threads=8,16", "--axis", "file_size=64k", "--set",
                         "cores=1", "--reps", "1", "--best", "1", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "paper-like" in lines[0]
    import xarray as xr
    assert xr.open_dataset(out).sizes["threads"] == 2


@pytest.mark.parametrize("argv,field", [(["--axis", "threads"], "--axis"),
                                        (["--axis", "vcpus=1", "--axis", "cores=1"], "axes.cores"),
                                        (["--axis", "warp=1"], "axes.warp")])
def test_cli_bad_axes_are_named(argv, field):
    with pytest.raises(ConfigError) as e:
        explore.main(argv + ["--reps", "1"])
    assert e.value.field == field


def test_the_signature_spec_runs_the_simulated_cells_on_both_kernels():
    from pathlib import Path
    from abtlab.machines.spec import parse_machines
    from abtlab.sweep.runner import build_levels
    from abtlab.sweep.spec import load_spec
    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / "kernel_history_signature.toml")
    levels, options = build_levels(spec.backend, **dict(spec.factors))
    assert options["freq_mode"] == "emulated" and list(levels["freq_ghz"]) == [1.6, 3.3]
    assert (levels["file_size"], levels["record_size"]) == ([65536], [16384])
    machines = parse_machines(spec.factors["machine"])
    assert {(m.cpus, m.depth) for m in machines} == {(1, 1), (4, 32)}
    assert sorted(m.kernel for m in machines) == ["6.1", "6.1", "6.1-legacy", "6.1-legacy"]
