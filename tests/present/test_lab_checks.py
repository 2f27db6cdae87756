"""Labs 4-7 (abtlab.present.lab_checks): a wrong prediction gets [NOT QUITE] and a hint that
quotes the number beside it and agrees with it; no difference measurable when the CI
includes 1; the closing Answer: line says whether the paper's result holds here."""
import numpy as np
import pandas as pd
import pytest

from abtlab.present import lab_checks as lc
from abtlab.studies import syscalls as sc
from tests.present.test_answers import _dio, _lock_grid


def _lock():
    # threads (1, 2, 8) x work (1, 100): spinlock x2 at (1, 1), mutex x2.5 at (8, 100)
    return _lock_grid(np.array([[2.0, 1.0], [1.0, 1.0], [1.0, 0.4]]), noise=0.02)


def test_lab4_wrong_prediction_hint_quotes_the_measured_ratio():
    here, ref = _lock(), sc.load_reference()
    f = lc.lock_check("slower", here, ref, 1, 1)
    assert f.ok is False and str(f).startswith("[NOT QUITE]")
    assert "x2.00, 95% CI [1.9" in f.message and "measured change: up" in f.message
    assert "t_mutex / t_spin = 2.00: one thread never waits" in f.message
    f = lc.lock_check("faster", here, ref, 8, 100)
    assert f.ok is False and "t_mutex / t_spin = 0.40: 8 threads on 2 hardware threads" in f.message
    assert lc.lock_check("slower", here, ref, 8, 100).ok is True


def test_lab4_ci_including_1_is_no_difference_and_the_answer_compares_with_the_paper():
    here, ref = _lock_grid(np.full((3, 2), 1.02), noise=0.3), sc.load_reference()
    f = lc.lock_check("faster", here, ref, 2, 100)
    assert f.ok is False and "no difference measurable here at 6 repetitions" in f.message
    assert lc.lock_check("same", here, ref, 2, 100).ok is True
    note = lc.lock_note(here, ref, [(1, 1), (8, 100)])
    assert note.startswith("Answer: spinlock vs mutex measured on this machine (2 hardware threads")
    assert "1 threads x 1 nops: here x1.02" in note and "paper x0.8" in note
    assert note.endswith("The paper's side is measured here at none of these cells.")   # 0.8, 1.9 vs ties


def test_lab4_without_measurement_reads_the_papers_grid_and_says_so():
    ref = sc.load_reference()
    f = lc.lock_check("faster", None, ref, 1, 1)
    paper = float(ref.spin_speedup.sel(threads=1, work=1))
    assert "the paper's grid, i7-2600K; nothing measured here" in f.message
    assert f"x{paper:.2f}" in f.message
    assert lc.lock_note(None, ref, [(1, 1)]).startswith("Answer: nothing measured here")


def test_lab5_wrong_prediction_hint_quotes_the_measured_ratio_and_magnitudes():
    ds = _dio([[1.0, 3.0], [1.25, 1.0]], noise=0.02)
    ds["throughput"] = 1e6 / ds.elapsed
    f = lc.dio_check("slower", ds, 2, 65536)
    assert f.ok is False and "x3.00" in f.message and "t_buffered / t_direct = 3.00: the file is read once" in f.message
    assert lc.dio_check("faster", ds, 3, 4096).ok is True
    f = lc.dio_check("faster", ds, 2, 4096)
    assert f.ok is False and "no difference measurable here at 6 repetitions" in f.message
    note = lc.dio_note(ds, [(2, 65536), (3, 4096)])
    assert "workload 2 at 64 KiB x3.00" in note and "(direct faster)" in note
    assert "overwrite) holds here" in note
    tie = _dio([[1.0, 1.0], [1.0, 1.0]], noise=0.3)
    tie["throughput"] = 1e6 / tie.elapsed
    assert "overwrite) is not measurable here (the CI includes 1)" in lc.dio_note(tie, [(3, 4096)]) and "MiB/s" in note and "\nAnswer: " in note


def _table(winner, lead_ci=(0.8, 0.95)):
    t = pd.DataFrame({"metric": ["bps", "iops", "bandwidth", "arpt"], "normalized": [0.9, 0.5, 0.4, 0.1],
                      "ci_low": [lead_ci[0], 0.2, 0.1, -0.3], "ci_high": [lead_ci[1], 0.7, 0.6, 0.4],
                      "n": 10, "winner": winner})
    t.attrs["source"] = "SIMULATED IOzone runs"
    return t


def test_lab6_wrong_prediction_hint_quotes_the_cis_and_the_answer_says_if_the_paper_holds():
    f = lc.bps_check("bandwidth", _table("bps"))
    assert f.ok is False and "bps +0.90 [+0.80, +0.95]" in f.message and "the measurement says bps" in f.message
    assert lc.bps_check("bps", _table("bps")).ok is True
    assert "that result holds here" in lc.bps_note(_table("bps"))
    f = lc.bps_check("bps", _table(""))
    assert f.ok is False and "no difference measurable here" in f.message
    assert lc.bps_check("none", _table("")).ok is True
    assert "none measurable" in lc.bps_note(_table(""))


