"""The correlation study of He, Sun and Yin ("BPS: A Performance Metric of I/O System", IEEE
IPDPS Workshops 2013; Table 1, Figs. 5-12), driven by fio under libabtrace.

Three sets of runs, each varying one thing:
- "size":        one job reads a file with request sizes 4 KiB .. 8 MiB (Figs. 5-8);
- "concurrency": 1..8 jobs, each reading its own file, the total data fixed (Figs. 9-11);
- "sieving":     an Hpio-like pattern: regions of `region_size` bytes separated by holes of
                 `spacing` bytes, read the way data sieving does, in `sieve_buffer` chunks
                 that cover the holes too (Fig. 12). The application requires the regions
                 only: BPS counts those, bandwidth counts the bytes moved.
Each run's fio process is recorded by libabtrace; its data calls (pread/pwrite of
the psync engine) give BPS, IOPS, bandwidth and ARPT (abtlab.bps.metrics), and its
wall time is the run time the metrics are correlated with (Pearson CC), normalised
as the paper does: |CC| when the sign is the one Table 1 expects, -|CC| otherwise.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np

from .. import about
from . import EXPECTED_SIGN, METRICS, ranking
from ..errors import ConfigError, UnavailableError
from .backend import CASE_KEYS, BpsBackend, case, fio_available, parse_case
from ..system.facts import collect
from ..system import mounts, quietness
from ..sweep import loop

__all__ = ["SETS", "fio_available", "run_study", "by_run", "one_run", "correlations", "compare_with_paper"]

SETS = ("size", "concurrency", "sieving")
KiB, MiB = 1024, 1024 * 1024
DEFAULT_SIZES = tuple(4 * KiB << i for i in range(12))          # 4 KiB .. 8 MiB
DEFAULT_JOBS = tuple(range(1, 9))
DEFAULT_SPACINGS = (8, 64, 256, 1024, 4096)                       # He et al. (IPDPS Workshops 2013): 8 B .. 4096 B
RUN_VARS = ("runtime", *METRICS, "blocks", "ops", "bytes", "required_bytes", "overlap_s",
            "elapsed_s", "dropped")
UNITS = {"runtime": "s", "blocks": "1", "ops": "1", "bytes": "bytes", "required_bytes": "bytes",
         "overlap_s": "s", "elapsed_s": "s", "dropped": "1", **{k: v[0] for k, v in METRICS.items()}}


def _positive_ints(field, values, lo=1, hi=None):
    vals = tuple(values)
    if not vals or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo
                       or (hi is not None and v > hi) for v in vals):
        raise ConfigError(field, values, f"a non-empty list of integers in {lo}..{hi or 'inf'}")
    return vals


def _cases(sizes, jobs, spacings, sets):
    """The study's points as the sweep's `case` levels (abtlab.bps.backend)."""
    if not sets or any(s not in SETS for s in sets):
        raise ConfigError("sets", sets, " | ".join(SETS))
    return ([case("size", s) for s in sizes if "size" in sets]
            + [case("concurrency", j) for j in jobs if "concurrency" in sets]
            + [case("sieving", sp) for sp in spacings if "sieving" in sets])


def _config(directory, total_bytes, job_bs, region_size, regions, spacings, sieve_buffer,
            direct, block_size):
    if not os.path.isdir(os.fspath(directory)):
        raise ConfigError("directory", os.fspath(directory), "an existing directory")
    for name, v in (("total_bytes", total_bytes), ("job_bs", job_bs), ("region_size", region_size),
                    ("sieve_buffer", sieve_buffer), ("block_size", block_size)):
        _positive_ints(name, [v])
    align = 4096 if direct else 1   # O_DIRECT wants aligned sizes
    if regions is None:             # the widest spacing spans about total_bytes
        regions = max(1, total_bytes // (region_size + max(spacings)))
    _positive_ints("regions", [regions])
    if total_bytes < 8 * max(job_bs, align):
        raise ConfigError("total_bytes", total_bytes, f">= 8 x job_bs ({8 * job_bs})")
    return dict(total_bytes=total_bytes, job_bs=job_bs, region_size=region_size, regions=regions,
                sieve_buffer=sieve_buffer, direct=bool(direct), block_size=block_size, align=align)


def _attrs(directory, cfg, argv):
    facts = collect()
    fstype, opts = _mount_of(os.fspath(directory))
    fio_v = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    return {"backend": "fio", "freq_mode": "real", "filesystem": fstype, "mount_options": opts,
            "kernel": facts["kernel"], "cpu": facts["cpu"], "abtlab_version": about.__version__,
            "command": argv, "fio_version": fio_v, "recorder": "libabtrace (LD_PRELOAD)",
            "cache": "O_DIRECT reads" if cfg["direct"] else "buffered reads (page cache; files "
                     "written just before, so mostly cached: the paper flushed caches)",
            **{k: (int(v) if isinstance(v, (bool, np.bool_)) else v) for k, v in cfg.items()}}


def _mount_of(path):
    """(fstype, options) of the mount holding path."""
    m = mounts.holding(path)
    return ("unknown", "") if m is None else (m.fstype, m.options)


def run_study(directory, sizes=DEFAULT_SIZES, jobs=DEFAULT_JOBS, spacings=DEFAULT_SPACINGS,
              sets=SETS, reps: int = 1, total_bytes: int = 32 * MiB, job_bs: int = 64 * KiB,
              region_size: int = 256, regions: int | None = None, sieve_buffer: int = 64 * KiB,
              direct: bool = False, block_size: int = 512, seed: int = 0, quiet: bool = True,
              out=None, resume: bool = False):
    """Run the three sets of He et al. (IPDPS Workshops 2013) with fio in `directory`; one dataset row per run.

    Returns an xarray.Dataset on dim "run" with coords set, request_size, jobs,
    spacing (0 where a set does not vary it), rep, and variables runtime (wall
    time of fio, s) and the metrics of abtlab.bps. The files it reads live in a
    private subdirectory of `directory`, removed on every exit path.
    It runs as a sweep (abtlab.sweep.loop, backend `bps`, runs in random order so drift
    does not masquerade as an effect): with out= every finished run is kept there
    (the sweep's dataset, dims case x rep) and resume=True continues a stopped study.
    """
    ok, why = fio_available()
    if not ok:
        raise UnavailableError(why)
    sizes = _positive_ints("sizes", sizes, 512, 2**30)
    jobs = _positive_ints("jobs", jobs, 1, 64)
    spacings = _positive_ints("spacings", spacings, 0)
    reps = _positive_ints("reps", [reps])[0]
    cfg = _config(directory, total_bytes, job_bs, region_size, regions, spacings, sieve_buffer,
                  direct, block_size)
    cases = _cases(sizes, jobs, spacings, tuple(sets))
    argv = (f"run_study({os.fspath(directory)!r}, sizes={list(sizes)}, jobs={list(jobs)}, "
            f"spacings={list(spacings)}, sets={list(sets)}, reps={reps})")
    work = tempfile.mkdtemp(prefix="abtlab-bps.", dir=os.fspath(directory))
    try:
        ds = loop.run(BpsBackend(), {"case": cases}, reps=reps, out=out, seed=seed, resume=resume,
                 quiet=quiet, order="random", options={**cfg, "work": work},
                 attrs=_attrs(directory, cfg, argv), command=argv)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return by_run(ds)


def by_run(ds):
    """The study's sweep dataset (dims case x rep) as one row per run (dim "run")."""
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    rows = [(*parse_case(c), int(r)) for c in ds["case"].values for r in ds["rep"].values]
    flat = ds[list(RUN_VARS)].stack(run=("case", "rep"))
    data = {v: ("run", flat[v].values.astype(float), {"units": UNITS[v]}) for v in RUN_VARS}
    coords = {"set": ("run", [n for n, _, _ in rows]), "rep": ("run", [r for _, _, r in rows])}
    for key in CASE_KEYS.values():
        coords[key] = ("run", [int(p.get(key, 0)) for _, p, _ in rows])
    attrs = {k: v for k, v in ds.attrs.items() if k not in ("backend",)}
    return xr.Dataset(data, coords=coords, attrs={**attrs, "backend": "fio"})


def _set_means(ds, set_name):
    """Per set, the rep-averaged value of every variable at each level (the paper averaged 5 runs)."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    sub = ds.where(ds["set"] == set_name, drop=True)
    if sub.sizes.get("run", 0) == 0:
        return None
    key = {"size": "request_size", "concurrency": "jobs", "sieving": "spacing"}[set_name]
    df = pd.DataFrame({v: sub[v].values for v in ("runtime", *METRICS)})
    df[key] = sub[key].values
    return df.groupby(key).mean()


def correlations(ds, level=0.95, n_boot=2000, seed=0):
    """Pearson CC of each metric with run time, per set, normalised per He et al. (IPDPS Workshops 2013) Table 1.

    Returns a pandas DataFrame with one row per (set, metric): cc, expected sign,
    normalized (= |cc| if the sign is the expected one, else -|cc|), its bootstrap CI
    over the set's workloads (ci_low, ci_high), the CI of the set leader's normalised CC
    minus this one (diff_low, diff_high), n (levels) and winner: the set's metric whose
    lead over every other excludes 0, else "" (abtlab.bps.ranking); "" everywhere for a run that
    started on a busy host (attrs["busy"] says why: abtlab.system.quietness.busy_reason).
    A final set "mean" averages the normalised CC over the sets, the paper's summary.
    """
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    frames = []
    for set_name in SETS:
        df = _set_means(ds, set_name)
        if df is None:
            continue
        r = ranking.rank(df, "runtime", METRICS, EXPECTED_SIGN, level=level, n_boot=n_boot, seed=seed)
        r.insert(0, "set", set_name)
        r.insert(3, "expected", [EXPECTED_SIGN[m] for m in r.metric])
        r["winner"] = r.attrs["winner"] or ""
        frames.append(r)
    if not frames:
        raise ConfigError("ds", "no runs of a known set", " | ".join(SETS))
    out = pd.concat(frames, ignore_index=True)
    mean = out.groupby("metric", sort=False)["normalized"].mean()
    extra = [{"set": "mean", "metric": m, "cc": float("nan"), "expected": EXPECTED_SIGN[m],
              "normalized": float(v), "n": int(out[out.metric == m].n.sum()), "winner": ""}
             for m, v in mean.items()]
    out = pd.concat([out, pd.DataFrame(extra)], ignore_index=True)
    busy = quietness.busy_reason(ds.attrs)
    if busy:            # a lead measured on a busy host did not hold from one sitting to the next
        out["winner"] = ""
    out.attrs["busy"] = busy
    return out


def compare_with_paper(corr, reference=None):
    """Measured normalised CC next to He et al.'s (IPDPS Workshops 2013), one row per (set, metric)."""
    # deferred: pandas is heavy; `import abtlab` and `abtlab run` do without it
    import pandas as pd
    ref_path = reference or about.REFERENCE_DATA / "bps_published.csv"
    ref = pd.read_csv(ref_path, comment="#", dtype=str).dropna(subset=["study_set"])
    paper = {}
    for _, r in ref.iterrows():
        for m in r["study_metrics"].split(";"):
            paper[(r["study_set"], m)] = (r["normalized"], r["figure"])
    out = corr[["set", "metric", "cc", "normalized", "ci_low", "ci_high", "n", "winner"]].copy()
    out["paper"] = [paper.get((s, m), ("n/a", ""))[0] for s, m in zip(out["set"], out["metric"])]
    out["figure"] = [paper.get((s, m), ("", ""))[1] for s, m in zip(out["set"], out["metric"])]
    return out
