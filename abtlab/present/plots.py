"""Plots of run datasets. Every title says whether data is measured, emulated or simulated."""
from __future__ import annotations

import numpy as np

from ..data import schema
from ..data.display import display_unit
from ..stats.intervals import point_stats
from ..stats.values import provenance_label
from .figures import finish

__all__ = ["plot_metric", "plot_throughput", "plot_unblocked"]

_LABELS = {"throughput": ("throughput", 2 ** 20, "MiB/s"), "fcr": ("file creation rate", 1, "files/s"),
           "unblocked_threads": ("unblocked threads (trace evidence)", 1, "threads"),
           "threads_clear_of_commits": ("threads clear of commits (span overlap)", 1, "threads"), "commits": ("journal commits", 1, "commits"),
           "mean_commit_wait": ("mean commit wait", 1e-3, "ms")}


def plot_metric(ds, var="throughput", facet=None, ax=None):
    """Plot a variable (mean and 95% CI over repetitions) against CPU frequency.

    One line per policy; other factors with several levels become separate lines. The
    title says whether the data is measured, emulated or simulated.

    Parameters
    ----------
    ds : xarray.Dataset
        A run dataset with a `freq_ghz` dim.
    var : str, default "throughput"
        A data variable with a `rep` dim.
    facet : str, optional
        A factor to draw one panel per level of (e.g. "threads").
    ax : matplotlib.axes.Axes or array of Axes, optional
        Where to draw, one per panel; a new figure when omitted.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from abtlab.present.plots import plot_metric
    >>> fig = plot_metric(ds, "throughput_fsync", facet="threads")  # doctest: +SKIP
    """
    # deferred: matplotlib is heavy; `import abtlab` and `abtlab run` do without it
    import matplotlib.pyplot as plt
    stats = point_stats(ds, var)
    name, scale, unit = _axis(ds, var, stats["mean"].values)
    panels = list(ds[facet].values) if facet else [None]
    if ax is None:
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
        axes = axes[0]
    else:
        axes, fig = np.atleast_1d(ax), np.atleast_1d(ax)[0].figure
    nonneg = bool(np.nanmin(ds[var].values) >= 0) if np.isfinite(ds[var].values).any() else False
    for a, level in zip(axes, panels):
        sub = stats.sel({facet: level}) if facet else stats
        _lines(a, sub, scale, var, nonneg)
        a.set_xlabel("CPU frequency (GHz)" + (" [emulated]" if ds.attrs.get("freq_mode") == "emulated" else ""))
        a.set_ylabel(f"{name} ({unit})")
        a.set_title(_panel_title(ds, facet, level) if facet else name, fontsize=10)
        a.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{ds.attrs.get('backend', '')} {name} vs frequency - {provenance_label(ds)}", fontsize=11)
    return finish(fig)


def _axis(ds, var, means):
    """(name, scale, unit) of var's axis: the plot divides by scale. A stored unit in
    abtlab.data.display's convention (bytes/s in MiB/s, s in ms or s), a count by its
    name here (threads, commits)."""
    name, scale, unit = _LABELS.get(var, (var, 1, ds[var].attrs.get("units", "")))
    stored = ds[var].attrs.get("units", "")
    if stored and stored != "1":
        finite = means[np.isfinite(means)]
        unit, factor = display_unit(stored, [float(np.abs(finite).max())] if finite.size else [])
        scale = 1 / factor
    return name, scale, unit


def _panel_title(ds, facet, level) -> str:
    """facet=level, with the clock of a machine panel (host, or a guest's virtual time)."""
    title = f"{facet}={level}"
    if facet == schema.MACHINE and "clock" in ds.coords:
        title += f" [{ds['clock'].sel({facet: level}).item()} clock]"
    return title


def _band(s, var, nonneg):
    """The 95% CI band, clipped to what the quantity can be: a t-interval from a few
    repetitions reaches below zero for a count or a rate, and past N for a count of
    threads out of N."""
    lo, hi = s["ci_low"].values.astype(float), s["ci_high"].values.astype(float)
    if nonneg:
        lo = np.maximum(lo, 0.0)
    if var in ("threads_clear_of_commits", "unblocked_threads") and "threads" in s.coords and s["threads"].size == 1:
        hi = np.minimum(hi, float(s["threads"]))
    return lo, hi


