"""Where does the simulator show Chang et al.'s (MASCOTS 2014) ABT slowdown? A sensitivity sweep.

`sensitivity()` runs ext4 and one delayJC policy at a low and a high frequency for
every combination of the swept parameters and returns an xarray.Dataset of means
over repetitions (simulated data), with the paper's signature per combination, on the
paper's quantity (throughput: eq. 3 with the write op timed, IOzone's default report):
    slowdown       ext4 throughput at f_high / at f_low < 1
    fewer_batched  ext4 unblocked threads (writes that never waited for a commit) fall with f
    more_commits   ext4 commits rise with f
    delayjc_wins   delayJC / ext4 throughput at f_high > 1
`paper_like` is all four. `params=` starts from a calibrated parameter file (`abtlab
calibrate --out p.toml`); the axis `vcpus` sets a qemu TCG guest's vCPUs, each running at
1/n of the guest's instruction rate, so the CPU costs grow n-fold with cores=n.
`candidates()` ranks the cells by how much of the signature they show.
    python -m abtlab.sim.explore --params p.toml --axis threads=16,64 --axis vcpus=1,4
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import fields

import numpy as np

from ..errors import ConfigError
from ..factors.levels import parse_size
from .core import run_reps
from .params import DEVICES, SimParams, load_params, make

__all__ = ["sensitivity", "format_table", "candidates", "DEFAULT_AXES", "PAPER_POINT",
           "VCPUS"]

# Chang et al. (MASCOTS 2014) Fig. 7a's point on its SandyBridge/HDD machine
# (4 cores, its disk with the write cache, IOzone's poll start)
PAPER_POINT = dict(workload="iozone", threads=256, file_size=128 * 1024, record_size=32 * 1024,
                   cores=4, device="hdd7200", start="poll")
# CPU per 32 KiB write at f_ref (3.3 GHz; ~2x at 1.6 GHz), the commit's fixed device cost,
# cores, where ordered-mode data is written back, and the scheduler's time slice (2250 us:
# CFS's minimum granularity on 4 cores; 200 us: a slice comparable to one thread's writes)
DEFAULT_AXES = {"write_fixed_us": [30.0, 100.0, 400.0],
                "commit_fixed_us": [2000.0, 10000.0, 30000.0],
                "cores": [1, 4],
                "data_flush": ["fsync", "commit"],
                "quantum_us": [200.0, 2250.0]}
_MEASURES = ("throughput", "throughput_fsync", "unblocked_threads", "threads_clear_of_commits", "commits",
             "mean_write", "mean_write_fsync")
# the pseudo-axis of a TCG guest's vCPU count and the CPU costs it multiplies: qemu runs
# the vCPUs in turn on one instruction stream (docs/journal/kernel-history.md, "Four vCPUs")
VCPUS = "vcpus"
_CPU_COSTS = ("open_us", "write_fixed_us", "write_us_per_kib", "fsync_cpu_us", "close_us",
              "spawn_us")


def _params(base: dict, combo: dict, policy: str, freq: float):
    """SimParams of one cell: device fields go to device_overrides."""
    dev_keys = set(next(iter(DEVICES.values())))
    kw = {**base, "policy": policy, "freq_ghz": freq}
    dev = dict(kw.pop("device_overrides", {}))
    combo = dict(combo)
    if VCPUS in combo:
        kw.update(_vcpu_costs(kw, combo.pop(VCPUS)))
    for k, v in combo.items():
        if k in dev_keys:
            dev[k] = v
        else:
            kw[k] = v
    return make(device_overrides=dev, **kw)


def _vcpu_costs(kw: dict, n: int) -> dict:
    """cores=n and every CPU cost x n / the base's cores (a base calibrated on 1 vCPU)."""
    defaults = {f.name: f.default for f in fields(SimParams)}
    grow = n / kw.get("cores", defaults["cores"])
    return {"cores": n, **{c: kw.get(c, defaults[c]) * grow for c in _CPU_COSTS}}


def _fits(base: dict, combo: dict) -> bool:
    """A cell whose record fits its file (the others stay NaN)."""
    both = {**base, **combo}
    return both.get("record_size", 1) <= both.get("file_size", 1)


def _cell(p: SimParams, reps: int, seed: int) -> list:
    rs = run_reps(p, seed + np.arange(reps))
    return [float(np.mean([r.scalars[m] for r in rs])) for m in _MEASURES]


def _check_axes(axes: dict) -> None:
    known = set(SimParams.__dataclass_fields__) | set(next(iter(DEVICES.values()))) | {VCPUS}
    for k, v in axes.items():
        if k not in known or k in ("policy", "freq_ghz"):
            raise ConfigError(f"axes.{k}", k, "a SimParams or device field other than "
                                               "policy and freq_ghz, or vcpus")
        if not isinstance(v, (list, tuple)) or not v:
            raise ConfigError(f"axes.{k}", v, "a non-empty list of values")
    if VCPUS in axes and "cores" in axes:
        raise ConfigError("axes.cores", "cores", "either cores or vcpus (which sets cores)")


