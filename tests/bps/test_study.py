"""abtlab.bps.study: fio runs under libabtrace, their metrics, CC and its normalisation.

The measured CCs depend on the machine and are reported, not asserted; what is
asserted is what the runs must be whatever the timing: the calls fio made, the
bytes required and moved, and the arithmetic of the correlation table."""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from abtlab.bps import study as bps_study
from abtlab.bps import EXPECTED_SIGN
from abtlab.errors import ConfigError, UnavailableError

NATIVE = Path(__file__).resolve().parents[2] / "backends"
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (make installs it)")
KiB, MiB = 1024, 1024 * 1024
SMALL = dict(sizes=(4 * KiB, 64 * KiB, 1 * MiB), jobs=(1, 2, 4), spacings=(8, 512, 4096),
             total_bytes=4 * MiB, job_bs=64 * KiB, region_size=256, regions=256)


@pytest.fixture(scope="module")
def lib():
    subprocess.run(["make", "-s", "-C", str(NATIVE), "trace/libabtrace.so"], check=True)


@pytest.fixture(scope="module")
def small_study(lib, tmp_path_factory):
    if shutil.which("fio") is None:
        pytest.skip("fio not installed (make installs it)")
    where = tmp_path_factory.mktemp("study")
    return bps_study.run_study(where, **SMALL), where


