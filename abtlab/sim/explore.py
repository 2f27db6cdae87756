"""Where does the simulator show seed 000's ABT slowdown? A sensitivity sweep.

`sensitivity()` runs ext4 and one delayJC policy at a low and a high frequency for
every combination of the swept parameters and returns an xarray.Dataset of means
over repetitions (simulated data), with the paper's signature per combination:
    slowdown       ext4 throughput at f_high / at f_low < 1
    fewer_batched  ext4 nonblocked threads fall with f
    more_commits   ext4 commits rise with f
    delayjc_wins   delayJC / ext4 throughput at f_high > 1
`paper_like` is all four. Run `python -m abtlab.sim.explore` for the printed table.
"""
from __future__ import annotations

import itertools

import numpy as np

from .params import DEVICES, SimParams, make

__all__ = ["sensitivity", "format_table", "DEFAULT_AXES", "PAPER_POINT"]

# seed 000 Fig. 7a's point on its SandyBridge/HDD machine
PAPER_POINT = dict(workload="iozone", threads=256, file_size=128 * 1024, record_size=32 * 1024,
                   cores=4, device="hdd7200")
# CPU per 32 KiB write at f_ref (3.3 GHz; ~2x at 1.6 GHz), the commit's fixed device cost,
# cores, where ordered-mode data is written back, and the scheduler's time slice (2250 us:
# CFS's minimum granularity on 4 cores; 200 us: a slice comparable to one thread's writes)
DEFAULT_AXES = {"write_fixed_us": [30.0, 100.0, 400.0],
                "commit_fixed_us": [2000.0, 10000.0, 30000.0],
                "cores": [1, 4],
                "data_flush": ["fsync", "commit"],
                "quantum_us": [200.0, 2250.0]}
_MEASURES = ("throughput", "nonblocked_threads", "commits", "mean_write")


def _params(base: dict, combo: dict, policy: str, freq: float):
    """SimParams of one cell: device fields go to device_overrides."""
    dev_keys = set(next(iter(DEVICES.values())))
    kw = {**base, "policy": policy, "freq_ghz": freq}
    dev = dict(kw.pop("device_overrides", {}))
    for k, v in combo.items():
        if k in dev_keys:
            dev[k] = v
        else:
            kw[k] = v
    return make(device_overrides=dev, **kw)


def _cell(p: SimParams, reps: int, seed: int) -> list:
    from .core import run_reps
    rs = run_reps(p, seed + np.arange(reps))
    return [float(np.mean([r.scalars[m] for r in rs])) for m in _MEASURES]


def _check_axes(axes: dict) -> None:
    from ..errors import ConfigError
    fields = set(SimParams.__dataclass_fields__) | set(next(iter(DEVICES.values())))
    for k, v in axes.items():
        if k not in fields or k in ("policy", "freq_ghz"):
            raise ConfigError(f"axes.{k}", k, "a SimParams or device field other than "
                                               "policy and freq_ghz")
        if not isinstance(v, (list, tuple)) or not v:
            raise ConfigError(f"axes.{k}", v, "a non-empty list of values")


def sensitivity(axes: dict | None = None, freqs=(1.6, 3.3), delay="delayjc:window=16ms",
                reps: int = 10, seed: int = 0, **base):
    """Means of throughput, nonblocked threads, commits and mean write time for ext4 and
    `delay` at freqs over the grid `axes` (field -> values; default DEFAULT_AXES).
    base: other SimParams fields (default PAPER_POINT, write_us_per_kib=0 so that
    write_fixed_us is the whole CPU cost of a write). Returns an xarray.Dataset."""
    import xarray as xr
    axes = dict(DEFAULT_AXES if axes is None else axes)
    _check_axes(axes)
    base = {**PAPER_POINT, "write_us_per_kib": 0.0, **base}
    policies = ["ext4", delay]
    shape = [len(v) for v in axes.values()] + [2, len(freqs)]
    out = np.full(shape + [len(_MEASURES)], np.nan)
    for idx in itertools.product(*[range(len(v)) for v in axes.values()]):
        combo = {k: axes[k][i] for k, i in zip(axes, idx)}
        for pi, pol in enumerate(policies):
            for fi, f in enumerate(freqs):
                out[idx + (pi, fi)] = _cell(_params(base, combo, pol, f), reps, seed)
    dims = list(axes) + ["policy", "freq_ghz"]
    coords = {**{k: list(v) for k, v in axes.items()}, "policy": policies, "freq_ghz": list(freqs)}
    ds = xr.Dataset({m: (dims, out[..., j]) for j, m in enumerate(_MEASURES)}, coords=coords)
    return _signature(ds, freqs, delay, reps)


def _signature(ds, freqs, delay, reps):
    e = ds.sel(policy="ext4")
    lo, hi = freqs[0], freqs[-1]
    ds["ext4_speedup"] = e.throughput.sel(freq_ghz=hi) / e.throughput.sel(freq_ghz=lo)
    ds["delayjc_over_ext4"] = (ds.throughput.sel(policy=delay, freq_ghz=hi)
                               / e.throughput.sel(freq_ghz=hi))
    ds["slowdown"] = ds.ext4_speedup < 1
    ds["fewer_batched"] = e.nonblocked_threads.sel(freq_ghz=hi) < e.nonblocked_threads.sel(freq_ghz=lo)
    ds["more_commits"] = e.commits.sel(freq_ghz=hi) > e.commits.sel(freq_ghz=lo)
    ds["delayjc_wins"] = ds.delayjc_over_ext4 > 1
    ds["paper_like"] = ds.slowdown & ds.fewer_batched & ds.more_commits & ds.delayjc_wins
    ds.attrs.update(freq_mode="simulated", reps=reps, delay_policy=delay,
                    note="means over repetitions of abtlab.sim (simulated data)")
    return ds


def format_table(ds) -> str:
    """One line per combination of the swept axes."""
    axes = [d for d in ds.dims if d not in ("policy", "freq_ghz")]
    lo, hi = ds.freq_ghz.values[0], ds.freq_ghz.values[-1]
    head = " ".join(f"{a[:14]:>14}" for a in axes)
    lines = [f"{head} | ext4 {hi}/{lo} | nonblocked {lo}->{hi} | commits {lo}->{hi} | "
             f"dJC/ext4@{hi} | paper-like"]
    e = ds.sel(policy="ext4")
    for idx in itertools.product(*[range(ds.sizes[a]) for a in axes]):
        sel = {a: i for a, i in zip(axes, idx)}
        c, cell = e.isel(sel), ds.isel(sel)
        vals = " ".join(f"{str(ds[a].values[i]):>14}" for a, i in sel.items())
        nb, cm = c.nonblocked_threads.values, c.commits.values
        lines.append(f"{vals} | {float(cell.ext4_speedup):9.2f} | {nb[0]:6.1f} -> {nb[-1]:6.1f} | "
                     f"{cm[0]:5.1f} -> {cm[-1]:5.1f} | {float(cell.delayjc_over_ext4):10.2f} | "
                     f"{'yes' if bool(cell.paper_like) else 'no'}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_table(sensitivity()))
