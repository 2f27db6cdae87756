"""The summary a run ends with: the headline per point with its unit and CI, the clock
ratio with its CI, and ds.abt.summary(tidy=True) as one row per point."""
import subprocess
import sys

import numpy as np
import pytest

from abtlab.present.summary import headline, summary_frame, summary_text
from abtlab.stats import point_summary, slowdown
from tests.run_data import make_run


def test_tidy_frame_is_one_row_per_point_in_mib_per_s_and_matches_point_summary():
    import abtlab.present.accessor  # noqa: F401  (registers ds.abt)
    ds = make_run({"ext4": 0.5, "nojc": 1.0}, reps=5)
    df = ds.abt.summary(tidy=True)
    assert len(df) == 2 * 2 * 2                                   # policy x freq x threads
    assert list(df.columns[:3]) == ["policy", "freq_ghz", "threads"]
    assert {"throughput [MiB/s]", "ci_low [MiB/s]", "ci_high [MiB/s]", "rsd", "n"} <= set(df.columns)
    ref = point_summary(ds, "throughput").to_dataframe().reset_index()
    np.testing.assert_allclose(df["throughput [MiB/s]"], ref["mean"] / 2 ** 20)
    np.testing.assert_allclose(df["ci_low [MiB/s]"], ref["ci_low"] / 2 ** 20)
    np.testing.assert_allclose(df["ci_high [MiB/s]"], ref["ci_high"] / 2 ** 20)
    assert (df["n"] == 5).all()
    assert df.attrs["units"] == "MiB/s" and df.attrs["provenance"] == "SIMULATED"
    # the default stays the Dataset its callers use
    assert "mean" in ds.abt.summary()


def test_text_names_unit_provenance_and_ratio_with_its_ci():
    ds = make_run({"ext4": 0.5, "nojc": 1.0}, reps=8, rsd=0.02)
    text = summary_text(ds)
    first = text.splitlines()[0]
    assert "throughput" in first and "MiB/s" in first and "95% CI" in first and "SIMULATED" in first
    sd = slowdown(ds).sel(freq_ghz=3.3, policy="ext4", threads=64)
    want = f"{float(sd['ratio']):.2f} [{float(sd['ci_low']):.2f}, {float(sd['ci_high']):.2f}]"
    assert "at 3.3 GHz / at 1.6 GHz (below 1 = slower" in text
    assert any(ln.split()[:2] == ["ext4", "64"] and ln.endswith(want) for ln in text.splitlines())
    mean = float(ds.throughput.sel(policy="nojc", freq_ghz=1.6, threads=256).mean()) / 2 ** 20
    assert f"{mean:.4g} [" in text


def test_text_says_when_there_is_no_ci():
    ds = make_run(reps=1)
    text = summary_text(ds)
    assert "no CI: too few repetitions" in text
    assert "no CI: too few or too noisy repetitions" in text      # the ratio's words


def test_metadata_run_is_read_by_its_fcr_in_files_per_s():
    ds = make_run(reps=3).rename({"throughput": "fcr"})
    ds["fcr"].attrs["units"] = "files/s"
    assert headline(ds) == "fcr"
    assert "fcr [files/s]" in summary_frame(ds).columns
    assert "files/s" in summary_text(ds).splitlines()[0]


def test_run_command_ends_with_the_table_without_heavy_imports(tmp_path):
    """`abtlab run sim` prints the table, and neither the run nor its summary imports
    matplotlib, statsmodels or scipy.stats (they would cost the CLI about a second)."""
    code = ("import sys; from abtlab.cli import main; "
            f"rc = main(['run', 'sim', '--threads', '16', '--file-size', '64k', '--record', '32k', "
            f"'--freq', '1.6,3.3', '--reps', '3', '--quiet', '--out', r'{tmp_path / 's.nc'}']); "
            "print('HEAVY', [m for m in ('matplotlib', 'statsmodels', 'scipy.stats') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
    assert "throughput [MiB/s]" in out.stdout and "SIMULATED" in out.stdout
    assert "throughput at 3.3 GHz / at 1.6 GHz" in out.stdout
    assert "wrote " in out.stdout and "2 points x 3 repetitions" in out.stdout
    assert "{'policy'" not in out.stdout                          # not the dims dict any more


@pytest.mark.parametrize("rows", [3])
def test_long_tables_are_cut_with_a_pointer_to_the_frame(rows):
    text = summary_text(make_run(reps=3), max_rows=rows)
    assert "... 5 more points: ds.abt.summary(tidy=True)" in text


def test_sweep_command_ends_with_the_table_too(tmp_path, capsys):
    """`abtlab sweep` of a metadata workload is read by its FCR in files/s."""
    from abtlab.cli import main
    spec = tmp_path / "m.toml"
    spec.write_text('backend = "sim"\n[factors]\nthreads = [16]\nfreq = "1.6,3.3"\n'
                    '[options]\nworkload = "metarates"\n[repetitions]\nmin = 2\nmax = 2\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "m.nc"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "fcr, files/s, SIMULATED" in out and "(eq. 9, one worker's file creation rate)" in out
    assert "fcr at 3.3 GHz / at 1.6 GHz" in out and "2 points x 2 repetitions" in out


def test_a_grid_without_the_papers_quantities_is_read_by_its_first_variable_with_units():
    run = make_run(reps=3)
    ds = run[["throughput"]].rename({"throughput": "run_id"})      # first, but never a headline
    ds["run_id"].attrs["units"] = "1"
    ds["op_ns"] = run["throughput"].assign_attrs(units="ns")
    assert headline(ds) == "op_ns"
    # read in its own unit, shown in the house's: ~1e9 ns is seconds
    assert summary_text(ds).startswith("op_ns, s, SIMULATED: mean [95% CI]")
