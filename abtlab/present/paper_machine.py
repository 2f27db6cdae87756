"""The paper's Figs. 7 and 8 (Chang, Li, Grove and Cameron, MASCOTS 2014) as measured on a
run, with what the paper's text states beside them (data/reference/abt_published.csv:
stated figures, not digitized plots). The paper's rows: throughput and throughput
normalised to the lowest clock per policy, delayJC over ext4 at each clock, unblocked
writers (IOzone); the file creation rate and the mean commit wait (Metarates). Every value
comes from the dataset given or the reference file; every plot carries the data's
provenance (VIRTUAL time on the guest)."""
from __future__ import annotations

import math

import numpy as np

from ..data import schema
from ..data.published import SAME_CELL, paper_iozone, paper_value, published
from ..machines.spec import parse_machine
from ..stats.ratios import format_ratio, ratio_ci
from ..stats.values import provenance_label
from .figures import finish
from .paper_terms import unblocked
from .plots import plot_metric

__all__ = ["published", "paper_value", "stated", "table", "by_machine", "plot_figure", "summary", "cells",
           "in_the_guest", "DELAY_KINDS"]

DELAY_KINDS = ("delayjc", "kdelayjc")
# the paper's figure of each cell: (workload, threads, file size or files per worker)
_FIGURES = {("iozone", 256, 128 << 10): "Fig7a", ("iozone", 256, 256 << 10): "Fig7b",
            ("iozone", 256, 512 << 10): "Fig7c", ("metarates", 4, 4): "Fig8a",
            ("metarates", 16, 16): "Fig8b", ("metarates", 32, 32): "Fig8c"}


def stated(figure: str):
    """The paper's stated figures for `figure` and its cell's earlier figures, as a table."""
    import pandas as pd
    names = (figure,) + SAME_CELL.get(figure, ())
    rows = [{k: r[k] for k in ("figure", "metric", "config", "value", "unit")}
            for r in published() if set(names) & set(r["figure"].split("/"))]
    return pd.DataFrame(rows)


def figure_of(ds) -> str | None:
    """The paper's figure of a one-cell run (256 writers x 128 KiB -> Fig7a), else None."""
    backend = ds.attrs.get("backend", "")
    size = "file_size" if backend == "iozone" else "files"
    try:
        key = (backend, int(ds[schema.THREADS].values.max()), int(ds[size].values.max()))
    except KeyError:
        return None
    return _FIGURES.get(key)


def _var(ds) -> str:
    return "fcr" if "fcr" in ds else "throughput"


def _mean(x) -> float:
    x = np.asarray(x, float)
    return float(x[np.isfinite(x)].mean()) if np.isfinite(x).any() else math.nan


def _values(ds, var, policy, f):
    return ds[var].sel({schema.POLICY: policy, schema.FREQ: f}).values.ravel()


def _clocks(ds, var, pol) -> list[float]:
    """The clocks where pol has runs (a sitting that did not run a point, or a check that
    failed every repetition there, leaves none)."""
    return [float(f) for f in ds[schema.FREQ].values if np.isfinite(_values(ds, var, pol, float(f))).any()]


def _delay_policies(ds) -> list[str]:
    """The delayJC policies of ds (the preload's, the kernel's), in its order."""
    return [p for p in map(str, ds[schema.POLICY].values) if p.split(":")[0] in DELAY_KINDS]


def table(ds, level=0.95):
    """One row per (policy, clock) that has runs: mean of the paper's quantity over its n
    repetitions, normalised to the lowest clock with its CI, each delayJC (the preload's,
    `delayjc_over_ext4`; the kernel's, `kdelayjc_over_ext4`) over ext4 at that clock
    with its CI, unblocked writers (IOzone) or the mean commit wait (Metarates). A
    pandas DataFrame; its attrs carry the provenance."""
    import pandas as pd
    var, fig = _var(ds), figure_of(ds)
    freqs = [float(f) for f in ds[schema.FREQ].values]
    low, delays, rows = freqs[0], _delay_policies(ds), []
    for pol in map(str, ds[schema.POLICY].values):
        for f in freqs:
            x = _values(ds, var, pol, f)
            if not np.isfinite(x).any():    # a sitting that did not run this point
                continue
            norm = ("1 (the reference)" if f == low else
                    format_ratio(*ratio_ci(x, _values(ds, var, pol, low), level)))
            row = {"policy": pol, "freq_ghz": f, "n": int(np.isfinite(x).sum()), var: _mean(x),
                   "normalised": norm}
            if var == "throughput" and "throughput_stonewall" in ds:   # IOzone without -x
                sw = _values(ds, "throughput_stonewall", pol, f)
                row["stonewalled_normalised"] = ("1 (the reference)" if f == low else format_ratio(
                    *ratio_ci(sw, _values(ds, "throughput_stonewall", pol, low), level)))
            for delay in delays if pol == "ext4" else []:
                d = _values(ds, var, delay, f)
                row[f"{delay.split(':')[0]}_over_ext4"] = (
                    format_ratio(*ratio_ci(d, x, level)) if np.isfinite(d).any() else "-")
            extra = "unblocked_threads" if var == "throughput" else "mean_commit_wait"
            if extra in ds:
                row[extra] = _mean(_values(ds, extra, pol, f))
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs = {"provenance": provenance_label(ds), "figure": fig or "", "var": var}
    return df


