"""Runs needed by adaptive repetitions vs a fixed 50 to reach the same CI half-width.

Side by side in one run on the same sweep: first a fixed 50 repetitions per point in
random order (what Chang et al. (MASCOTS 2014) did), which guarantees at every point the CI half-width of
its noisiest point; then adaptive repetitions (`Reps`) with that half-width as the
target. Prints, per point, the RSD, runs and half-width of each, whether the adaptive
point met the target, and the ratio of runs. Real IOzone on scratch loop ext4 (emulated
frequency) when root, else the simulator.

--on mean: the CI of each point's mean throughput. --on slowdown: the CI of each
configuration's throughput ratio 3.3/1.6 GHz (what the sweep is for); the adaptive
sweep then runs twice, in random order (ratio of independent means) and blocked (each
repetition of a configuration at both frequencies back to back, paired ratio), so the
share of each design in the saving shows.

Last, the rule is replayed on the fixed arm's own runs (a point's first k runs stand
for the k it would get): the saving of the rule alone, free of the drift in noise level
between the two arms' times, which a separate adaptive sweep also sees.

Grids: `sweep` (default) is a slice of the Fig. 7 sweep, bare loop device and the
emulated 7200 rpm disk, ext4 and no journal, 64 and 256 threads: its points differ in
noise as a real sweep's do. `paper` is the one configuration Chang et al. (MASCOTS 2014) quotes for its
11-55% RSD (ext4, 256 threads, 128 KB files, 32 KB records, the 7200 rpm disk) at six
frequencies from 1.6 to 3.3 GHz. `uniform` is four bare-device points of about equal
noise, where adaptive repetition can save little. `metarates` is the other configuration
Chang et al. (MASCOTS 2014) quotes (13-32% RSD): Metarates, 4 workers, 4 files each, file create rate, at
the same six frequencies on the bare loop device and on the emulated 7200 rpm disk.

Frequency: `--freq auto` (default) pins real P-states through cpufreq where the machine
has it, else emulates them; the paper grid then takes six P-states from the lowest to the
highest the CPU lists. How noise varies with frequency is a property of real DVFS that
emulation (spinning) cannot reproduce, and it is what decides the saving on that grid.

    python -m benchmarks.adaptive_reps [--on mean|slowdown] [--grid sweep|paper|uniform|metarates]
                                       [--freq auto|emulated|real] [--fixed 50] [--min 5]
                                       [--sim] [--save DIR]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from abtlab.sweep import runner
from abtlab.backends import get
from abtlab.stats import ci_halfwidth, ratio_halfwidth
from abtlab.sweep.loop import Reps
from abtlab.system import cpufreq

GRIDS = {
    "sweep": dict(threads="64,256", file_size="128k", record_size="32k", policy="ext4,nojc",
                  device="none,hdd7200"),
    "paper": dict(threads="256", file_size="128k", record_size="32k", policy="ext4",
                  device="hdd7200"),
    "uniform": dict(threads="16,64", file_size="128k", record_size="32k", policy="ext4,nojc",
                    device="none"),
    "metarates": dict(threads="4", files="4", policy="ext4", device="none,hdd7200"),
}
BACKENDS = {"metarates": ("metarates", "fcr")}      # grid -> (backend, variable)
IOZONE = ("iozone", "throughput")

# frequencies (GHz) per grid: (on mean, on slowdown); the paper grid sweeps all of them
PAPER_FREQS = "1.6,2.0,2.3,2.6,3.0,3.3"
FREQS = {"paper": (PAPER_FREQS,) * 2, "metarates": (PAPER_FREQS,) * 2}
DEFAULT_FREQS = ("3.3", "1.6,3.3")
SIM = dict(threads="16,64,256", policy="ext4,nojc", device="loop,hdd7200")


def freq_levels(grid, on, mode, root=cpufreq.CPU_ROOT):
    """(mode, levels in GHz as a comma list) for a real-I/O grid. mode 'auto' is 'real'
    where cpufreq can pin here, else 'emulated'. Real levels are the CPU's P-states: its
    lowest and highest, and for the paper grid six spread evenly over its table."""
    if mode == "auto":
        mode = "real" if cpufreq.available(root)[0] else "emulated"
    if mode == "emulated":
        return mode, FREQS.get(grid, DEFAULT_FREQS)[on == "slowdown"]
    table = cpufreq.frequencies(root)
    want = 6 if grid in FREQS else (2 if on == "slowdown" else 1)
    if want == 1:
        picked = [table[-1]]
    else:
        picked = sorted({table[round(i * (len(table) - 1) / (want - 1))] for i in range(want)})
    return mode, ",".join(f"{k / 1e6:g}" for k in picked)


def _rows(ds, var, on, paired):
    """(label, runs, relative half-width, RSD) per point (on=mean), or per configuration
    and frequency above the lowest (on=slowdown: the ratio to the lowest frequency; runs
    counts both points, so rows that share a reference count it more than once)."""
    da = ds[var]
    if on == "mean":
        st = da.stack(point=[d for d in da.dims if d != "rep"]).transpose("point", "rep")
        out = []
        for ix, row in zip(st.indexes["point"], st.values):
            x = row[np.isfinite(row)]
            out.append((" ".join(map(str, ix)), x.size, ci_halfwidth(x), np.std(x, ddof=1) / np.mean(x)))
        return out
    f0 = float(da.freq_ghz.min())
    lo = da.sel(freq_ghz=f0)
    cfg = [d for d in lo.dims if d != "rep"]
    b = lo.stack(c=cfg).transpose("c", "rep")
    out = []
    for f in da.freq_ghz.values[da.freq_ghz.values > f0]:
        a = da.sel(freq_ghz=f).stack(c=cfg).transpose("c", "rep")
        for ix, x, y in zip(a.indexes["c"], a.values, b.values):
            n = int(np.isfinite(x).sum() + np.isfinite(y).sum())
            hw = ratio_halfwidth(x, y, method="delta", paired=paired)
            r = x[np.isfinite(x)], y[np.isfinite(y)]
            out.append((f"{' '.join(map(str, ix))} {f:g}/{f0:g}", n, hw,
                        float(np.hypot(*(np.std(v, ddof=1) / np.mean(v) for v in r)))))
    return out


def _runs(ds, var):
    return int(np.isfinite(ds[var].values).sum())


def allocation_bound(rows, target, least):
    """Fixed runs / the runs every row would need at the target, from each row's fixed
    half-width (hw ~ 1/sqrt(n)), at least `least` per row: what the best allocation saves
    on average. One sweep can do better by luck (a point stops early when its first runs
    happen to agree), not by design."""
    need = [max(least, n * (hw / target) ** 2) for _, n, hw, _ in rows]
    return sum(r[1] for r in rows) / sum(need)


def replay(ds, rule):
    """The adaptive rule run on the fixed arm's own runs: a point's first k runs stand for
    the k it would have had. Same runs, same noise, so the saving is the rule's alone; a
    separate adaptive sweep also sees whatever the machine did in the meantime (its noise
    level drifts). Returns the dataset with each point cut to the rule's count."""
    from abtlab.data.block import from_results
    from abtlab.data.result import RunResult
    from abtlab.sweep import loop as sweep
    from abtlab.sweep.reps import more_reps
    da = ds[rule.metric]
    levels = {d: [v.item() for v in da[d].values] for d in da.dims if d != "rep"}
    points = sweep.expand(levels)
    series = [da.sel(**p).values for p in points]
    wanted = {i: min(rule.min, s.size) for i, s in enumerate(series)}
    while True:
        done = {f"p{i}-r{r}": from_results([RunResult({rule.metric: float(series[i][r])})], {}, i, [r])
                for i, k in wanted.items() for r in range(k) if np.isfinite(series[i][r])}
        more = more_reps(rule, points, levels, done, wanted)
        if not more:
            break
        wanted.update(more)
    keep = np.zeros(da.shape, bool)
    for i, p in enumerate(points):
        idx = tuple(levels[d].index(p[d]) if d != "rep" else slice(0, wanted[i]) for d in da.dims)
        keep[idx] = True
    return ds.assign({rule.metric: da.where(keep)})