def sensitivity(axes: dict | None = None, freqs=(1.6, 3.3), delay="delayjc:window=16ms",
                reps: int = 10, seed: int = 0, params=None, **base):
    """Means of _MEASURES (throughput: the write op timed; unblocked threads) for ext4 and
    `delay` at freqs over the grid `axes` (field -> values; default DEFAULT_AXES; cells
    whose record exceeds the file stay NaN). params: a calibrated TOML file or dict of
    SimParams fields to start from; base: other fields, which win (default PAPER_POINT,
    write_us_per_kib=0 so that write_fixed_us is the whole CPU cost of a write)."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    axes = dict(DEFAULT_AXES if axes is None else axes)
    _check_axes(axes)
    start = load_params(params) if params is not None else {}
    base = {**PAPER_POINT, "write_us_per_kib": 0.0, **start, **base}
    policies = ["ext4", delay]
    shape = [len(v) for v in axes.values()] + [2, len(freqs)]
    out = np.full(shape + [len(_MEASURES)], np.nan)
    for idx in itertools.product(*[range(len(v)) for v in axes.values()]):
        combo = {k: axes[k][i] for k, i in zip(axes, idx)}
        if not _fits(base, combo):
            continue
        for pi, pol in enumerate(policies):
            for fi, f in enumerate(freqs):
                out[idx + (pi, fi)] = _cell(_params(base, combo, pol, f), reps, seed)
    dims = list(axes) + ["policy", "freq_ghz"]
    coords = {**{k: list(v) for k, v in axes.items()}, "policy": policies, "freq_ghz": list(freqs)}
    ds = xr.Dataset({m: (dims, out[..., j]) for j, m in enumerate(_MEASURES)}, coords=coords)
    ds = _signature(ds, freqs, delay, reps)
    if params is not None:
        ds.attrs["params"] = str(params) if not isinstance(params, dict) else "dict"
    return ds


def _signature(ds, freqs, delay, reps):
    e = ds.sel(policy="ext4")
    lo, hi = freqs[0], freqs[-1]
    ds["ext4_speedup"] = e.throughput.sel(freq_ghz=hi) / e.throughput.sel(freq_ghz=lo)
    ds["delayjc_over_ext4"] = (ds.throughput.sel(policy=delay, freq_ghz=hi)
                               / e.throughput.sel(freq_ghz=hi))
    ds["slowdown"] = ds.ext4_speedup < 1
    ds["fewer_batched"] = e.unblocked_threads.sel(freq_ghz=hi) < e.unblocked_threads.sel(freq_ghz=lo)
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
    lines = [f"{head} | ext4 {hi}/{lo} | unblocked {lo}->{hi} | commits {lo}->{hi} | "
             f"dJC/ext4@{hi} | paper-like"]
    e = ds.sel(policy="ext4")
    for idx in itertools.product(*[range(ds.sizes[a]) for a in axes]):
        sel = {a: i for a, i in zip(axes, idx)}
        c, cell = e.isel(sel), ds.isel(sel)
        vals = " ".join(f"{str(ds[a].values[i]):>14}" for a, i in sel.items())
        nb, cm = c.unblocked_threads.values, c.commits.values
        lines.append(f"{vals} | {float(cell.ext4_speedup):9.2f} | {nb[0]:6.1f} -> {nb[-1]:6.1f} | "
                     f"{cm[0]:5.1f} -> {cm[-1]:5.1f} | {float(cell.delayjc_over_ext4):10.2f} | "
                     f"{'yes' if bool(cell.paper_like) else 'no'}")
    return "\n".join(lines)


def candidates(ds, n: int = 5) -> str:
    """format_table of the n cells showing most of the signature: paper_like first, then
    slowdown with more commits, then slowdown alone; deepest slowdown first within each."""
    axes = [d for d in ds.dims if d not in ("policy", "freq_ghz")]
    flat = ds.stack(cell=axes)
    rank = (flat.paper_like.astype(int) * 4 + (flat.slowdown & flat.more_commits).astype(int) * 2
            + flat.slowdown.astype(int)).values
    speed = np.nan_to_num(flat.ext4_speedup.values, nan=np.inf)
    order = np.lexsort((speed, -rank))[:n]
    rows = format_table(ds).splitlines()
    return "\n".join([rows[0]] + [rows[1 + i] for i in order])


def _value(text: str):
    """An axis value from the command line: an int, a float, a size (64k) or a word."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    try:
        return parse_size(text, "axis")
    except ConfigError:
        return {"true": True, "false": False}.get(text.lower(), text)


def _parse_axes(items) -> dict | None:
    axes = {}
    for item in items:
        key, eq, vals = item.partition("=")
        if not eq or not vals.strip():
            raise ConfigError("--axis", item, "NAME=V1,V2,... (a SimParams field, device field "
                                              "or vcpus)")
        axes[key.strip()] = [_value(v.strip()) for v in vals.split(",") if v.strip()]
    return axes or None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m abtlab.sim.explore", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", help="a calibrated parameter file (abtlab calibrate --out)")
    ap.add_argument("--axis", action="append", default=[], metavar="NAME=V1,V2",
                    help="a swept field and its values; repeatable (default: DEFAULT_AXES)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a fixed SimParams field over the whole sweep; repeatable")
    ap.add_argument("--reps", type=int, default=10, help="simulated repetitions per cell")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--best", type=int, default=0, metavar="N",
                    help="print only the N cells showing most of the signature")
    ap.add_argument("--out", help="also write the dataset (NetCDF)")
    a = ap.parse_args(argv)
    fixed = {k: v[0] for k, v in (_parse_axes(a.set) or {}).items()}
    ds = sensitivity(_parse_axes(a.axis), reps=a.reps, seed=a.seed, params=a.params, **fixed)
    print(candidates(ds, a.best) if a.best else format_table(ds))
    if a.out:
        ds.assign({k: v.astype("int8") for k, v in ds.data_vars.items() if v.dtype == bool}
                  ).to_netcdf(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