def by_machine(ds, policy="ext4", level=0.95):
    """Per machine of a run with a machine dim (e.g. a kernel A/B): the quantity at the
    fastest clock over the slowest with its CI, and the unblocked writers at both."""
    import pandas as pd
    var, rows = _var(ds), []
    freqs = [float(f) for f in ds[schema.FREQ].values]
    for m in map(str, ds[schema.MACHINE].values):
        one = ds.sel({schema.MACHINE: m})
        x = [_values(one, var, policy, f) for f in (freqs[0], freqs[-1])]
        row = {"machine": m, "policy": policy,
               f"{var} {freqs[-1]:g}/{freqs[0]:g} GHz": format_ratio(*ratio_ci(x[1], x[0], level))}
        if "unblocked_threads" in one:
            u = [_mean(_values(one, "unblocked_threads", policy, f)) for f in (freqs[0], freqs[-1])]
            row["unblocked threads"] = f"{u[0]:g} -> {u[1]:g}"
        rows.append(row)
    return pd.DataFrame(rows)


def _paper_marks(ax, fig, metric, label):
    for ghz, value in paper_value(fig, metric) if fig else []:
        if ghz is not None:
            ax.plot([ghz], [value], marker="*", ms=13, color="k", ls="none",
                    label=f"paper ({label}): {value:g}")


def _ratio_line(ax, ds, var, num_pol, den_pol, freqs, label, ref=None):
    """num_pol over den_pol at each clock, or over num_pol at the clock `ref` (1 there)."""
    r = np.array([(1.0, 1.0, 1.0) if f == ref else ratio_ci(
        _values(ds, var, num_pol, f), _values(ds, var, den_pol, ref if ref else f)) for f in freqs])
    ax.plot(freqs, r[:, 0], marker="o", label=label)
    ok = np.isfinite(r[:, 1]) & np.isfinite(r[:, 2])
    if ok.any():
        ax.fill_between(np.array(freqs)[ok], r[ok, 1], r[ok, 2], alpha=0.2)


def plot_figure(ds):
    """The paper's figure for a one-cell run: the quantity against the clock per policy;
    normalised to the lowest clock; delayJC over ext4; unblocked writers (IOzone) or the
    mean commit wait (Metarates). The paper's stated values are black stars."""
    import matplotlib.pyplot as plt
    var, fig_id = _var(ds), figure_of(ds)
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    plot_metric(ds, var, ax=axes[0])
    for pol in map(str, ds[schema.POLICY].values):
        at = _clocks(ds, var, pol)
        _ratio_line(axes[1], ds, var, pol, pol, at, pol.split(",")[0], ref=at[0] if at else None)
    work = "iozone" if var == "throughput" else "metarates"
    # "3.3GHz runs 47% slower than 1.6GHz": normalised, 1 - 0.47 at the faster clock
    for ghz, v in paper_value(fig_id, f"{work}_slowdown_high_vs_low_freq") if fig_id else []:
        axes[1].plot([ghz], [1 - v], marker="*", ms=13, color="k", ls="none",
                     label=f"paper (ext4): {1 - v:.2f}")
    axes[1].axhline(1, color="0.5", lw=0.8)
    axes[1].set(title="normalised to the lowest clock", xlabel="CPU frequency (GHz)", ylabel="ratio")
    delays = _delay_policies(ds)
    for delay in delays:
        at = _clocks(ds, var, delay)
        _ratio_line(axes[2], ds, var, delay, "ext4", at, f"{delay.split(',')[0]} / ext4")
    if delays:
        _paper_marks(axes[2], fig_id, f"{work}_delayjc_over_ext4_speedup", "delayJC / ext4")
    else:
        axes[2].text(0.5, 0.5, "no delayJC in this run", ha="center", transform=axes[2].transAxes)
    axes[2].axhline(1, color="0.5", lw=0.8)
    axes[2].set(title="delayJC over ext4", xlabel="CPU frequency (GHz)", ylabel="speedup")
    if work == "iozone":
        plot_metric(ds, "unblocked_threads", ax=axes[3])
        _paper_marks(axes[3], fig_id, "iozone_ext4_nonblocked_threads", "ext4")
    elif "mean_commit_wait" in ds:
        plot_metric(ds, "mean_commit_wait", ax=axes[3])
        _paper_marks(axes[3], fig_id, "metarates_ext4_mean_jc_wait", "ext4")
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"{fig_id or 'the paper’s cell'} on this run, the paper's stated values as stars - "
                 f"{provenance_label(ds)}", fontsize=11)
    return finish(fig)


