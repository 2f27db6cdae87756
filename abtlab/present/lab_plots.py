"""Figures of labs 6 and 7 (labs 4 and 5 draw with abtlab.present.syscalls_plots): each
metric's normalised CC with run time and its bootstrap CI; each frequency policy's time
and modelled energy over fixed-high's with their CIs. The data's kind is in the title."""
from __future__ import annotations

import numpy as np

__all__ = ["plot_ranking", "plot_policies"]


def _bars(ax, labels, y, lo, hi, color):
    x = np.arange(len(labels))
    err = np.abs(np.vstack([y - lo, hi - y]))
    ax.bar(x, y, color=color, alpha=0.7)
    ax.errorbar(x, y, yerr=np.nan_to_num(err), fmt="none", ecolor="black", capsize=4)
    ax.set_xticks(x, labels)


def plot_ranking(table):
    """Normalised CC (1: tracks run time perfectly, in Table 1's direction) per metric."""
    import matplotlib.pyplot as plt     # deferred: labs load pyplot, `import abtlab` does not
    fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
    _bars(ax, list(table.metric), table.normalized.to_numpy(float), table.ci_low.to_numpy(float),
          table.ci_high.to_numpy(float), "tab:blue")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel("normalised CC with run time")
    ax.set_title(f"{table.attrs.get('source', '')}\n95% bootstrap CI over {int(table.n.max())} workloads",
                 fontsize=9)
    return fig


def plot_policies(df):
    """Time (SIMULATED) and energy (MODELLED) of each policy over fixed-high's."""
    import matplotlib.pyplot as plt     # deferred: see plot_ranking
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), constrained_layout=True)
    for ax, name, label in ((axes[0], "time", "run time (SIMULATED)"),
                            (axes[1], "energy", "energy (MODELLED)")):
        _bars(ax, list(df.policy), df[f"{name}_ratio"].to_numpy(float),
              df[f"{name}_ratio_lo"].to_numpy(float), df[f"{name}_ratio_hi"].to_numpy(float),
              "tab:orange" if name == "energy" else "tab:green")
        ax.axhline(1, color="grey", lw=0.8)
        ax.set_ylabel(f"{label} / fixed-high's")
    fig.suptitle(f"{df.attrs.get('workload')}: {df.attrs.get('seeds')} seeds, 95% CI", fontsize=9)
    return fig