def test_runs_hold_the_calls_fio_made(small_study):
    ds, where = small_study
    assert not list(where.iterdir())                                     # its files are gone
    assert ds.sizes["run"] == 9
    size = ds.where(ds["set"] == "size", drop=True)
    for bs, ops, nbytes in zip(size["request_size"].values, size["ops"].values, size["bytes"].values):
        assert ops == 4 * MiB // bs and nbytes == 4 * MiB
    conc = ds.where(ds["set"] == "concurrency", drop=True)
    assert np.all(conc["ops"].values == 4 * MiB // (64 * KiB))          # total fixed, split over jobs
    sieve = ds.where(ds["set"] == "sieving", drop=True)
    assert np.all(sieve["required_bytes"].values == 256 * 256)
    for sp, moved in zip(sieve["spacing"].values, sieve["bytes"].values):
        assert moved == -(-256 * (256 + sp) // (64 * KiB)) * 64 * KiB    # holes read, whole buffers
    assert np.all(ds["blocks"].values == ds["required_bytes"].values / 512)
    np.testing.assert_allclose(ds["bps"].values, ds["blocks"].values / ds["overlap_s"].values)
    assert np.all(ds["overlap_s"].values <= ds["elapsed_s"].values + 1e-12)
    assert np.all(ds["elapsed_s"].values <= ds["runtime"].values)
    assert np.all(ds["dropped"].values == 0)
    assert ds.attrs["backend"] == "fio" and ds.attrs["freq_mode"] == "real"
    assert ds["runtime"].attrs["units"] == "s"


def test_correlations_are_pearson_normalised_by_table1(small_study):
    ds = small_study[0]
    corr = bps_study.correlations(ds)
    for _, row in corr[corr["set"] != "mean"].iterrows():
        key = {"size": "request_size", "concurrency": "jobs", "sieving": "spacing"}[row["set"]]
        sub = ds.where(ds["set"] == row["set"], drop=True).sortby(key)
        cc = np.corrcoef(sub[row["metric"]].values, sub["runtime"].values)[0, 1]
        assert row["cc"] == pytest.approx(cc)
        assert row["normalized"] == pytest.approx(cc * EXPECTED_SIGN[row["metric"]])
        assert row["n"] == 3
    mean = corr[corr["set"] == "mean"].set_index("metric")["normalized"]
    per_set = corr[corr["set"] != "mean"].groupby("metric")["normalized"].mean()
    for m in EXPECTED_SIGN:
        assert mean[m] == pytest.approx(per_set[m])
    table = bps_study.compare_with_paper(corr)
    paper = table.set_index(["set", "metric"])["paper"]
    assert paper[("concurrency", "arpt")] == "-0.58" and paper[("mean", "bps")] == "0.91"


def test_reps_are_averaged_before_correlating():
    import xarray as xr
    runtime = [1.0, 3.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]
    ds = xr.Dataset({v: ("run", np.arange(8.0) if v != "runtime" else runtime)
                     for v in ("runtime", "bps", "iops", "bandwidth", "arpt")},
                    coords={"set": ("run", ["size"] * 8), "request_size": ("run", [1, 1, 2, 2, 3, 3, 4, 4]),
                            "jobs": ("run", [0] * 8), "spacing": ("run", [0] * 8)})
    corr = bps_study.correlations(ds).set_index(["set", "metric"])
    # level means: metric 0.5, 2.5, 4.5, 6.5; runtime 2, 2, 3, 4
    assert corr.loc[("size", "bps"), "cc"] == pytest.approx(np.corrcoef([0.5, 2.5, 4.5, 6.5], [2, 2, 3, 4])[0, 1])


@pytest.mark.root
@needs_fio
def test_small_study_on_scratch_ext4_with_direct_io(lib, scratch_ext4):
    ds = bps_study.run_study(scratch_ext4.dir, sets=("size",), sizes=(4 * KiB, 64 * KiB, 1 * MiB),
                             total_bytes=2 * MiB, direct=True)
    assert list(np.sort(ds["ops"].values)) == [2, 32, 512]
    assert ds.attrs["filesystem"] == "ext4" and ds.attrs["direct"] == 1
    assert not list(Path(scratch_ext4.dir).glob("abtlab-bps.*"))           # its files are gone


@pytest.mark.parametrize("kwargs, field", [
    ({"sets": ("size", "bogus")}, "sets"), ({"sizes": (4096, 0)}, "sizes"),
    ({"jobs": ()}, "jobs"), ({"reps": 0}, "reps"), ({"total_bytes": 1000}, "total_bytes"),
    ({"spacings": (-1,)}, "spacings"),
])
def test_bad_arguments(tmp_path, kwargs, field):
    if shutil.which("fio") is None:
        pytest.skip("fio not installed: run_study stops at that first")
    with pytest.raises(ConfigError) as exc:
        bps_study.run_study(tmp_path, **kwargs)
    assert exc.value.field == field


def test_missing_directory_and_missing_fio(tmp_path, monkeypatch):
    if shutil.which("fio"):
        with pytest.raises(ConfigError) as exc:
            bps_study.run_study(tmp_path / "nope")
        assert exc.value.field == "directory"
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UnavailableError, match="fio"):
        bps_study.run_study(tmp_path)


@needs_fio
def test_a_stopped_study_resumes_without_losing_a_run(lib, tmp_path, monkeypatch):
    """The study is a sweep (backend bps): runs finished before a stop are kept in
    out's parts and not run again by resume."""
    from abtlab.bps.backend import BpsBackend
    from abtlab.data import store
    from abtlab.errors import RunError
    where, out = tmp_path / "files", tmp_path / "bps.nc"
    where.mkdir()
    kw = dict(sets=("size",), sizes=(4 * KiB, 64 * KiB, 1 * MiB), total_bytes=1 * MiB, out=out)
    real, calls = BpsBackend.run_point, []

    def stop_at_third(self, point, ctx):
        calls.append(point["case"])
        if len(calls) == 3:
            raise RunError("stopped")
        return real(self, point, ctx)
    monkeypatch.setattr(BpsBackend, "run_point", stop_at_third)
    with pytest.raises(RunError):
        bps_study.run_study(where, **kw)
    assert len(store.read_parts(out)) == 2 and not list(where.iterdir())
    monkeypatch.setattr(BpsBackend, "run_point", real)
    ds = bps_study.run_study(where, resume=True, **kw)
    assert sorted(ds["ops"].values) == [1, 16, 256] and ds.sizes["run"] == 3
    assert out.exists() and not store.parts_dir(out).exists()
    with pytest.raises(ConfigError) as e:
        from abtlab.bps.backend import parse_case
        parse_case("size:big")
    assert e.value.field == "case"