def summary(ds, f_low=None, f_high=None) -> str:
    """One sentence: ext4's quantity at the fastest clock over the slowest, delayJC over
    ext4 at the fastest, and the paper's values for the same cell."""
    var, fig_id = _var(ds), figure_of(ds)
    # the clocks where ext4 has a value (a run a check failed at every repetition has none)
    first, last = _ends(ds, var)
    lo, hi = f_low or first, f_high or last
    if lo is None or hi is None or lo == hi:
        return f"no ext4 {var} at two clocks in this run"
    r = ratio_ci(_values(ds, var, "ext4", hi), _values(ds, var, "ext4", lo))
    text = f"ext4 at {hi:g} GHz over {lo:g} GHz: x{format_ratio(*r)}"
    if var == "throughput" and "throughput_stonewall" in ds:
        sw = ratio_ci(_values(ds, "throughput_stonewall", "ext4", hi),
                      _values(ds, "throughput_stonewall", "ext4", lo))
        text += (f" (eq. 3 over each writer's whole file, IOzone -x; x{format_ratio(*sw)} "
                 f"stonewalled, IOzone's default)")
    for delay in _delay_policies(ds):
        d = ratio_ci(_values(ds, var, delay, hi), _values(ds, var, "ext4", hi))
        text += f"; {delay} over ext4 at {hi:g} GHz: x{format_ratio(*d)}"
    stated = [f"{m.split('_', 1)[1].replace('_', ' ')} {v:g}" + (f" at {g:g} GHz" if g else "")
              for m in ("iozone_slowdown_high_vs_low_freq", "metarates_slowdown_high_vs_low_freq",
                        "iozone_delayjc_over_ext4_speedup", "metarates_delayjc_over_ext4_speedup",
                        "iozone_ext4_nonblocked_threads") for g, v in
              (paper_value(fig_id, m) if fig_id else [])]
    if stated:
        text += f" (the paper, {fig_id}: {'; '.join(stated)})"
    return text


def _time_kind(ds) -> str:
    """'VIRTUAL TIME' where the guest's clock is virtual (icount or lock-step), else the data's kind."""
    clock = str(ds.attrs.get("clock", ""))
    return "VIRTUAL TIME" if "lockstep" in clock or "virtual" in clock else provenance_label(ds)


def _machine_of(ds) -> str:
    """'Linux 3.4.2, 4 vCPUs each at the clock' from the run's machine level(s)."""
    ms = [parse_machine(str(m)) for m in np.atleast_1d(ds[schema.MACHINE].values)] \
        if schema.MACHINE in ds.coords else []
    if not ms or not all(m.is_guest for m in ms):
        return str(ds.attrs.get("machine", "?"))
    kernels = ", ".join(dict.fromkeys(f"Linux {m.kernel}" for m in ms))
    clock = "each at the clock" if all(m.lockstep for m in ms) else "sharing one icount clock"
    return f"{kernels}, {ms[0].cpus} vCPU{'s' * (ms[0].cpus != 1)} {clock}"


def _ext4_change(one, lo, hi, policy="ext4") -> str:
    """'x4.17 [..] with the write op timed, unblocked writers 101 -> 213 of 256' of one run."""
    text = f"x{format_ratio(*ratio_ci(_values(one, 'throughput', policy, hi), _values(one, 'throughput', policy, lo)))}"
    u = unblocked(one, lo, hi, policy)
    if u is not None:
        text += f", {u.short} {u.text()}"
    return text


