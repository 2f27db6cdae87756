"""abtlab.present.classroom: prediction checks and lab files."""
import pytest

from abtlab.present import classroom
from abtlab.errors import ConfigError


def test_measured_change():
    assert classroom.measured_change(10, 12) == "up"
    assert classroom.measured_change(10, 8) == "down"
    assert classroom.measured_change(10, 10.2) == "same"
    assert classroom.measured_change(10, 12, ci=(0.9, 1.3)) == "same"
    assert classroom.measured_change(10, 8, ci=(0.7, 0.9)) == "down"
    assert classroom.measured_change(10, 40, ci=(float("-inf"), float("inf"))) == "unknown"
    assert classroom.measured_change(10, 40, ci=(float("nan"), float("nan"))) == "unknown"


def test_a_ratio_without_a_ci_grades_no_prediction_and_says_why():
    """Two repetitions far apart give a point estimate (x4) and no CI: neither "faster" nor
    "same" is graded, and the line says there is no CI rather than a direction."""
    why = {"up": "it rose", "down": "it fell", "same": "it held"}
    for pred in ("faster", "same"):
        fb = classroom.check_change(pred, 10, 40, "x", ci=(float("-inf"), float("inf")), why=why)
        assert fb.ok is None and not fb.measured and str(fb).startswith("[NOT MEASURED HERE]")
        assert "x4.00, no CI: too few or too noisy repetitions" in fb.message and "it rose" not in fb.message
    with pytest.raises(ConfigError, match="prediction"):
        classroom.check_change("sideways", 10, 40, "x", ci=(float("-inf"), float("inf")))


def test_check_change():
    assert classroom.check_change("slower", 10, 8, "x").ok is True
    fb = classroom.check_change("faster", 10, 8, "x", why="because")
    assert fb.ok is False and "Hint: because" in str(fb) and str(fb).startswith("[NOT QUITE]")
    assert classroom.check_change("more", 1, 3, "commits").ok is True
    assert classroom.check_change(None, 1, 3, "commits").ok is None
    with pytest.raises(ConfigError, match="prediction"):
        classroom.check_change("sideways", 1, 2, "x")


def test_a_hint_per_direction_explains_what_was_measured_with_either_verdict():
    why = {"up": "it rose because", "down": "it fell because", "same": "it held because"}
    right = classroom.check_change("faster", 10, 20, "x", why=why)
    wrong = classroom.check_change("slower", 10, 20, "x", why=why)
    assert right.ok is True and "Why: it rose because" in str(right)
    assert wrong.ok is False and "Why: it rose because" in str(wrong) and "fell" not in str(wrong)
    with pytest.raises(ConfigError, match="why"):
        classroom.check_change("faster", 10, 20, "x", why={"up": "only one"})


def test_paper_comparison_says_when_the_write_op_does_not_slow_down():
    import abtlab.sim as sim
    ds = sim.simulate(reps=3, seed=1, threads=[64], freq_ghz=[1.6, 3.3], policy=["ext4"])
    text = classroom.paper_comparison(ds, 1.6, 3.3)
    assert "Chang, Li, Grove and Cameron, MASCOTS 2014" in text and "x0.53" in text
    assert "SIMULATED" in text and "with the write op timed" in text and "with the fsync timed" in text
    w = float(ds.throughput.sel(freq_ghz=3.3).mean() / ds.throughput.sel(freq_ghz=1.6).mean())
    assert (w > 1.1) == ("does not slow down" in text)


def test_check_number_and_choice():
    assert classroom.check_number(1.0, 1.1, "r", rel_tol=0.2).ok is True
    assert classroom.check_number(2.0, 1.0, "r").ok is False
    with pytest.raises(ConfigError):
        classroom.check_number("big", 1.0, "r")
    assert classroom.check_choice(16, 16.0, [0, 1, 16], "w").ok is True
    assert classroom.check_choice(1, 16.0, [0, 1, 16], "w").ok is False
    with pytest.raises(ConfigError):
        classroom.check_choice(3, 16.0, [0, 1, 16], "w")


def test_labs_copy_and_refuse_overwrite(tmp_path):
    labs = classroom.lab_notebooks()
    assert [p.stem.split("_")[1] for p in labs] == [str(i) for i in range(1, 8)]   # labs 1-7, in order
    copied = classroom.copy_labs(tmp_path)
    assert [p.name for p in copied] == [p.name for p in labs]
    with pytest.raises(ConfigError, match="dest"):
        classroom.copy_labs(tmp_path)
    assert len(classroom.copy_labs(tmp_path, overwrite=True)) == len(labs)
    with pytest.raises(ConfigError):
        classroom.lab_notebooks(tmp_path / "empty")


def test_cli_lab(tmp_path, capsys):
    from abtlab.cli import main
    assert main(["lab", "list"]) == 0
    listed = capsys.readouterr().out
    for name in ("lab_1_faster_cpu", "lab_4_spinlock", "lab_5_direct_io", "lab_6_bps", "lab_7_sera_io"):
        assert name in listed
    assert "Lab 4 — When does spinning beat sleeping?" in listed
    assert main(["lab", "copy", str(tmp_path / "class")]) == 0
    assert main(["lab", "copy", str(tmp_path / "class")]) == 2


def test_cli_lab_check_runs_each_lab_on_the_data_asked_for(tmp_path, monkeypatch, capsys):
    from abtlab.cli import main
    from abtlab.labs import journal as journal_labs
    from abtlab.present import report
    seen = []

    def fake_batch(items, out, **kw):
        seen.extend((it.notebook.stem, it.parameters) for it in items)
        return [], tmp_path / "index.html"
    monkeypatch.setattr(report, "run_batch", fake_batch)
    journal = {"lab_1_faster_cpu", "lab_2_batching", "lab_3_delay"}     # the labs with a guest setting
    stored_guest = {"lab_1_faster_cpu", "lab_2_batching"}        # lab 3's windows (1-64 ms) are not in the stored guest
    for flag, data, takes in (([], "sim", None), (["--real"], "auto", None),
                              (["--guest"], journal_labs.GUEST_RESULT, stored_guest),
                              (["--guest-live"], "guest", journal)):
        seen.clear()
        assert main(["lab", "check", "--out", str(tmp_path), *flag]) == 0
        assert len(seen) == len(classroom.lab_notebooks())
        for name, params in seen:   # a lab without the setting runs on its own default
            assert params["data"] == (data if takes is None or name in takes else
                                      classroom._parameters(report.NOTEBOOK_DIR / f"{name}.ipynb")[0]["data"])
            assert "real_kernel" not in params                    # the lab's own default unless asked
    for given, value in (("stored", "stored"), ("none", None), ("auto", "auto")):
        seen.clear()
        assert main(["lab", "check", "--out", str(tmp_path), "--real-kernel", given]) == 0
        assert {name for name, params in seen if params.get("real_kernel", "unset") == value} == journal
    seen.clear()
    assert main(["lab", "check", "--out", str(tmp_path), "--sim-params", "paper_machine"]) == 0
    took = {name for name, params in seen if params.get("sim_params") == "paper_machine"}
    assert took == {n for n in journal if "sim_params" in classroom._parameters(
        report.NOTEBOOK_DIR / f"{n}.ipynb")[0]} and took
    capsys.readouterr()
    assert main(["lab", "check", "--out", str(tmp_path), "--real", "--guest"]) == 2
    assert "not allowed with argument --real" in capsys.readouterr().err
