"""The data of the classroom labs on the neighbouring papers (labs 4-7): spinlock vs mutex
and buffered vs direct I/O (Petersen, University of Wisconsin-Madison), which metric
tracks run time (He, Sun and Yin, IPDPS Workshops 2013), SERA-IO against fixed and
ondemand frequencies (Ge, Feng and Sun, CCGrid 2012).

Each returns what its lab checks against and says where it came from: measured here
(`data="auto"`), or, where abtlab has no simulator of the workload (locks, O_DIRECT), the
paper's own figures, labelled so and never presented as measured.
"""
from __future__ import annotations

import datetime as dt
import tempfile

import numpy as np

from ..bps import EXPECTED_SIGN, METRICS, ranking, study as bps_study
from ..data import schema
from ..data.store import save
from ..errors import ConfigError
from ..sera import compare as sera_compare, sim_workloads
from ..stats.ratios import geomean_ratio_ci
from ..system import quietness
from . import syscalls
from .notebook_studies import trace_metrics
from ..sweep.runner import run as run_sweep

__all__ = ["lock_lab", "dio_lab", "bps_lab", "bps_lab_runs", "bps_table", "sera_lab", "sera_lab_runs",
           "sera_table", "LAB_DATA"]

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


RUNTIME = "runtime"      # lab 6's runs: the run time each metric is correlated with