def in_the_guest(ds, ab=None, names=("", "")) -> str:
    """What the paper's machine in the guest measured at Fig. 7a's cell, in one line: ext4's
    throughput (write op timed) at the fastest clock over the slowest with its CI, the
    unblocked writers at both, delayJC over ext4 at the fastest (ds, e.g. the stored result
    paper_fig7a_342), and each kernel of ab (a run with a machine dim, e.g. stock 6.1 and
    6.1-legacy: paper_machine_61_ab); names: the two results' names, to say where the
    numbers come from. The paper's values from the reference file beside them; every other
    number computed from the data given, and the kind of time said."""
    p = paper_iozone()
    freqs = [float(f) for f in ds[schema.FREQ].values]
    lo, hi = freqs[0], freqs[-1]
    reps = int(np.isfinite(_values(ds, "throughput", "ext4", hi)).sum())
    text = (f"The paper's machine in the guest ({_time_kind(ds)}; {_machine_of(ds)}"
            + (f"; stored result {names[0]}" if names[0] else "") + f", {reps} repetitions): "
            f"ext4 at {hi:g} over {lo:g} GHz {_ext4_change(ds, lo, hi)}")
    for delay in _delay_policies(ds):
        d = ratio_ci(_values(ds, "throughput", delay, hi), _values(ds, "throughput", "ext4", hi))
        text += f", {delay.split(':')[0]} over ext4 at {hi:g} GHz x{format_ratio(*d)}"
    if ab is not None:
        a_lo, a_hi = (float(f) for f in ab[schema.FREQ].values[[0, -1]])
        kernels = [f"Linux {parse_machine(str(m)).kernel} "
                   + _ext4_change(ab.sel({schema.MACHINE: m}), a_lo, a_hi) for m in ab[schema.MACHINE].values]
        text += (f"; on the same machine ({_time_kind(ab)}"
                 + (f"; {names[1]}" if len(names) > 1 and names[1] else "")
                 + f"), ext4 at {a_hi:g} over {a_lo:g} GHz: " + "; ".join(kernels))
    return (text + f". The paper (Linux 3.4.2): x{p['ratio']}, unblocked {p['unblocked_low']} -> "
            f"{p['unblocked_high']} of {p['threads']}, delayJC x{p['delayjc_gain']} at {p['f_high']:g} GHz.")


def _ends(ds, var, pol="ext4"):
    """The lowest and highest clock where pol has runs (None, None with fewer than two)."""
    at = _clocks(ds, var, pol)
    return (at[0], at[-1]) if len(at) > 1 else (None, None)


def _paper_cell(fig, work) -> dict:
    """What the paper states for a cell: its slowdown as the normalised ratio, delayJC."""
    slow = paper_value(fig, f"{work}_slowdown_high_vs_low_freq") if fig else []
    gain = paper_value(fig, f"{work}_delayjc_over_ext4_speedup") if fig else []
    return {"paper ext4 fast/slow": "; ".join(f"{1 - v:.2f} at {g:g} GHz" for g, v in slow) or "-",
            "paper delayJC/ext4": "; ".join(f"{v:g} at {g:g} GHz" for g, v in gain) or "-"}


def cells(datasets, level=0.95):
    """One row per run of a paper cell (e.g. each of Figs. 7a-8c): ext4's quantity at its
    highest clock over its lowest with the CI and the repetitions at each, NOJC's, each
    delayJC over ext4 at the highest clock, the unblocked writers (IOzone) or the mean
    commit wait (Metarates) from the lowest clock to the highest, and the paper's stated
    values for the cell. A pandas DataFrame."""
    import pandas as pd
    rows = []
    for ds in datasets:
        var, fig = _var(ds), figure_of(ds)
        lo, hi = _ends(ds, var)
        if lo is None:
            rows.append({"figure": fig, "quantity": var, "ext4 fast/slow": "no ext4 at two clocks"})
            continue
        x = {f: _values(ds, var, "ext4", f) for f in (lo, hi)}
        row = {"figure": fig, "quantity": var, "clocks": f"{lo:g} -> {hi:g} GHz",
               "n": f"{np.isfinite(x[lo]).sum()}, {np.isfinite(x[hi]).sum()}",
               "ext4 fast/slow": format_ratio(*ratio_ci(x[hi], x[lo], level))}
        if "nojc" in map(str, ds[schema.POLICY].values):
            row["nojc fast/slow"] = format_ratio(*ratio_ci(_values(ds, var, "nojc", hi),
                                                           _values(ds, var, "nojc", lo), level))
        for d in _delay_policies(ds):
            row[f"{d.split(':')[0]}/ext4 at {hi:g}"] = format_ratio(*ratio_ci(_values(ds, var, d, hi), x[hi], level))
        extra = "unblocked_threads" if var == "throughput" else "mean_commit_wait"
        if extra in ds:
            e = [_mean(_values(ds, extra, "ext4", f)) * (1 if var == "throughput" else 1e3) for f in (lo, hi)]
            row["unblocked" if var == "throughput" else "commit wait (ms)"] = f"{e[0]:.4g} -> {e[1]:.4g}"
        rows.append({**row, **_paper_cell(fig, "iozone" if var == "throughput" else "metarates")})
    return pd.DataFrame(rows)
