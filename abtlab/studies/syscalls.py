"""The system-call behaviour lab (N. P. Petersen, "Optimizing for Workloads: Analysis of System
Call Behavior", University of Wisconsin-Madison), measured here beside the paper.

Spinlock vs mutex: `lock_grid` times both locks over a (threads, work) grid with
repetitions, as a durable sweep (abtlab.sweep.loop) that runs cells and repetitions
interleaved in a random order so drift hits both locks alike; `spin_speedup` = t_mutex / t_spin per repetition, as the
paper's Fig. 5 (> 1: the spinlock is faster), summarised by its geometric mean and a
t interval on the log ratios. `load_reference` is the paper's i7-2600K grid,
`compare` the log2 difference on the common grid (abtlab.present.syscalls_plots draws
the heatmaps).

Direct vs buffered: `dio_grid` does the same for Petersen's (University of Wisconsin-Madison) four file workloads;
`direct_speedup` = t_buffered / t_direct (the paper: 1.25 at 4 KiB single-block
overwrite, i.e. direct 25% faster), drawn by abtlab.present.syscalls_plots.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from .. import about
from ..backends.dio import MAX_BLOCK, MIN_BLOCK, DioBackend
from ..backends.locks import MAX_THREADS, MAX_WORK, LocksBackend
from ..errors import ConfigError
from ..stats.ratios import geomean_ratio_ci
from ..sweep.loop import Reps, run as run_sweep
from ..system import quietness

__all__ = ["lock_grid", "dio_grid", "load_reference", "compare", "hardware_threads", "family_level",
           "add_lock_speedup", "add_dio_speedup",
           "PAPER_THREADS", "PAPER_WORK",
           "PAPER_DIO", "REFERENCE_CSV"]

PAPER_THREADS = (*range(1, 11), 15, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90, 100)
PAPER_WORK = (1, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 5000, 10_000, 25_000, 50_000,
              75_000, 100_000, 250_000, 500_000, 1_000_000)
QUICK_THREADS, QUICK_WORK = (1, 2, 4, 8), (1, 100, 10_000)
PAPER_BLOCKS = tuple(4096 << k for k in range(13))  # 4 KiB .. 16 MiB
QUICK_BLOCKS = (4096, 65536)
REFERENCE_CSV = about.REFERENCE_DATA / \
    "spinlock_vs_mutex_i7-2600k.csv"
PAPER_HW_THREADS = 8
# The one number Petersen (University of Wisconsin-Madison) states for direct vs buffered (section 2.1.2, Fig. 3).
PAPER_DIO = {"workload": 3, "block_size": 4096, "direct_speedup": 1.25,
             "source": "Petersen (University of Wisconsin-Madison) sec. 2.1.2 / Fig. 3: at 4 KiB single-block overwrite "
                       "direct I/O is 25% faster (i7-2600K, 7200 rpm HDD, ext4, Linux 4.4.8)"}


def _levels(values, default, field, lo, hi):
    vals = tuple(default if values is None else values)
    ok = vals and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                      and lo <= v <= hi for v in vals)
    if not ok or len(set(vals)) != len(vals):
        raise ConfigError(field, values, f"distinct integers from {lo} to {hi}")
    return sorted(int(v) for v in vals)


def _reps(reps, max_reps):
    """reps, or adaptive repetitions (abtlab.sweep.loop.Reps on elapsed) from reps up to
    max_reps while a point's CI half-width of its mean elapsed is wider than 5%."""
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ConfigError("reps", reps, "an integer >= 1")
    if max_reps is None or max_reps == reps:
        return reps
    if isinstance(max_reps, bool) or not isinstance(max_reps, int) or max_reps < max(reps, 2):
        raise ConfigError("max_reps", max_reps, f"an integer >= reps ({reps}) and >= 2, or None")
    return Reps(min=max(reps, 2), max=max_reps, target=0.05, metric="elapsed")


def hardware_threads(ds) -> int:
    """The hardware threads of the machine a grid ran on (its attrs; os.cpu_count() for a
    grid measured here that predates the attribute)."""
    return int(ds.attrs.get("hardware_threads") or ds.attrs.get("cpu_logical") or os.cpu_count())


