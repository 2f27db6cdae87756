"""Simulated vs measured: the same points, relative errors per point.

`simulate_like(real_ds, params)` simulates the factor levels of a real run dataset
(threads, sizes, files, policy, freq_ghz) with calibrated parameters; `compare(real,
sim)` averages both over repetitions and returns, for every point they share, the
measured and simulated means and the relative error (sim - real) / real of throughput
(IOzone: the paper's, write op timed; and with fsync timed) or FCR (Metarates), of the
commit count and of the unblocked writers (trace evidence in the measured run, the
simulator's own record of lock waits). `ratios(cmp)` puts the effect of the clock side
by side: each metric at the highest frequency over the lowest (the paper's 3.3/1.6 GHz),
measured and simulated. A measured dataset from before the write op was timed on its
own is read with today's definitions (abtlab.model.remeasure).
"""
from __future__ import annotations

import numpy as np

from ..data import schema
from ..errors import ConfigError
from ..model.remeasure import upgrade
from . import simulate

__all__ = ["compare", "simulate_like", "format_table", "ratios", "format_ratios", "METRICS"]

METRICS = ("throughput", "throughput_fsync", "fcr", "unblocked_threads", "commits",
           "mean_commit_wait")
_SIM_FACTORS = ("policy", "freq_ghz", "threads", "file_size", "record_size", "files")


def _point_means(ds, metrics, single):
    out = ds[list(metrics)].mean(schema.REP) if schema.REP in ds.dims else ds[list(metrics)]
    return out.squeeze([d for d in single if d in out.dims], drop=True)


def compare(real_ds, sim_ds, metrics=None):
    """xarray.Dataset over the shared points: real_<m>, sim_<m>, relerr_<m> per metric."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    real_ds = upgrade(real_ds)
    want = [m for m in (metrics or METRICS) if m in real_ds and m in sim_ds
            and np.isfinite(real_ds[m].values).any()]
    if not want:
        raise ConfigError("metrics", metrics, "names present in both datasets: " + ", ".join(METRICS))
    # a factor with one level on each side that has it (device "none" vs "loop", ...) is
    # not a point
    def single(a, b):
        out = [d for d in a.dims if a.sizes[d] == 1 and b.sizes.get(d, 1) == 1]
        point = [d for d in a.dims if d in _SIM_FACTORS]
        if point and set(point) <= set(out):    # one point: it keeps a factor to be a row
            out.remove(point[0])
        return out
    real = _point_means(real_ds, want, single(real_ds, sim_ds))
    sim = _point_means(sim_ds, want, single(sim_ds, real_ds))
    if set(real.dims) != set(sim.dims):
        raise ConfigError("sim_ds", sorted(sim.dims), f"the same swept factors as real_ds {sorted(real.dims)}")
    real, sim = xr.align(real, sim, join="inner")
    if any(real.sizes[d] == 0 for d in real.dims):
        raise ConfigError("sim_ds", "no shared points", "datasets with common factor levels")
    out = xr.Dataset(attrs={"real_freq_mode": real_ds.attrs.get("freq_mode", ""),
                            "sim_freq_mode": sim_ds.attrs.get("freq_mode", ""),
                            "note": "relerr = (simulated - measured) / measured, means over reps"})
    for m in want:
        out[f"real_{m}"], out[f"sim_{m}"] = real[m], sim[m]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"relerr_{m}"] = (sim[m] - real[m]) / real[m]
    return out


def simulate_like(real_ds, params, reps=None, seed=0, **kw):
    """Simulate the factor levels of real_ds (workload from its backend) with params."""
    backend = real_ds.attrs.get("backend", "")
    if backend not in ("iozone", "metarates"):
        raise ConfigError("real_ds.backend", backend, "iozone | metarates")
    levels = {f: [v.item() for v in real_ds[f].values] for f in _SIM_FACTORS if f in real_ds.coords}
    reps = reps or int(real_ds.sizes.get(schema.REP, 3))
    return simulate(reps=reps, seed=seed, workload=backend, params=params, **levels, **kw)


def format_table(cmp) -> str:
    """compare()'s result as text: one row per point; per metric the measured and the
    simulated mean and the error in percent."""
    metrics = [v[len("relerr_"):] for v in cmp.data_vars if v.startswith("relerr_")]
    df = cmp.to_dataframe()
    point = [str(n) for n in df.index.names]
    left = " ".join(f"{p:>9}" for p in point)
    lines = [f"simulated vs measured ({cmp.attrs.get('real_freq_mode', '?')} frequency): "
             "means over repetitions, error = (simulated - measured) / measured",
             " " * len(left) + "".join(f" | {m[:27]:^27}" for m in metrics),
             left + "".join(f" | {'measured':>9} {'simulated':>9} {'error':>6}" for _ in metrics)]
    for ix, row in df.iterrows():
        ix = ix if isinstance(ix, tuple) else (ix,)
        line = " ".join(f"{v!s:>9}" for v in ix)
        for m in metrics:
            err = row[f"relerr_{m}"]
            err = f"{100 * err:+5.0f}%" if np.isfinite(err) else f"{'n/a':>6}"
            line += f" | {row[f'real_{m}']:9.4g} {row[f'sim_{m}']:9.4g} {err}"
        lines.append(line)
    return "\n".join(lines)


def ratios(cmp):
    """Each metric of compare()'s result at the highest freq_ghz over the lowest:
    real_<m> and sim_<m> ratios over the other factors of the points."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    if "freq_ghz" not in cmp.dims or cmp.sizes["freq_ghz"] < 2:
        raise ConfigError("freq_ghz", list(np.atleast_1d(cmp.get("freq_ghz", []))),
                          "points at two frequencies or more (a ratio of clocks)")
    lo, hi = float(cmp.freq_ghz.min()), float(cmp.freq_ghz.max())
    out = xr.Dataset(attrs={"f_low": lo, "f_high": hi})
    for v in cmp.data_vars:
        if v.startswith(("real_", "sim_")):
            with np.errstate(divide="ignore", invalid="ignore"):
                out[v] = cmp[v].sel(freq_ghz=hi, drop=True) / cmp[v].sel(freq_ghz=lo, drop=True)
    return out


def format_ratios(r) -> str:
    """ratios()'s result as text: per metric the measured and the simulated ratio."""
    metrics = [v[len("real_"):] for v in r.data_vars if v.startswith("real_")]
    lines = [f"the faster clock over the slower ({r.attrs['f_high']:g} / {r.attrs['f_low']:g} GHz), "
             "measured vs simulated:"]
    df = r.to_dataframe() if r.dims else None
    rows = df.iterrows() if df is not None else [((), r)]
    for ix, row in rows:
        ix = ix if isinstance(ix, tuple) else (ix,)
        head = " ".join(f"{n}={v}" for n, v in zip(df.index.names if df is not None else [], ix))
        cells = [f"{m} {float(row[f'real_{m}']):.2f} vs {float(row[f'sim_{m}']):.2f}"
                 for m in metrics]
        lines.append((head + ": " if head else "  ") + ", ".join(cells))
    return "\n".join(lines)
