"""The study notebooks' own figures: the delay window's trade-off and the commit
timeline of one run (their data: abtlab.studies.notebook_studies)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullLocator

from ..data import runs
from ..errors import ConfigError
from ..model import classify
from ..model.classify import I, X, Y, Z
from ..stats.values import provenance_label
from ..studies.notebook_studies import delay_table
from ..trace import Op
from .figures import finish

__all__ = ["plot_delay_tradeoff", "plot_commit_timeline", "plot_commit_timelines"]


def plot_delay_tradeoff(ds, threads=None):
    """Throughput and commit wait against the delay window, one line per frequency;
    ext4 (no delay) dashed. Title says the data is simulated when it is."""
    df = delay_table(ds)
    threads = int(df.threads.max()) if threads is None else threads
    df = df[df.threads == threads]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for (col, label), ax in zip((("throughput_mib_s", "throughput (MiB/s)"),
                                 ("commit_wait_ms", "mean commit wait (ms)")), axes):
        for i, (f, g) in enumerate(df.groupby("freq_ghz")):
            d = g[g.window_ms > 0].sort_values("window_ms")
            line, = ax.plot(d.window_ms, d[col], marker="o", label=f"delayJC, {f:g} GHz")
            ax.axhline(g[g.window_ms == 0][col].mean(), ls="--", color=line.get_color(),
                       label=f"ext4, {f:g} GHz")
        ax.set_xscale("log")
        # ticks at the windows run, as plain numbers (also spares mathtext's 10^k labels)
        windows = sorted(set(df.window_ms[df.window_ms > 0]))
        if windows:
            ax.set_xticks(windows, [f"{w:g}" for w in windows])
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("delay window (ms)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"delayJC window, {threads} threads - {provenance_label(ds)}", fontsize=11)
    return finish(fig)


def plot_commit_timeline(ds, run_id=None, ax=None, max_threads=64):
    """Each thread's write op (first write to last write) coloured by its worst class
    over all commits (X not blocked, I released inside a commit, Z partially, Y fully;
    eqs. 4-6) with the journal commits shaded. run_id: one run of ds (default: the first
    one with commits)."""
    if "op_run" not in ds:
        raise ConfigError("ds", "no traces", "a dataset with op and commit traces")
    ids = runs.run_ids(ds)
    if run_id is None:
        with_commits = set(np.unique(ds["commit_run"].values))
        run_id = next((int(r) for r in ids if r in with_commits), int(ids[0]))
    elif run_id not in ids:
        raise ConfigError("run_id", run_id, f"one of {list(ids)[:10]}...")
    ops, commits = runs.ops(ds, run_id), runs.commits(ds, run_id)
    res = classify(ops, commits)
    t0 = int(ops["t_start_ns"].min())
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4))
    else:
        fig = ax.figure
    rank = np.array([0, 3, 2, 1])             # by code X, Y, Z, I: how badly blocked
    order = np.array([X, I, Z, Y])
    worst = (order[rank[res["write_class"]].max(axis=1)] if res["write_class"].size
             else np.zeros(len(res["tid"]), int))
    colors = {X: "tab:green", Y: "tab:red", Z: "tab:orange", I: "tab:purple"}
    rows, first, last = _write_ops(ops[ops["op"] == Op.WRITE], res["tid"][:max_threads])
    ax.hlines(rows, (first - t0) / 1e6, (last - t0) / 1e6,          # one collection: fast to draw
              colors=[colors[int(c)] for c in worst[rows]], lw=2)
    for s, e in zip(res["commit_start"], res["commit_end"]):
        ax.axvspan((s - t0) / 1e6, (e - t0) / 1e6, color="tab:blue", alpha=0.15)
    for code, name in ((X, "X: not blocked"), (I, "I: released inside a commit"),
                       (Z, "Z: partially blocked"), (Y, "Y: fully blocked")):
        ax.plot([], [], color=colors[code], lw=2, label=f"{name} ({int(np.sum(worst == code))})")
    ax.fill_between([], [], color="tab:blue", alpha=0.15, label=f"journal commit ({len(res['commit_start'])})")
    ax.set_xlabel("time since the first operation (ms)")
    ax.set_ylabel("thread")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"threads and journal commits, run {run_id} - {provenance_label(ds)}", fontsize=10)
    return finish(fig)


def _write_ops(writes, tids):
    """(row, first write's start, last write's end) of each of `tids` that wrote, rows in
    the order of tids."""
    u, inv = np.unique(writes["tid"], return_inverse=True)
    first = np.full(u.size, np.iinfo(np.int64).max)
    last = np.full(u.size, np.iinfo(np.int64).min)
    np.minimum.at(first, inv, writes["t_start_ns"].astype(np.int64))
    np.maximum.at(last, inv, writes["t_end_ns"].astype(np.int64))
    k = np.minimum(np.searchsorted(u, tids), max(u.size - 1, 0))
    rows = np.flatnonzero(u[k] == tids) if u.size else np.zeros(0, int)
    return rows, first[k[rows]], last[k[rows]]


def plot_commit_timelines(ds, freqs) -> list:
    """The commit timeline of the first run at each clock in freqs; none, said in a line,
    where the data keeps no op and commit records (a stored result reduced to its
    per-repetition values, abtlab.results.stored.reduced)."""
    if "op_run" not in ds or "run_id" not in ds:
        print("No commit timeline: this data keeps no op and commit records "
              f"({ds.attrs.get('reduced_from', 'a run without traces')}).")
        return []
    return [plot_commit_timeline(ds, run_id=int(runs.run_ids(ds, freq_ghz=f)[0])) for f in freqs]