def _lines(ax, sub, scale, var="", nonneg=False):
    sub = sub.squeeze([d for d in sub["mean"].dims if d != schema.FREQ and sub.sizes[d] == 1], drop=False)
    other = [d for d in sub["mean"].dims if d != schema.FREQ]
    x = sub[schema.FREQ].values
    stacked = sub.stack(line=other) if other else sub.expand_dims(line=[0])
    for i in range(stacked.sizes["line"]):
        s = stacked.isel(line=i)
        label = ", ".join(f"{s[d].values}" if d == "policy" else f"{d}={s[d].values}" for d in other)
        if not label:  # a single line: name it by its policy when there is one
            label = str(s["policy"].values) if "policy" in s.coords else "mean"
        n = s["n"].values if "n" in s else None
        if n is not None and np.size(n) and np.nanmin(n) < 5:   # a wide band: say why
            label += f" (n={int(np.nanmin(n))})"
        m = s["mean"].values / scale
        ax.plot(x, m, marker="o", label=label)
        lo, hi = _band(s, var, nonneg)
        ax.fill_between(x, lo / scale, hi / scale, alpha=0.2)


def plot_throughput(ds, facet=None, ax=None):
    """Plot throughput against CPU frequency (the file creation rate `fcr` for Metarates).

    `plot_metric` on "throughput" when the dataset has it, else on "fcr"; also
    `ds.abt.plot_throughput()`.

    Parameters
    ----------
    ds : xarray.Dataset
        A run dataset with a `freq_ghz` dim.
    facet : str, optional
        A factor to draw one panel per level of (e.g. "threads").
    ax : matplotlib.axes.Axes or array of Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import abtlab
    >>> from abtlab.present.plots import plot_throughput
    >>> ds = abtlab.load("data/samples/iozone_64t_loop_ext4_emulated.nc")
    >>> fig = plot_throughput(ds)  # doctest: +SKIP
    """
    var = "throughput" if "throughput" in ds else "fcr"
    return plot_metric(ds, var, facet=facet, ax=ax)


# the paper's count first (eq. 4 on the trace evidence), then span overlap, which is not it
COUNTS = ("unblocked_threads", "threads_clear_of_commits")


def plot_unblocked(ds, facet=None):
    """Plot the paper's unblocked threads beside the threads clear of commits.

    The unblocked threads are eq. 4 on the trace evidence (the write op never slept on
    the journal); the threads clear of commits are span overlap, not the paper's count.
    Each against frequency, one panel per level of `facet`; a panel says so where the
    data records no evidence. Also `ds.abt.plot_unblocked()`.

    Parameters
    ----------
    ds : xarray.Dataset
        A run dataset with a `freq_ghz` dim.
    facet : str, optional
        A factor to draw one column of panels per level of (e.g. "threads").

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import abtlab
    >>> from abtlab.present.plots import plot_unblocked
    >>> ds = abtlab.load("data/samples/iozone_64t_loop_ext4_emulated.nc")
    >>> fig = plot_unblocked(ds)  # doctest: +SKIP
    """
    # deferred: matplotlib is heavy; `import abtlab` and `abtlab run` do without it
    import matplotlib.pyplot as plt
    levels = list(ds[facet].values) if facet else [None]
    rows, cols = (2, len(levels)) if facet else (1, 2)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for k, var in enumerate(COUNTS):
        row = axes[k] if facet else axes[0, k:k + 1]
        if var in ds and np.isfinite(ds[var].values).any():
            plot_metric(ds, var, facet=facet, ax=row)
            continue
        for a, level in zip(row, levels):
            a.text(0.5, 0.5, "no trace evidence in this data\n(it records no sleeps on the journal)",
                   ha="center", va="center", transform=a.transAxes, fontsize=9)
            a.set_title(_LABELS[var][0] + (f", {_panel_title(ds, facet, level)}" if facet else ""), fontsize=10)
            a.set_xticks([]), a.set_yticks([])
    fig.suptitle(f"{ds.attrs.get('backend', '')} unblocked threads (the paper's, trace evidence) and threads "
                 f"clear of commits (span overlap) vs frequency - {provenance_label(ds)}", fontsize=11)
    return finish(fig)
