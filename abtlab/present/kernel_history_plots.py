"""Figures of the kernel history study (abtlab.studies.kernel_history): the high/low frequency
throughput ratio per machine and kernel with its CI, and one run's X/Y/Z timeline per
kernel. Each row is labelled with its kind of data (measured with emulated frequency,
virtual time, simulated); a missing row says why it is missing."""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from ..data import runs, schema
from ..errors import ConfigError
from ..stats.values import provenance_label
from ..studies.kernel_history import ROWS, History
from .figures import finish
from .kernel_history_tables import ratio_table
from .paper_terms import PAPER_IOZONE, unblocked_var
from .study_plots import plot_commit_timeline

__all__ = ["plot_ratios", "plot_unblocked", "plot_timelines"]

_KIND = {"emulated frequency": "emulated freq.", "VIRTUAL": "virtual time",
         "SIMULATED": "SIMULATED"}


def _kind(label: str, sep: str = "\n") -> str:
    """The short kind of data of a provenance label: for a tick label or a title."""
    return sep.join(short for key, short in _KIND.items() if key in label) or label


def plot_ratios(hist: History, f_low=None, f_high=None, level=0.95, ax=None):
    """Ratio f_high/f_low of throughput per study row, one marker per policy, with its
    CI and a line at 1 (below it: slower at the higher frequency): the paper's (write op
    timed) filled, the one with the fsync timed (IOzone -e) hollow beside it."""
    df = ratio_table(hist, f_low, f_high, level)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 3.8))
    else:
        fig = ax.figure
    pols = [p for p in dict.fromkeys(df.policy) if p]
    width = 0.5 / max(len(pols), 1)
    for k, pol in enumerate(pols):
        d = df[df.policy == pol]
        x = np.array([ROWS.index(r) for r in d.row]) + (k - (len(pols) - 1) / 2) * width
        r, lo, hi = (d[c].to_numpy(float) for c in ("ratio", "ci_low", "ci_high"))
        err = np.vstack([r - np.where(np.isfinite(lo), lo, r), np.where(np.isfinite(hi), hi, r) - r])
        line = ax.errorbar(x, r, yerr=err, fmt="o", capsize=4, label=f"{pol}, write op timed (the paper's)")
        fr = d["fsync_ratio"].to_numpy(float)
        if np.isfinite(fr).any():
            ax.plot(x + width / 3, fr, "o", mfc="none", color=line[0].get_color(),
                    label=f"{pol}, fsync timed too (-e)")
        for xi, ri in zip(x[np.isfinite(r) & ~(np.isfinite(lo) & np.isfinite(hi))],
                          r[np.isfinite(r) & ~(np.isfinite(lo) & np.isfinite(hi))]):
            ax.annotate("CI\nunbounded", (xi, ri), xytext=(4, 0), textcoords="offset points",
                        fontsize=6, va="center")
    ax.axhline(1.0, color="k", lw=1, ls="--")
    for _, m in df[df.policy == ""].iterrows():
        ax.text(ROWS.index(m.row), 1.0, _wrap(m.note), ha="center", va="bottom", fontsize=7,
                color="tab:red")
    kinds = {m.row: _kind(m.data) for _, m in df.iterrows() if m.data}
    ax.set_xticks(range(len(ROWS)), [f"{r}\n{kinds.get(r, 'not run')}" for r in ROWS], fontsize=8)
    _log_ratio_axis(ax, df)
    ax.set_xlim(-0.6, len(ROWS) - 0.4)
    ax.set_ylabel(f"throughput {df.attrs['f_high']:g} / {df.attrs['f_low']:g} GHz")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, title="policy", title_fontsize=8)
    ax.set_title(f"{_point_text(hist)}: ratio, {level:.0%} CI (Fieller); < 1 = slower at "
                 f"{df.attrs['f_high']:g} GHz. Host: measured, emulated frequency; guests: "
                 f"VIRTUAL time; simulator: SIMULATED", fontsize=8, wrap=True)
    return finish(fig)