def lock_grid(threads=None, work=None, reps: int = 3, max_reps: int | None = None,
              full: bool = False, entries: int = 100,
              seed: int = 0, timeout: float = 600, progress: bool = False, out=None,
              resume: bool = False) -> xr.Dataset:
    """Time spinlock and mutex on threads x work (defaults: a 4 x 3 grid, seconds;
    full=True: the paper's 23 x 19 grid, hours here). Returns elapsed (lock, threads,
    work, rep), its median, and spin_speedup with its CI (threads, work).

    It runs as a sweep (abtlab.sweep.loop): one timing run on the machine at a time, and
    with out= every finished repetition kept, so resume=True continues a stopped grid."""
    threads = _levels(threads, PAPER_THREADS if full else QUICK_THREADS, "threads", 1, MAX_THREADS)
    work = _levels(work, PAPER_WORK if full else QUICK_WORK, "work", 1, MAX_WORK)
    rule = _reps(reps, max_reps)
    command = (f"abtlab.studies.syscalls.lock_grid(threads={threads}, work={work}, reps={reps}, "
               f"max_reps={max_reps}, entries={entries}, seed={seed})")
    # no per-entry trace: two clock reads per entry would dwarf a 1-nop critical section
    ds = run_sweep(LocksBackend(), {"lock": ["spin", "mutex"], "threads": threads, "work": work},
                   reps=rule, out=out, resume=resume, seed=seed, quiet=not progress,
                   options={"trace": False, "entries": entries, "timeout": timeout},
                   attrs={"entries_per_thread": entries}, command=command)
    ds = ds[["elapsed"]]
    ds["elapsed"].attrs.update(units="s", long_name="create-to-join time")
    return add_lock_speedup(ds, level=family_level(ds.threads.size * ds.work.size))


def family_level(cells: int, level: float = 0.95) -> float:
    """The per-cell confidence level that keeps `level` for all `cells` at once
    (Bonferroni): a grid of 12 cells at 95% each would name about one winner from noise
    alone, and two runs would disagree on it."""
    return 1 - (1 - level) / max(int(cells), 1)


def _ci_label(level, family=0.95) -> str:
    cells = round((1 - family) / (1 - level)) if level < 1 else 1
    return (f"{level:.0%} CI" if cells <= 1 else
            f"simultaneous {family:.0%} CIs over {cells} cells (Bonferroni: {level:.2%} each)")


def _add_speedup(ds, dim, num, den, name, desc, level):
    """elapsed_median and name = t_num / t_den (geometric mean over reps) with CI bounds."""
    r = geomean_ratio_ci(ds.elapsed.sel({dim: num}, drop=True), ds.elapsed.sel({dim: den}, drop=True),
                 level=level)
    out = ds.assign({
        "elapsed_median": ds.elapsed.median("rep").assign_attrs(units="s"),
        name: r.ratio.assign_attrs(units="1", long_name=desc),
        f"{name}_lo": r.lo.assign_attrs(units="1", long_name=f"{_ci_label(level)}, low"),
        f"{name}_hi": r.hi.assign_attrs(units="1", long_name=f"{_ci_label(level)}, high"),
        f"{name}_n": r.n.assign_attrs(units="1", long_name="repetitions (pairs)")})
    out.attrs["ci"] = _ci_label(level)
    return out


def add_lock_speedup(ds: xr.Dataset, level: float = 0.95) -> xr.Dataset:
    """Add elapsed_median and spin_speedup (= t_mutex / t_spin) with CI bounds."""
    return _add_speedup(ds, "lock", "mutex", "spin", "spin_speedup",
                        "t_mutex / t_spin, geometric mean over reps (> 1: spinlock faster)", level)


def load_reference(path=None) -> xr.Dataset:
    """The paper's Fig. 5 as spin_speedup (threads, work), provenance in attrs."""
    path = Path(path or REFERENCE_CSV)
    if not path.is_file():
        raise ConfigError("path", str(path), "the reference CSV (data/reference/)")
    lines = path.read_text().splitlines()
    notes = [ln.lstrip("# ").strip() for ln in lines if ln.startswith("#")]
    rows = [ln for ln in lines if ln and not ln.startswith("#")]
    if rows[0].split(",") != ["threads", "critical_instructions", "spin_over_mutex_speedup"]:
        raise ConfigError("path", str(path), "a CSV with columns threads,"
                          "critical_instructions,spin_over_mutex_speedup")
    data = np.array([[float(x) for x in r.split(",")] for r in rows[1:]])
    threads, work = np.unique(data[:, 0]).astype(int), np.unique(data[:, 1]).astype(int)
    grid = np.full((threads.size, work.size), np.nan)
    grid[np.searchsorted(threads, data[:, 0]), np.searchsorted(work, data[:, 1])] = data[:, 2]
    da = xr.DataArray(grid, dims=("threads", "work"), coords={"threads": threads, "work": work},
                      attrs={"units": "1", "long_name": "spin over mutex speedup (paper)"})
    return xr.Dataset({"spin_speedup": da}, attrs={
        "source": " ".join(notes), "hardware_threads": PAPER_HW_THREADS,
        "machine": "Intel i7-2600K, 4 cores / 8 hardware threads, Linux 4.4.8"})


def _side(x, lo=None, hi=None):
    """+1 spinlock faster, -1 mutex faster, 0 tie; by the CI where there is one, else
    by the paper's one-decimal rounding (>= 1.1 or <= 0.9)."""
    if lo is not None and hi is not None:
        return xr.where(lo > 1, 1, xr.where(hi < 1, -1, 0))
    return xr.where(x >= 1.1 - 1e-9, 1, xr.where(x <= 0.9 + 1e-9, -1, 0))