def _sweep(backend, params, reps, seed, order, save, name):
    t0 = time.monotonic()
    ds = runner.run(backend, reps=reps, seed=seed, quiet=True, order=order, **params)
    if save:
        Path(save).mkdir(parents=True, exist_ok=True)
        ds.to_netcdf(Path(save) / f"{name}.nc")
    return ds, time.monotonic() - t0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--on", choices=("mean", "slowdown"), default="mean")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="sweep")
    ap.add_argument("--fixed", type=int, default=50)
    ap.add_argument("--min", type=int, default=5, help="adaptive: runs before the first check")
    ap.add_argument("--freq", choices=("auto", "emulated", "real"), default="auto",
                    help="real P-states (cpufreq) or emulated frequency; auto: real where pinnable")
    ap.add_argument("--sim", action="store_true")
    ap.add_argument("--var", help="the variable (default: throughput; fcr for metarates)")
    ap.add_argument("--save", help="directory to keep the datasets in")
    a = ap.parse_args(argv)
    backend, var = BACKENDS.get(a.grid, IOZONE)
    real = not a.sim and get(backend).available().ok
    if not real:
        backend, var = "sim", "throughput"
    a.var = a.var or var
    params = dict(GRIDS[a.grid] if real else SIM)
    if real:
        mode, freqs = freq_levels(a.grid, a.on, a.freq)
        params["freq"] = f"{mode}:{freqs}"
    else:
        mode, params["freq"] = "simulated", FREQS.get(a.grid, DEFAULT_FREQS)[a.on == "slowdown"]
    fixed, t_fixed = _sweep(backend, params, a.fixed, 1, "random", a.save, "fixed")
    base = _rows(fixed, a.var, a.on, paired=False)
    target = max(r[2] for r in base)
    rule = Reps(min=a.min, max=a.fixed, target=target, metric=a.var, on=a.on)
    arms = [("adaptive", "random")] + ([("adaptive blocked", "blocked")] if a.on == "slowdown" else [])
    print(f"backend={backend} ({f'real loop ext4, {mode} frequency' if real else 'SIMULATED'}), "
          f"grid={a.grid if real else 'sim'}, var={a.var}, on={a.on}, rows={len(base)}")
    print(f"target relative 95% CI half-width = {target:.4f} (the widest a fixed {a.fixed} gives)")
    n_fixed = _runs(fixed, a.var)
    results = []
    for label, order in arms:
        ds, t = _sweep(backend, params, rule, 2, order, a.save, label.replace(" ", "_"))
        results.append((label, _rows(ds, a.var, a.on, paired=order == "blocked"), t,
                        _runs(ds, a.var)))
    w = max(len(r[0]) for r in base)
    head = f"{'point':<{w}} {'RSD':>6} {'fixed n':>7} {'hw':>7}"
    for label, *_ in results:
        head += f" | {label + ' n':>18} {'hw':>7} met"
    print(head)
    for k, (lab, n, hw, rsd) in enumerate(base):
        line = f"{lab:<{w}} {rsd:6.3f} {n:7d} {hw:7.4f}"
        for _, rows, *_ in results:
            _, an, ahw, _ = rows[k]
            met = "yes" if ahw <= target else ("max" if an >= n else "NO")
            line += f" | {an:18d} {ahw:7.4f} {met:>3}"
        print(line)
    shared = a.on == "slowdown" and fixed.sizes["freq_ghz"] > 2   # rows share a reference
    bound = ("" if shared else f"; expected saving of the best allocation for these spreads: "
             f"{allocation_bound(base, target, a.min):.2f}x (docs/journal/repetitions.md)")
    print(f"runs: fixed {n_fixed} ({t_fixed:.0f} s){bound}")
    for label, rows, t, n in results:
        print(f"runs: {label} {n} ({t:.0f} s); ratio fixed/{label} = {n_fixed / n:.2f}x runs, "
              f"{t_fixed / t:.2f}x time")
    replayed = replay(fixed, rule)
    rows = _rows(replayed, a.var, a.on, paired=False)
    n_rep, met = _runs(replayed, a.var), sum(r[2] <= target or r[1] >= n for r, (_, n, _, _)
                                             in zip(rows, base))
    print(f"runs: adaptive rule replayed on the fixed runs {n_rep} (same runs, same noise; "
          f"{met} of {len(rows)} rows at target or max); ratio fixed/replayed = "
          f"{n_fixed / n_rep:.2f}x runs")


if __name__ == "__main__":
    main()