def _log_ratio_axis(ax, df) -> None:
    """Ratios on a log scale (0.5 and 2 equally far from 1), ticks as plain numbers."""
    vals = df[["ratio", "ci_low", "ci_high", "fsync_ratio"]].to_numpy(float).ravel()
    vals = vals[np.isfinite(vals) & (vals > 0)]
    lo, hi = (min(vals.min(), 0.5), max(vals.max(), 2.0)) if vals.size else (0.5, 2.0)
    ax.set_yscale("log")
    ax.set_ylim(lo / 1.2, hi * 1.2)
    ticks = [t for t in (0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 8, 16, 32) if lo / 1.2 <= t <= hi * 1.2]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def plot_unblocked(hist: History, policy="ext4", ax=None):
    """The fraction of writers unblocked (eq. 4) of `policy` against frequency per study
    row: solid where the run recorded why writes slept (trace evidence), dashed and
    labelled where only span overlap counts them (not the paper's count); the paper's
    240 -> 40 of 256 in grey (a fraction, so a point of another size sits beside it)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3.6))
    else:
        fig = ax.figure
    for row in ROWS:
        ds = hist.runs.get(row)
        if ds is None or policy not in [str(p) for p in ds[schema.POLICY].values]:
            continue
        var = unblocked_var(ds)
        if var not in ds:
            continue
        m = ds[var].sel({schema.POLICY: policy}).mean(schema.REP)
        m = m.mean([d for d in m.dims if d != schema.FREQ])
        evidence = var == "unblocked_threads"
        ax.plot(m[schema.FREQ].values, m.values / hist.point.threads, "o-" if evidence else "o--",
                label=f"{row} [{_kind(_label(ds), ', ')}]" + ("" if evidence else ": span overlap, not the paper's count"))
    p = PAPER_IOZONE
    ax.plot([p["f_low"], p["f_high"]], [p["unblocked_low"] / p["threads"], p["unblocked_high"] / p["threads"]],
            "s:", color="grey",
            label=f"the paper (Linux 3.4.2, {p['unblocked_low']} -> {p['unblocked_high']} of {p['threads']})")
    ax.set_xlabel("CPU frequency (GHz)")
    ax.set_ylabel(f"unblocked writers (fraction of {hist.point.threads})")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{_point_text(hist)}, {policy}: writers whose write op never slept on the journal "
                 "(trace evidence; dashed: span overlap only)", fontsize=8)
    return finish(fig)


def _label(ds) -> str:
    return provenance_label(ds)


def _wrap(text: str, width: int = 28) -> str:
    return "\n".join(textwrap.wrap(text, width)[:5])


def _point_text(hist: History) -> str:
    p = hist.point
    return (f"IOzone {p.threads} threads, {p.file_size // 1024}k files in {p.record_size // 1024}k "
            f"records, {p.device}, guest disk depth {p.depth}")


def plot_timelines(hist: History, policy="ext4", freqs=None, max_threads=64):
    """One run (repetition 0) per study row with traces and per frequency: each thread's
    writes coloured by class (X not blocked, I released inside a commit, Z partially, Y
    fully blocked; eqs. 4-6)
    with the journal commits drawn over them (abtlab.present.study_plots.plot_commit_timeline)."""
    freqs = list(freqs or (hist.point.freqs[0], hist.point.freqs[-1]))
    rows = [r for r in ROWS if r in hist.runs and "op_run" in hist.runs[r]]
    if not rows:
        raise ConfigError("hist", "no traced runs", "a study with at least one row with traces")
    fig, axes = plt.subplots(len(rows), len(freqs), figsize=(5.2 * len(freqs), 3.2 * len(rows)),
                             squeeze=False)
    for i, row in enumerate(rows):
        ds = hist.runs[row]
        if policy not in [str(p) for p in ds[schema.POLICY].values]:
            raise ConfigError("policy", policy, f"a policy of row {row!r}")
        for j, f in enumerate(freqs):
            ax = axes[i, j]
            ids = runs.run_ids(ds, **{schema.POLICY: policy, schema.FREQ: f})
            plot_commit_timeline(ds, int(ids[0]), ax=ax, max_threads=max_threads)
            ax.set_title(f"{row}, {policy}, {f:g} GHz [{_kind(provenance_label(ds), ', ')}]",
                         fontsize=8)
            ax.legend(fontsize=6, loc="lower right")
    fig.suptitle(f"{_point_text(hist)}: threads' writes and journal commits", fontsize=10)
    return finish(fig)
