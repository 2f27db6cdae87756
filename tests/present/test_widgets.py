"""abtlab.present.widgets: the callbacks as plain functions, the explorers without a browser."""
import matplotlib
import pytest

from abtlab.present import widgets
from abtlab.errors import ConfigError

matplotlib.use("Agg")


def test_delay_point_values():
    r = widgets.delay_point(window_ms=8, max_resets=16, threads=32, freq_ghz=2.0, reps=2)
    assert r["params"] == dict(window_ms=8.0, max_resets=16, threads=32, freq_ghz=2.0, device="hdd7200")
    for pol in ("ext4", "delayjc"):
        assert r[pol]["throughput_mib_s"] > 0
        assert 0 <= r[pol]["unblocked_threads"] <= 32
        assert r[pol]["commit_wait_ms"] > 0


@pytest.mark.parametrize("kw, field", [(dict(threads=0), "threads"), (dict(freq_ghz=-1), "freq_ghz"),
                                       (dict(window_ms=0), "windows_ms"), (dict(max_resets=-2), "max_resets")])
def test_delay_point_bad_input(kw, field):
    with pytest.raises(ConfigError) as e:
        widgets.delay_point(reps=1, **kw)
    assert e.value.field == field


def test_frequency_point_rows_and_bad_workload():
    df = widgets.frequency_point("iozone", reps=2)
    assert list(df.policy) == ["fixed-high", "fixed-low", "ondemand", "sera", "abt-aware"]
    assert df.loc[df.policy == "fixed-high", "time_s_vs_fixed-high"].item() == pytest.approx(1.0)
    assert set(df.time_mode) == {"simulated"} and set(df.energy_mode) == {"modelled"}
    with pytest.raises(ConfigError, match="workload"):
        widgets.frequency_point("tar")


def test_static_fallback(monkeypatch):
    from matplotlib.figure import Figure
    monkeypatch.setenv("ABTLAB_STATIC", "1")
    assert widgets.is_static() and not widgets.is_static(False)
    fig = widgets.delay_explorer(threads=16, reps=1)
    assert isinstance(fig, Figure)
    assert "SIMULATED" in fig._suptitle.get_text()
    assert isinstance(widgets.frequency_explorer(reps=2), Figure)


def test_delay_explorer_slider_recomputes(monkeypatch):
    """Moving a slider calls the callback, which recomputes with the new value."""
    import ipywidgets
    monkeypatch.delenv("ABTLAB_STATIC", raising=False)
    calls = []
    real = widgets.delay_point
    monkeypatch.setattr(widgets, "delay_point", lambda **kw: calls.append(kw) or real(**kw))
    box = widgets.delay_explorer(static=False, threads=16, reps=1)
    assert isinstance(box, ipywidgets.VBox)
    sliders = {c.description: c for c in box.children[0].children}
    assert len(calls) == 1 and calls[0]["threads"] == 16
    sliders["threads"].value = 24
    assert len(calls) == 2 and calls[-1]["threads"] == 24
    sliders["window ms"].value = 4.0
    assert calls[-1]["window_ms"] == pytest.approx(4.0) and calls[-1]["threads"] == 24


def test_frequency_explorer_dropdown_recomputes(monkeypatch):
    monkeypatch.delenv("ABTLAB_STATIC", raising=False)
    box = widgets.frequency_explorer(static=False, reps=2)
    controls = {c.description: c for c in box.children[0].children}
    assert set(box.explorer.result.workload) == {"iozone"}
    controls["workload"].value = "metarates"
    assert set(box.explorer.result.workload) == {"metarates"}
    controls["ABT tol"].value = 0.1
    assert box.explorer.values() == dict(workload="metarates", tol=0.1, up_threshold=0.8)
