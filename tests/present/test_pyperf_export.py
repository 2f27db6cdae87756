"""abtlab.present.pyperf_export: a run as a pyperf suite that `pyperf compare_to` reads."""
import subprocess
import sys

import numpy as np
import pyperf
import pytest
import xarray as xr

from abtlab.errors import ConfigError
from abtlab.present.pyperf_export import benchmark_name, export_pyperf


def make_run(scale=None, reps=6, seed=0):
    """throughput ~ N(1e9 * scale[policy], 2%), elapsed = 1 MiB / throughput."""
    scale = scale or {"ext4": 1.0, "nojc": 1.0}
    rng = np.random.default_rng(seed)
    mean = np.array([[1e9 * scale[p]] * 2 for p in scale])[..., None]
    thr = rng.normal(mean, 0.02 * mean, mean.shape[:2] + (reps,))
    dims = ("policy", "freq_ghz", "rep")
    return xr.Dataset({"throughput": (dims, thr, {"units": "bytes/s"}),
                       "elapsed": (dims, 2**20 / thr, {"units": "s"}),
                       "commits": (dims, np.full(thr.shape, 3.0), {"units": "1"})},
                      coords={"policy": list(scale), "freq_ghz": [1.6, 3.3], "rep": np.arange(reps)},
                      attrs={"freq_mode": "emulated", "backend": "iozone", "command": "make_run\nx"})


def test_suite_holds_one_benchmark_per_point_and_one_run_per_rep(tmp_path):
    ds = make_run()
    ds["throughput"][1, 0, 2:] = np.nan
    ds["throughput"][1, 1, :] = np.nan
    res = export_pyperf(ds, tmp_path / "a.json")
    assert (res["benchmarks"], res["runs"], res["skipped"]) == (3, 14, ["policy=nojc,freq_ghz=3.3"])
    suite = pyperf.BenchmarkSuite.load(str(tmp_path / "a.json"))
    b = suite.get_benchmark("policy=ext4,freq_ghz=1.6")
    np.testing.assert_allclose(b.get_values(), 1 / ds.throughput.sel(policy="ext4", freq_ghz=1.6))
    assert b.get_unit() == "second" and b.get_nrun() == 6
    md = b.get_metadata()
    assert md["abtlab_freq_mode"] == "emulated" and md["abtlab_command"] == "make_run x"
    assert "seconds per byte" in md["description"]
    assert suite.get_benchmark("policy=nojc,freq_ghz=1.6").get_nrun() == 2


def test_elapsed_is_exported_as_is(tmp_path):
    ds = make_run()
    export_pyperf(ds, tmp_path / "e.json", var="elapsed")
    b = pyperf.BenchmarkSuite.load(str(tmp_path / "e.json")).get_benchmark("policy=nojc,freq_ghz=3.3")
    np.testing.assert_allclose(b.get_values(), ds.elapsed.sel(policy="nojc", freq_ghz=3.3))


def test_pyperf_compare_to_reads_two_exports(tmp_path):
    """nojc is 2x faster in b: compare_to names it and says so; ext4 did not change."""
    a, b = make_run(seed=1), make_run({"ext4": 1.0, "nojc": 2.0}, seed=2)
    export_pyperf(a, tmp_path / "a.json")
    export_pyperf(b, tmp_path / "b.json")
    out = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", str(tmp_path / "a.json"),
                          str(tmp_path / "b.json")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for f in ("1.6", "3.3"):
        line = next(x for x in lines if f"policy=nojc,freq_ghz={f}:" in x)
        assert "2.0" in line and "faster" in line
    assert "not significant (2): policy=ext4,freq_ghz=1.6, policy=ext4,freq_ghz=3.3" in out.stdout


def test_bad_input(tmp_path):
    ds = make_run()
    with pytest.raises(ConfigError, match="^var.*commits"):
        export_pyperf(ds, tmp_path / "c.json", var="commits")
    with pytest.raises(ConfigError, match="<= 0"):
        export_pyperf(ds.assign(elapsed=-ds.elapsed), tmp_path / "c.json", var="elapsed")
    with pytest.raises(ConfigError, match="^var"):
        export_pyperf(ds, tmp_path / "c.json", var="fcr")
    with pytest.raises(ConfigError, match="^path"):
        export_pyperf(ds, tmp_path / "no" / "c.json")
    assert not list(tmp_path.iterdir())


def test_benchmark_name():
    assert benchmark_name({"policy": "ext4", "freq_ghz": np.float64(1.6), "threads": np.int64(64)}) \
        == "policy=ext4,freq_ghz=1.6,threads=64"
