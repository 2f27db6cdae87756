"""The data of the classroom labs on the neighbouring papers (labs 4-7): spinlock vs mutex
and buffered vs direct I/O (Petersen, University of Wisconsin-Madison), which metric
tracks run time (He, Sun and Yin, IPDPS Workshops 2013), SERA-IO against fixed and
ondemand frequencies (Ge, Feng and Sun, CCGrid 2012).

Each returns what its lab checks against and says where it came from: measured here
(`data="auto"`), or, where abtlab has no simulator of the workload (locks, O_DIRECT), the
paper's own figures, labelled so and never presented as measured.
"""
from __future__ import annotations

import tempfile

import numpy as np

from ..bps import study as bps_study
from ..errors import ConfigError
from ..sera import compare as sera_compare, sim_workloads
from ..stats.ratios import geomean_ratio_ci
from . import syscalls
from .notebook_studies import sim_ranking, trace_metrics
from ..sweep.runner import run as run_sweep

__all__ = ["lock_lab", "dio_lab", "bps_lab", "sera_lab", "LAB_DATA"]

LAB_DATA = ("auto", "sim")
# lab 4's entries per thread: Petersen's 100 time thread creation and scheduling more than
# the lock on a small loaded machine (every cell "no difference measurable"); 10,000 carry
# the many-threads cell in about 10 s (docs/teachers-guide.md, the measurement)
LAB_ENTRIES = 10_000
SERA_POLICIES = ("fixed-high", "fixed-low", "ondemand", "sera")


def _check_data(data):
    if data not in LAB_DATA:
        raise ConfigError("data", data, " | ".join(LAB_DATA))


def lock_lab(data="auto", threads=(1, 4), work=(1, 10_000), reps=5, max_reps=12, entries=LAB_ENTRIES):
    """(here, ref): the lock grid measured here with `entries` critical-section entries per
    thread (None with data="sim": the simulator does not model locks, the lab reads the
    paper's grid) and Petersen's grid (100 entries per thread)."""
    _check_data(data)
    ref = syscalls.load_reference()
    if data == "sim":
        return None, ref
    return syscalls.lock_grid(threads=list(threads), work=list(work), reps=reps, max_reps=max_reps,
                              entries=entries), ref


def dio_lab(data="auto", block_sizes=(4096, 65536), workloads=(2, 3), reps=5, max_reps=10):
    """Buffered vs O_DIRECT measured here on a scratch ext4 (None with data="sim": the
    simulator does not model the page cache; the lab reads the paper's one figure)."""
    _check_data(data)
    if data == "sim":
        return None
    return syscalls.dio_grid(block_sizes=list(block_sizes), workloads=list(workloads),
                             reps=reps, max_reps=max_reps)


def bps_lab(data="auto", spacings=(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
            total_bytes=4 << 20, sim_threads="16,32,64,128,256", sim_freqs="1.6,2.4,3.3", reps=2):
    """The ranking of BPS, IOPS, bandwidth and ARPT by how well each tracks run time
    (abtlab.bps.ranking, bootstrap CIs): He et al.'s sieving set measured with fio
    (data="auto", fio here), else simulated IOzone runs. attrs["source"] says which."""
    _check_data(data)
    fio_ok, why = bps_study.fio_available()
    if data == "auto" and fio_ok:
        with tempfile.TemporaryDirectory(prefix="abtlab-bps-") as work:
            ds = bps_study.run_study(work, spacings=list(spacings), sets=("sieving",), reps=1,
                                     total_bytes=total_bytes)
        corr = bps_study.correlations(ds)
        table = corr[corr.set == "sieving"].reset_index(drop=True)
        table.attrs.update(source="fio runs measured here (He et al.'s sieving set: holes of "
                                  f"{min(spacings)}..{max(spacings)} B)", n=int(table.n.max()))
        return table
    sim = run_sweep("sim", reps=reps, threads=sim_threads, freq=sim_freqs, policy="ext4,nojc",
                    device="hdd7200", quiet=True)
    table = sim_ranking(trace_metrics(sim))
    table.attrs.update(source="SIMULATED IOzone runs" + ("" if data == "sim" else f" ({why})"))
    return table


def sera_lab(workload="fio-seq", freqs=(0.8, 1.3, 1.8, 2.5), seeds=4, reps=2):
    """SERA-IO against fixed-high, fixed-low and ondemand on a simulated workload, once per
    seed (the simulator's runs differ by seed): a DataFrame of each policy's time and
    modelled energy over fixed-high's, the geometric mean over seeds and a 95% t interval
    (time_ratio[_lo,_hi], energy_ratio[_lo,_hi], edp_ratio[_lo,_hi])."""
    # deferred: pandas and xarray are heavy; labs load them anyway
    import pandas as pd
    import xarray as xr
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ConfigError("seeds", seeds, "an integer >= 2 (a CI needs two runs)")
    runs = [sera_compare(sim_workloads((workload,), freqs=freqs, reps=reps, seed=1000 * s),
                         freqs=freqs, policies=SERA_POLICIES) for s in range(seeds)]
    rows = []
    for p in SERA_POLICIES:
        row = {"policy": p, "freqs_ghz": runs[0].set_index("policy").loc[p, "freqs_ghz"]}
        for col, name in (("time_s", "time"), ("energy_j", "energy"), ("edp", "edp")):
            vals = np.array([float(r.set_index("policy").loc[p, f"{col}_vs_fixed-high"]) for r in runs])
            ci = geomean_ratio_ci(xr.DataArray(vals, dims="rep"), xr.DataArray(np.ones_like(vals), dims="rep"))
            row.update({f"{name}_ratio": float(ci.ratio), f"{name}_ratio_lo": float(ci.lo),
                        f"{name}_ratio_hi": float(ci.hi)})
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs.update(workload=workload, seeds=seeds, time_mode=runs[0].time_mode.iloc[0],
                    energy_mode="modelled (P(f) fitted to Ge et al.'s nodal powers)")
    return df