def _or_nan(da, like):
    return da if da is not None else xr.full_like(like, np.nan)


def compare(here: xr.Dataset, ref: xr.Dataset | None = None) -> xr.Dataset:
    """here vs the paper on the (threads, work) cells both have: log2(here / paper),
    and which lock wins on each side (+1 spin, -1 mutex, 0 tie; 0 at every cell here where the
    run started on a busy host, attrs["busy"] saying why: abtlab.system.quietness.busy_reason)."""
    ref = load_reference() if ref is None else ref
    t = np.intersect1d(here.threads.values, ref.threads.values)
    w = np.intersect1d(here.work.values, ref.work.values)
    if t.size == 0 or w.size == 0:
        raise ConfigError("here", f"threads={here.threads.values}, work={here.work.values}",
                          "a grid sharing threads and work levels with the reference")
    h, p = here.sel(threads=t, work=w), ref.sel(threads=t, work=w)
    lo, hi = (h.get("spin_speedup_lo"), h.get("spin_speedup_hi"))
    side_here = _side(h.spin_speedup, lo, hi)
    busy = quietness.busy_reason(here.attrs)
    if busy:        # a side measured on a busy host did not hold from one sitting to the next
        side_here = xr.zeros_like(side_here)
    side_paper = _side(p.spin_speedup)
    return xr.Dataset({
        "here": h.spin_speedup, "here_lo": _or_nan(lo, h.spin_speedup),
        "here_hi": _or_nan(hi, h.spin_speedup), "reps": _or_nan(h.get("spin_speedup_n"), h.spin_speedup),
        "paper": p.spin_speedup,
        "log2_diff": np.log2(h.spin_speedup / p.spin_speedup).assign_attrs(
            units="1", long_name="log2(here / paper)"),
        "winner_here": side_here, "winner_paper": side_paper,
        "agree": side_here == side_paper},
        attrs={"hardware_threads_here": hardware_threads(here),
               "hardware_threads_paper": ref.attrs.get("hardware_threads", PAPER_HW_THREADS), "busy": busy})



def dio_grid(directory=None, block_sizes=None, workloads=(1, 2, 3, 4), reps: int = 3,
             max_reps: int | None = None, full: bool = False, file_size: int | None = None, max_bytes: int = 256 << 20,
             seed: int = 0, timeout: float = 600, progress: bool = False, out=None,
             resume: bool = False) -> xr.Dataset:
    """Time buffered and O_DIRECT runs of each workload x block size in directory
    (None: a fresh scratch ext4 per run where loop devices work). Defaults: 4 and 64 KiB,
    a 4 MiB file for random reads (seconds); full=True: 4 KiB..16 MiB and the paper's
    16 MiB file. Returns elapsed/throughput (mode, workload, block_size, rep), ops_per_run,
    and direct_speedup = t_buffered / t_direct with its CI. A durable sweep like lock_grid
    (out=, resume=)."""
    blocks = _levels(block_sizes, PAPER_BLOCKS if full else QUICK_BLOCKS, "block_sizes",
                     MIN_BLOCK, MAX_BLOCK)
    workloads = _levels(workloads, (1, 2, 3, 4), "workloads", 1, 4)
    rule = _reps(reps, max_reps)
    file_size = int(file_size or (16 << 20 if full else 4 << 20))
    if file_size < max(blocks) and 2 in workloads:
        raise ConfigError("file_size", file_size, f">= the largest block size ({max(blocks)})")
    command = (f"abtlab.studies.syscalls.dio_grid({str(directory)!r}, block_sizes={blocks}, "
               f"workloads={workloads}, reps={reps}, max_reps={max_reps}, file_size={file_size}, "
               f"seed={seed})")
    options = {"trace": False, "file_size": file_size, "timeout": timeout, "max_bytes": max_bytes,
               **({"directory": str(directory)} if directory is not None else {})}
    full_ds = run_sweep(DioBackend(), {"mode": ["buffered", "direct"], "workload": workloads,
                                       "block_size": blocks},
                        reps=rule, out=out, resume=resume, seed=seed, quiet=not progress,
                        options=options, attrs={"file_size": file_size}, command=command)
    ds = full_ds[["elapsed", "throughput"]]
    ds["ops_per_run"] = full_ds["ops_per_run"].isel(mode=0, rep=0, drop=True).astype(int)
    ds["ops_per_run"].attrs.update(units="1", long_name="ops in one run")
    return add_dio_speedup(ds, level=family_level(ds.workload.size * ds.block_size.size))


def add_dio_speedup(ds: xr.Dataset, level: float = 0.95) -> xr.Dataset:
    """Add elapsed_median and direct_speedup (= t_buffered / t_direct) with CI bounds."""
    return _add_speedup(ds, "mode", "buffered", "direct", "direct_speedup",
                        "t_buffered / t_direct, geometric mean over reps (> 1: direct faster)", level)