def _sera(energy, time):
    rows = []
    for p, e, t in (("fixed-high", (1, 1, 1), (1, 1, 1)), ("sera", energy, time)):
        rows.append({"policy": p, "freqs_ghz": "2.5" if p == "fixed-high" else "0.8",
                     **{f"energy_ratio{k}": v for k, v in zip(("", "_lo", "_hi"), e)},
                     **{f"time_ratio{k}": v for k, v in zip(("", "_lo", "_hi"), t)}})
    df = pd.DataFrame(rows)
    df.attrs.update(workload="fio-seq", seeds=4)
    return df


def test_lab7_wrong_prediction_hint_quotes_the_modelled_energy():
    df = _sera((0.86, 0.85, 0.87), (1.05, 1.04, 1.06))
    f = lc.sera_check("higher", df, "energy")
    assert f.ok is False and "(MODELLED)" in f.message and "SERA-IO / fixed-high = 0.86 in energy" in f.message
    assert lc.sera_check("lower", df, "energy").ok is True
    f = lc.sera_check("faster", df, "time")       # SERA-IO's run is 5% longer: slower
    assert f.ok is False and "SIMULATED" in f.message and "SERA-IO / fixed-high = 1.05 in time" in f.message
    assert "measured change: down" in f.message and lc.sera_check("slower", df, "time").ok is True
    assert "holds for energy, at a cost in time (x1.05" in lc.sera_note(df)
    same = _sera((1.01, 0.93, 1.09), (1.0, 0.99, 1.01))
    assert lc.sera_check("same", same, "energy").ok is True
    assert "does not hold here" in lc.sera_note(same)


@pytest.mark.parametrize("kw", [{"data": "guest"}, {"data": "real"}])
def test_lab_data_refuses_other_settings(kw):
    from abtlab.errors import ConfigError
    from abtlab.studies import lab_studies
    with pytest.raises(ConfigError) as exc:
        lab_studies.lock_lab(**kw)
    assert exc.value.field == "data"
    with pytest.raises(ConfigError) as exc:
        lab_studies.sera_lab(seeds=1)
    assert exc.value.field == "seeds"


def test_lab5_without_measurement_grades_only_the_papers_figure():
    f = lc.dio_check("faster", None, 2, 65536)
    assert str(f).startswith("[NOT MEASURED HERE]") and "data='auto'" in f.message
    f = lc.dio_check("slower", None, 3, 4096)
    assert f.ok is False and "the paper's figure" in f.message and "t_buffered / t_direct = 1.25" in f.message


def test_labs_4_and_5_on_a_busy_host_grade_nothing_and_their_answers_name_no_side():
    """A run that started on a busy host: the ratio and its CI are shown, no prediction is
    graded (a bad word is still refused), and the closing answers name no side, as study
    07's table does."""
    from tests.present.test_answers import BUSY
    here, ref = _lock().assign_attrs(host_quiet=BUSY), sc.load_reference()
    f = lc.lock_check("slower", here, ref, 1, 1)
    assert f.ok is None and not f.measured and "x2.00 [1.9" in f.message
    assert "not graded: the host was busy as the run started (CPUs 100% busy, load 6.44" in f.message
    with pytest.raises(Exception, match="prediction"):
        lc.lock_check("sideways", here, ref, 1, 1)
    note = lc.lock_note(here, ref, [(1, 1), (8, 100)])
    assert "(no side named)" in note and "No side is named here: the host was busy" in note
    ds = _dio([[1.0, 3.0], [1.25, 1.0]], noise=0.02).assign_attrs(host_quiet=BUSY)
    ds["throughput"] = 1e6 / ds.elapsed
    f = lc.dio_check("slower", ds, 2, 65536)
    assert f.ok is None and not f.measured and "x3.00" in f.message and "not graded: the host was busy" in f.message
    note = lc.dio_note(ds, [(2, 65536), (3, 4096)])
    assert "(direct faster)" not in note and "(no side named)" in note
    assert "overwrite) is not measurable here: the host was busy" in note


def test_lab6_on_a_busy_host_names_no_metric():
    """bps_table of runs that started on a busy host names no winner, though the lead is
    clear; lab 6's check and answer say why."""
    import xarray as xr
    from abtlab.studies import lab_studies as ls
    from tests.present.test_answers import BUSY
    x = np.linspace(1, 10, 12)
    rng = np.random.default_rng(1)
    cols = {ls.RUNTIME: 30 - 2 * x, "bps": x, "iops": x + 3 * rng.standard_normal(12),
            "bandwidth": x + 3 * rng.standard_normal(12), "arpt": -x + 3 * rng.standard_normal(12)}
    runs = xr.Dataset({k: ("run", v) for k, v in cols.items()}, attrs={"source": "fio"})
    assert ls.bps_table(runs).winner.iloc[0] == "bps"          # the constructed lead
    table = ls.bps_table(runs.assign_attrs(host_quiet=BUSY))
    assert (table.winner == "").all()
    f = lc.bps_check("bps", table)
    assert f.ok is False and "no metric named: the host was busy" in f.message
    assert "is not measured here (the host was busy" in lc.bps_note(table)
