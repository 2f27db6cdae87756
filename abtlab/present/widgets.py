"""Interactive explorers for JupyterLab (ipywidgets), on the simulator (simulated data).

    import abtlab.present.widgets as w
    w.delay_explorer()          # window, max resets, threads, frequency -> delayJC vs ext4
    w.frequency_explorer()      # workload, tolerance -> time/energy/EDP per frequency policy

Each returns a widget to display. Where no interactive frontend will ever run the
callbacks (a notebook executed by `abtlab report`, which sets ABTLAB_STATIC=1, or plain
Python), it returns a static figure of the default point instead, so executed HTML
shows a plot and not a dead widget. The computations are plain functions
(abtlab.studies.explorer_points: `delay_point`, `frequency_point`), and
`Explorer.update()` is what a slider calls.
"""
from __future__ import annotations

import os

import matplotlib.pyplot as plt

from .. import sera
from ..extras import require
from ..studies.explorer_points import DELAY_MEASURES, delay_point, frequency_point
from .figures import finish

__all__ = ["delay_figure", "frequency_figure", "delay_explorer", "frequency_explorer",
           "Explorer", "is_static"]

_MEASURES = tuple(zip(DELAY_MEASURES, ("throughput (MiB/s)", "unblocked threads (eq. 4)",
                                       "mean commit wait (ms)")))


def is_static(static=None) -> bool:
    """True when widgets cannot be live: ABTLAB_STATIC=1 or not inside a Jupyter kernel."""
    if static is not None:
        return bool(static)
    if os.environ.get("ABTLAB_STATIC") == "1":
        return True
    try:
        # deferred: IPython comes with the optional extra [notebooks]; without it, static
        from IPython import get_ipython
    except ImportError:
        return True
    ip = get_ipython()
    return ip is None or not hasattr(ip, "kernel")


def delay_figure(result: dict):
    """Bars of ext4 vs delayJC for each measure of delay_point(); closed, displayable."""
    fig, axes = plt.subplots(1, 3, figsize=(9, 2.8))
    for ax, (m, label) in zip(axes, _MEASURES):
        ax.bar(["ext4", "delayJC"], [result["ext4"][m], result["delayjc"][m]],
               color=["tab:gray", "tab:blue"])
        ax.set_title(label, fontsize=9)
    p = result["params"]
    fig.suptitle(f"SIMULATED: delayJC window {p['window_ms']:g} ms, max resets {p['max_resets']}, "
                 f"{p['threads']} threads, {p['freq_ghz']:g} GHz, {p['device']}", fontsize=10)
    finish(fig)
    plt.close(fig)
    return fig


def frequency_figure(df):
    """Time, energy and EDP relative to fixed-high per policy; closed, displayable."""
    base = [c for c in df.columns if c.startswith("time_s_vs_")][0].removeprefix("time_s_vs_")
    fig, axes = plt.subplots(1, 3, figsize=(9, 2.8), sharey=True)
    for ax, col in zip(axes, ("time_s", "energy_j", "edp")):
        ax.bar(df.policy, df[f"{col}_vs_{base}"], color="tab:blue")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_title(f"{col} / {base}", fontsize=9)
        ax.tick_params(axis="x", rotation=45, labelsize=8)
    fig.suptitle(f"{df.workload.iloc[0]}: time {df.time_mode.iloc[0].upper()}, energy "
                 f"{df.energy_mode.iloc[0].upper()}", fontsize=10)
    finish(fig)
    plt.close(fig)
    return fig


def _ipywidgets():
    return require("ipywidgets", "notebooks", "the live explorers (static=True draws the figure "
                   "without them)")


class Explorer:
    """Controls + an output area; update() recomputes with the controls' values."""

    def __init__(self, compute, render, controls: dict):
        W = _ipywidgets()
        self.compute, self.render, self.controls = compute, render, controls
        self.out = W.Output()
        self.result = None
        for c in controls.values():
            c.observe(lambda _change: self.update(), names="value")
        self.widget = W.VBox([W.HBox(list(controls.values())), self.out])
        self.widget.explorer = self          # reachable from the displayed widget (tests, users)

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self):
        # deferred: IPython comes with the optional extra [notebooks] (as ipywidgets)
        from IPython.display import display
        self.result = self.compute(**self.values())
        self.out.clear_output(wait=True)
        with self.out:
            display(self.render(self.result))
        return self.result


def delay_explorer(static=None, **defaults):
    """The delay explorer (live sliders), or its default point as a static figure."""
    d = {**dict(window_ms=16.0, max_resets=64, threads=256, freq_ghz=3.3), **defaults}
    if is_static(static):
        return delay_figure(delay_point(**d))
    W = _ipywidgets()
    style = dict(continuous_update=False)
    ex = Explorer(lambda **v: delay_point(**{**d, **v}), delay_figure, {
        "window_ms": W.FloatLogSlider(value=d["window_ms"], base=2, min=-2, max=8, description="window ms", **style),
        "max_resets": W.IntSlider(value=d["max_resets"], min=0, max=512, description="max resets", **style),
        "threads": W.IntSlider(value=d["threads"], min=1, max=512, description="threads", **style),
        "freq_ghz": W.FloatSlider(value=d["freq_ghz"], min=0.8, max=4.0, step=0.1, description="GHz", **style)})
    ex.update()
    return ex.widget


def frequency_explorer(static=None, **defaults):
    """The frequency-policy explorer (live controls), or its default as a static figure."""
    d = {**dict(workload="iozone", tol=0.02, up_threshold=0.8), **defaults}
    if is_static(static):
        return frequency_figure(frequency_point(**d))
    W = _ipywidgets()
    ex = Explorer(lambda **v: frequency_point(**{**d, **v}), frequency_figure, {
        "workload": W.Dropdown(options=list(sera.WORKLOADS), value=d["workload"], description="workload"),
        "tol": W.FloatSlider(value=d["tol"], min=0, max=0.2, step=0.01, description="ABT tol",
                             continuous_update=False),
        "up_threshold": W.FloatSlider(value=d["up_threshold"], min=0.1, max=1.0, step=0.05,
                                      description="ondemand up", continuous_update=False)})
    ex.update()
    return ex.widget