def bps_lab_runs(data="auto", spacings=(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
                 total_bytes=4 << 20, sim_threads="16,32,64,128,256", sim_freqs="1.6,2.4,3.3", reps=2,
                 out=None):
    """The workloads lab 6 ranks the metrics over, one row each (dim "run"): run time (s) and
    BPS, IOPS, bandwidth and ARPT. He et al.'s sieving set measured with fio (data="auto",
    fio here), else SIMULATED IOzone runs (their op traces' metrics beside each run's
    elapsed time). attrs["source"] says which; out= also writes it (a stored result)."""
    _check_data(data)
    fio_ok, why = bps_study.fio_available()
    if data == "auto" and fio_ok:
        with tempfile.TemporaryDirectory(prefix="abtlab-bps-") as work:
            ds = bps_study.run_study(work, spacings=list(spacings), sets=("sieving",), reps=1,
                                     total_bytes=total_bytes)
        ds = ds.isel({schema.RUN: np.flatnonzero(ds["set"].values == "sieving")})
        ds.attrs["source"] = (f"fio runs measured here (He et al.'s sieving set: holes of "
                              f"{min(spacings)}..{max(spacings)} B)")
    else:
        ds = _sim_runs(sim_threads, sim_freqs, reps)
        ds.attrs["source"] = "SIMULATED IOzone runs" + ("" if data == "sim" else f" ({why})")
    if out is not None:
        save(ds, out)
    return ds


def _sim_runs(threads, freqs, reps):
    """Simulated IOzone runs (ext4 and no journal) as lab 6's rows: each run's elapsed time
    as its run time and its op trace's metrics."""
    import xarray as xr     # deferred: xarray is heavy; labs load it anyway
    sim = run_sweep("sim", reps=reps, threads=threads, freq=freqs, policy="ext4,nojc",
                    device="hdd7200", quiet=True)
    rows = trace_metrics(sim)
    levels = [c for c in (schema.POLICY, schema.FREQ, schema.THREADS, schema.REP) if c in rows]
    data = {RUNTIME: (schema.RUN, rows["elapsed"].to_numpy(float), {"units": "s"})}
    data.update({m: (schema.RUN, rows[m].to_numpy(float), {"units": METRICS[m][0]}) for m in METRICS})
    return xr.Dataset(data, coords={c: (schema.RUN, rows[c].to_numpy()) for c in levels},
                      attrs={k: v for k, v in sim.attrs.items() if k != schema.SWEEP_SPEC})


def bps_table(runs, level=0.95, n_boot=2000, seed=0):
    """lab 6's answer from its runs (bps_lab_runs, or the stored result of them): the ranking
    of BPS, IOPS, bandwidth and ARPT by how well each tracks run time (abtlab.bps.ranking:
    normalised CC, bootstrap CIs over the runs, a winner only where its lead excludes 0 and
    the runs did not start on a busy host: abtlab.system.quietness.busy_reason)."""
    import pandas as pd     # deferred: see _sim_runs
    df = pd.DataFrame({v: runs[v].values.astype(float) for v in (RUNTIME, *METRICS)})
    table = ranking.rank(df, RUNTIME, list(METRICS), EXPECTED_SIGN, level=level, n_boot=n_boot, seed=seed)
    busy = quietness.busy_reason(runs.attrs)    # a lead on a busy host did not hold to the next sitting
    table["winner"] = "" if busy else table.attrs["winner"] or ""
    table.attrs.update(source=runs.attrs.get("source", "?"), n=int(table.n.max()), busy=busy)
    return table


def bps_lab(data="auto", spacings=(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
            total_bytes=4 << 20, sim_threads="16,32,64,128,256", sim_freqs="1.6,2.4,3.3", reps=2):
    """The ranking lab 6 grades (bps_table) of its runs made now (bps_lab_runs)."""
    return bps_table(bps_lab_runs(data, spacings, total_bytes, sim_threads, sim_freqs, reps))


SERA_VARS = ("time_s", "energy_j", "edp")   # per policy and seed; lab 7's table: each over fixed-high's


def sera_lab_runs(workload="fio-seq", freqs=(0.8, 1.3, 1.8, 2.5), seeds=4, reps=2, out=None):
    """SERA-IO, fixed-high, fixed-low and ondemand on a simulated workload, once per seed
    (the simulator's runs differ by seed): a Dataset of each policy's time (SIMULATED),
    energy (MODELLED) and EDP per seed (dims policy x rep) and the frequencies each chose.
    out= also writes it (a stored result)."""
    import xarray as xr     # deferred: see _sim_runs
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ConfigError("seeds", seeds, "an integer >= 2 (a CI needs two runs)")
    start = dt.datetime.now(dt.timezone.utc).isoformat()
    runs = [sera_compare(sim_workloads((workload,), freqs=freqs, reps=reps, seed=1000 * s),
                         freqs=freqs, policies=SERA_POLICIES).set_index("policy") for s in range(seeds)]
    dims = (schema.POLICY, schema.REP)
    data = {v: (dims, np.array([[float(r.loc[p, v]) for r in runs] for p in SERA_POLICIES]))
            for v in SERA_VARS}
    data["freqs_ghz"] = (schema.POLICY, [str(runs[0].loc[p, "freqs_ghz"]) for p in SERA_POLICIES])
    ds = xr.Dataset(data, coords={schema.POLICY: list(SERA_POLICIES), schema.REP: np.arange(seeds)},
                    attrs=dict(workload=workload, seeds=seeds, time_mode=str(runs[0].time_mode.iloc[0]),
                               energy_mode="modelled (P(f) fitted to Ge et al.'s nodal powers)",
                               backend="sim", freq_mode="simulated",
                               freq_levels_ghz=",".join(f"{f:g}" for f in freqs), start_time=start,
                               end_time=dt.datetime.now(dt.timezone.utc).isoformat()))
    for v, units in zip(SERA_VARS, ("s", "J", "J s")):
        ds[v].attrs["units"] = units
    if out is not None:
        save(ds, out)
    return ds


def sera_table(runs, base="fixed-high"):
    """lab 7's answer from its runs (sera_lab_runs, or the stored result of them): each
    policy's time, energy and EDP over `base`'s, the geometric mean of the per-seed ratios
    with a 95% t interval (time_ratio[_lo,_hi], energy_ratio[_lo,_hi], edp_ratio[_lo,_hi])."""
    import pandas as pd     # deferred: see _sim_runs
    rows = []
    for p in runs[schema.POLICY].values:
        row = {"policy": str(p), "freqs_ghz": str(runs["freqs_ghz"].sel({schema.POLICY: p}).item())}
        for v, name in zip(SERA_VARS, ("time", "energy", "edp")):
            ci = geomean_ratio_ci(runs[v].sel({schema.POLICY: p}), runs[v].sel({schema.POLICY: base}))
            row.update({f"{name}_ratio": float(ci.ratio), f"{name}_ratio_lo": float(ci.lo),
                        f"{name}_ratio_hi": float(ci.hi)})
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs.update({k: runs.attrs[k] for k in ("workload", "seeds", "time_mode", "energy_mode")})
    return df


def sera_lab(workload="fio-seq", freqs=(0.8, 1.3, 1.8, 2.5), seeds=4, reps=2):
    """The table lab 7 grades (sera_table) of its runs made now (sera_lab_runs)."""
    return sera_table(sera_lab_runs(workload, freqs, seeds, reps))
