"""abtlab.present.widgets: the explorers without a browser (their points:
tests/studies/test_explorer_points.py)."""
import matplotlib
import pytest

from abtlab.present import widgets

matplotlib.use("Agg")


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
