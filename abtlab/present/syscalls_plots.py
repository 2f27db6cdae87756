"""The system-call lab's figures (abtlab.studies.syscalls measures and compares):
spinlock vs mutex heatmaps beside the paper's grid, direct vs buffered speedup by
block size."""
from __future__ import annotations

import matplotlib
import matplotlib.colors as mcolors
import numpy as np
import xarray as xr

from ..backends.dio import WORKLOADS
from ..studies.syscalls import PAPER_DIO, compare, hardware_threads

__all__ = ["plot_lock_comparison", "plot_dio_comparison"]


def _heat(ax, da, title, cmap, vlim, fmt="{:.1f}"):
    norm = mcolors.TwoSlopeNorm(vmin=-vlim, vcenter=0, vmax=vlim)
    vals = da.transpose("threads", "work").values
    im = ax.imshow(np.clip(vals if "diff" in title else np.log2(vals), -vlim, vlim), cmap=cmap,
                   norm=norm, aspect="auto", origin="upper")
    ax.set_xticks(range(da.work.size), [_short(w) for w in da.work.values], rotation=90)
    ax.set_yticks(range(da.threads.size), da.threads.values)
    ax.set_xlabel("critical-section nops (work)")
    ax.set_ylabel("threads")
    ax.set_title(title, fontsize=9)
    if vals.size <= 500:
        for (i, j), v in np.ndenumerate(vals):
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=6)
    return im


def _short(w):
    return f"{w // 1_000_000}M" if w >= 1_000_000 else f"{w // 1000}k" if w >= 1000 else str(w)


def plot_lock_comparison(here: xr.Dataset, ref: xr.Dataset | None = None, path=None):
    """Three heatmaps on the common grid: spin_speedup measured here, the paper's, and
    log2(here / paper). Green: spinlock faster. Returns the figure; saves it to path."""
    if path is not None:
        matplotlib.use("Agg", force=False)
    # deferred: pyplot loads after the Agg choice above (a later use() would close figures)
    import matplotlib.pyplot as plt
    c = compare(here, ref)
    hw_here, hw_paper = c.attrs["hardware_threads_here"], c.attrs["hardware_threads_paper"]
    fig, axes = plt.subplots(1, 3, figsize=(18, 0.3 * c.threads.size + 3), constrained_layout=True)
    _heat(axes[0], c.here, f"spin/mutex speedup, measured here ({hw_here} hardware threads)",
          "RdYlGn", 2)
    _heat(axes[1], c.paper, f"spin/mutex speedup, i7-2600K ({hw_paper} hardware threads), "
          "from the paper", "RdYlGn", 2)
    im = _heat(axes[2], c.log2_diff, "difference: log2(here / paper)", "RdBu", 3, "{:+.1f}")
    fig.colorbar(im, ax=axes[2], label="log2 ratio (colour clipped at ±3)")
    fig.suptitle("Spinlock vs mutex: N threads x 100 entries of W nops; cells show "
                 "t_mutex / t_spin (> 1: spinlock faster), colour log2-scaled")
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def plot_dio_comparison(ds: xr.Dataset, path=None):
    """direct_speedup (t_buffered / t_direct) with CIs vs block size, one panel per
    workload, and the paper's 1.25 at 4 KiB single-block overwrite."""
    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt     # deferred: see plot_lock_comparison
    n = ds.workload.size
    fig, axes = plt.subplots(1, n, figsize=(4.5 * n, 3.8), squeeze=False, constrained_layout=True)
    for ax, w in zip(axes[0], ds.workload.values):
        s = ds.sel(workload=w)
        x, y = s.block_size.values / 1024, s.direct_speedup.values
        err = np.abs(np.vstack([y - s.direct_speedup_lo.values, s.direct_speedup_hi.values - y]))
        ax.errorbar(x, y, yerr=np.nan_to_num(err), marker="o", capsize=3,
                    label=f"measured here ({hardware_threads(ds)} hardware threads, "
                          f"{ds.attrs.get('filesystem')})")
        if w == PAPER_DIO["workload"]:
            ax.plot(PAPER_DIO["block_size"] / 1024, PAPER_DIO["direct_speedup"], "r*", ms=12,
                    label="i7-2600K + 7200 rpm HDD, from the paper")
        ax.axhline(1, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("block size (KiB)")
        ax.set_title(f"workload {w}: {WORKLOADS[int(w)]}", fontsize=9)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("t_buffered / t_direct (> 1: direct faster)")
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
