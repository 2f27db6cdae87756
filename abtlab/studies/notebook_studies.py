"""The study notebooks' data: where it comes from, the delay exploration and its table,
the measures recomputed from traces, the SERA-IO workloads. Notebooks call these; they
hold no logic. Their figures are in abtlab.present.study_plots.

`data` parameter of every study notebook:
    "auto"  real runs when this machine can do them (root, loop devices, the C
            C programs built), otherwise the simulator;
    "sim"   the simulator (simulated data, labelled so);
    "guest" (studies that offer it) the qemu guest machine: a real Linux kernel in
            virtual time, no root needed (qemu runs unprivileged);
    a path  a dataset written by `abtlab run`/`abtlab sweep` (e.g. a full sweep).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import about, sera
from ..backends import get as get_backend
from ..bps import EXPECTED_SIGN, METRICS, metrics, ranking
from ..data import runs
from ..data.store import load as load_dataset
from ..errors import ConfigError, UnavailableError
from ..factors.levels import parse_size, parse_words
from ..machines.kernels import KERNELS
from ..machines.spec import parse_machine
from ..model import measures
from ..model.remeasure import upgrade
from ..policies import parse as parse_policy
from ..sim import simulate
from ..sweep.reps import Reps
from ..sweep.runner import run as run_sweep

__all__ = ["real_available", "study_data", "lab_data", "lab_delay_policies", "delay_policies", "delay_sweep", "delay_table",
           "trace_measures", "trace_metrics", "sim_ranking", "frequency_workloads",
           "optimal_delay", "DATA_CHOICES"]

DATA_CHOICES = ("auto", "sim")
_MS = 1e-3


def real_available(backend: str = "iozone") -> bool:
    """True when `backend` can run on this machine now."""
    return bool(get_backend(backend).available().ok)


def study_data(data="auto", sim=None, real=None, reps=3, seed=0, quiet=False, guest=None):
    """The dataset a study runs on (see module doc).

    Progress shows (a widget in Jupyter: a guest run takes a minute) unless quiet, or
    ABTLAB_PROGRESS=off as in the notebooks `abtlab report` executes.

    sim: factors for run_sweep("sim", ...); real: factors for the real backend, with
    a "backend" key (default "iozone"); without `real`, "auto" means the simulator.
    guest: the same for data="guest", with a "machine" key (a guest spec)."""
    data = str(data)
    if data == "guest":
        return _guest_data(guest, reps, seed, quiet)
    if data not in DATA_CHOICES:
        path = Path(data)
        if not path.exists():
            raise ConfigError("data", data, "auto | sim | the path of a dataset"
                              + (" | guest" if guest else ""))
        return load_dataset(path)
    if not isinstance(reps, Reps) and (not isinstance(reps, int) or reps < 1):
        raise ConfigError("reps", reps, "an integer >= 1 or a Reps rule (adaptive)")
    real = dict(real or {})
    backend = real.pop("backend", "iozone")
    if data == "auto" and real and real_available(backend):
        return run_sweep(backend, reps=reps, seed=seed, quiet=quiet, warmup=1, **real)
    return run_sweep("sim", reps=reps, seed=seed, quiet=quiet, **dict(sim or {}))


def _guest_data(guest, reps, seed, quiet):
    """The study's point on a guest machine; UnavailableError when it cannot boot here."""
    if not guest:
        raise ConfigError("data", "guest", "auto | sim | the path of a dataset (this study has no guest runs)")
    factors = dict(guest)
    backend = factors.pop("backend", "iozone")
    spec = factors.get("machine")
    machine = parse_machine(spec) if spec else None   # parsed once: the sweep gets the Machine
    if machine is None or not machine.is_guest:
        raise ConfigError("guest_machine", spec, "a guest spec, e.g. guest:kernel=6.1-legacy,depth=256")
    if not isinstance(reps, int) or reps < 1:
        raise ConfigError("reps", reps, "an integer >= 1")
    avail = machine.available()
    if not avail:
        raise UnavailableError(f"data='guest': {avail.reason}")
    return run_sweep(backend, reps=reps, seed=seed, quiet=quiet, **{**factors, "machine": machine})


def lab_data(data, threads=256, file_size="128k", record_size="32k", policy="ext4,nojc",
             freqs=(1.6, 3.3), reps=3, seed=0, guest_kernel="6.1-legacy", guest_depth=1, quiet=False,
             sim_params=None):
    """A lab's IOzone point (the paper's cell by default: 256 writers x 128 KiB in 32 KiB
    records) at each clock in `freqs` (GHz), on the data the lab was given: the simulator
    (its presets, or `sim_params`: a params file, "paper_machine" for
    examples/sim_paper_machine.toml), the host kernel (frequency by CPU-time dilation, no
    disk model), or a guest kernel in virtual time (`guest_kernel`, its disk serving
    `guest_depth` requests at once)."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError("threads", threads, "one thread count, an integer >= 1, e.g. 256")
    fs, rs = parse_size(file_size, "file_size"), parse_size(record_size, "record_size")
    if rs > fs or fs % rs:
        raise ConfigError("record_size", record_size, f"a size that divides file_size ({fs} bytes)")
    if not isinstance(guest_kernel, str) or guest_kernel not in KERNELS:
        raise ConfigError("guest_kernel", guest_kernel, " | ".join(KERNELS))
    if isinstance(guest_depth, bool) or not isinstance(guest_depth, int) or not 1 <= guest_depth <= 256:
        raise ConfigError("guest_depth", guest_depth, "an integer from 1 to 256")
    f = ",".join(f"{float(x):g}" for x in (freqs if isinstance(freqs, (list, tuple)) else [freqs]))
    point = dict(threads=threads, file_size=fs, record_size=rs, policy=policy)
    depth = f",depth={guest_depth}" if guest_depth != 1 else ""
    sim = dict(point, freq=f, device="hdd7200", **_sim_params(sim_params))
    ds = study_data(data, reps=reps, seed=seed, quiet=quiet, sim=sim,
                    real=dict(point, backend="iozone", freq=f"emulated:{f}", device="none"),
                    guest=dict(point, machine=f"guest:kernel={guest_kernel}{depth}",
                               freq=f"emulated:{f}", device="hdd7200", **_GUEST_BOOTS))
    return _lab_policies(ds, policy) if str(data) not in (*DATA_CHOICES, "guest") else ds


# a boot runs at most 8 points and may take 30 min of host time: 20 points of 256 writers in
# one boot outlasted the default 600 s at host load 10 (virtual time is not affected)
_GUEST_BOOTS = {"guest_batch": 8, "guest_timeout": 1800}


def _sim_params(sim_params) -> dict:
    """The simulator option for a lab's `sim_params`: none, the paper's machine preset, or a file."""
    if sim_params is None:
        return {}
    path = about.EXAMPLES / "sim_paper_machine.toml" if sim_params == "paper_machine" else Path(str(sim_params))
    if not path.is_file():
        raise ConfigError("sim_params", sim_params, 'None | "paper_machine" | the path of a simulator params file')
    return {"params": str(path)}


def _lab_policies(ds, policy):
    """A loaded dataset (remeasured with today's definitions) narrowed to the lab's policies."""
    ds = upgrade(ds)
    if "policy" not in ds.dims:
        return ds
    want = parse_words(policy.replace(";", ","), "policy") if ";" not in policy else policy.split(";")
    have = [str(p) for p in ds["policy"].values]
    if not set(want) <= set(have):
        raise ConfigError("data", f"policies {have}", "a dataset with the lab's policies: " + ", ".join(want))
    return ds.sel(policy=want)


def lab_delay_policies(data, windows_ms, max_resets=64) -> str:
    """Lab 3's policies for its data: on a guest the kernel's delayJC (jbd2 patch,
    docs/journal/kernel-delayjc.md), elsewhere the LD_PRELOAD one (the simulator models it)."""
    kind = "kdelayjc" if str(data) == "guest" else "delayjc"
    return ";".join(delay_policies(windows_ms, max_resets, kind))


def delay_policies(windows_ms, max_resets=64, kind="delayjc") -> list[str]:
    """ext4 plus one delayJC spec per window (ms): `delayjc` (preload) or `kdelayjc` (the
    guest kernel's)."""
    if not windows_ms or any(not isinstance(w, (int, float)) or isinstance(w, bool) or w <= 0
                             for w in windows_ms):
        raise ConfigError("windows_ms", windows_ms, "a non-empty list of windows in ms > 0")
    if not isinstance(max_resets, int) or max_resets < 0:
        raise ConfigError("max_resets", max_resets, "an integer >= 0")
    if kind not in ("delayjc", "kdelayjc"):
        raise ConfigError("kind", kind, "delayjc | kdelayjc")
    return ["ext4"] + [f"{kind}:window={w:g}ms,max_resets={max_resets}" for w in windows_ms]


def delay_sweep(windows_ms=(1, 4, 16, 64), max_resets=64, threads=(256,), freqs=(1.6, 3.3),
                reps=3, seed=0, **sim):
    """Simulated ext4 and delayJC at each window; a `window_ms` coordinate on the policy
    dim (0 = ext4). sim: other simulator factors/fields (device, cores, ...)."""
    pols = delay_policies(list(windows_ms), max_resets)
    ds = simulate(reps=reps, seed=seed, policy=pols, threads=list(threads),
                  freq_ghz=list(freqs), **sim)
    return ds.assign_coords(window_ms=("policy", [0.0] + [float(w) for w in windows_ms]))


def delay_table(ds):
    """Mean throughput (MiB/s; the paper's, write op timed, and with the fsync timed where
    the run has it), unblocked threads (the trace evidence, where the run has it),
    threads clear of commits (span overlap), commit wait (ms) and commits per point, as a
    DataFrame with a window_ms column (0 = ext4)."""
    keep = [d for d in ds["throughput"].dims if d != "rep"]
    extra = [v for v in ("throughput_fsync", "unblocked_threads")
             if v in ds and np.isfinite(ds[v].values).any()]
    m = ds[["throughput", *extra, "threads_clear_of_commits", "mean_commit_wait", "commits"]].mean("rep")
    df = m.to_dataframe().reset_index()
    for var in ("throughput", "throughput_fsync"):
        if var in df:
            df[var] /= 2 ** 20
    df["mean_commit_wait"] /= _MS
    df = df.rename(columns={"throughput": "throughput_mib_s", "throughput_fsync": "with_fsync_mib_s",
                            "mean_commit_wait": "commit_wait_ms"})
    if "window_ms" not in df:      # a dataset from `abtlab run`: the window from the spec
        df["window_ms"] = df["policy"].map(_window_ms)
    cols = ["throughput_mib_s", "with_fsync_mib_s", "unblocked_threads", "threads_clear_of_commits",
            "commit_wait_ms", "commits"]
    return df[[*keep, "window_ms", *(c for c in cols if c in df)]]


def _window_ms(spec: str) -> float:
    window = parse_policy(spec).window_us     # the policy's own (None: not a fixed window)
    return float("nan") if window is None else window / 1e3


def optimal_delay(ds, max_commit_wait_ms=None):
    """Per frequency and thread count, the window of highest mean throughput among those
    whose mean commit wait is no worse than ext4's at the same point (the
    reliability criterion of Chang et al., MASCOTS 2014; ext4 itself, window 0, always qualifies), or no worse than
    max_commit_wait_ms when given."""
    if max_commit_wait_ms is not None and not (isinstance(max_commit_wait_ms, (int, float))
                                               and max_commit_wait_ms > 0):
        raise ConfigError("max_commit_wait_ms", max_commit_wait_ms, "a number of ms > 0, or None")
    df = delay_table(ds)
    groups = [c for c in ("freq_ghz", "threads", "file_size", "record_size", "device") if c in df]
    ext4 = df[df.window_ms == 0].set_index(groups)
    if ext4.empty:
        raise ConfigError("ds.policy", list(ds.policy.values), "ext4 among the policies")
    bound = (ext4["commit_wait_ms"] if max_commit_wait_ms is None
             else ext4["commit_wait_ms"] * 0 + max_commit_wait_ms)
    df = df.join(bound.rename("wait_bound_ms"), on=groups)
    ok = df[(df.commit_wait_ms <= df.wait_bound_ms) | (df.window_ms == 0)]
    best = ok.loc[ok.groupby(groups)["throughput_mib_s"].idxmax()].set_index(groups)
    best["gain_over_ext4"] = best["throughput_mib_s"] / ext4["throughput_mib_s"].reindex(best.index)
    best.attrs["freq_mode"] = ds.attrs.get("freq_mode", "")
    return best.reset_index()


def _runs(ds):
    """(run_id, {factor: level}) of every run of ds that has a trace."""
    if "op_run" not in ds:
        raise ConfigError("ds", "no traces", "a dataset with op and commit traces")
    rid = ds["run_id"]
    for idx in np.ndindex(rid.shape):
        r = int(rid.values[idx])
        if r >= 0:
            yield r, {d: rid[d].values[i].item() for d, i in zip(rid.dims, idx)}


def trace_measures(ds, workload="iozone"):
    """The model's measures (eqs. 1-10) recomputed from each run's op and commit
    traces: a DataFrame, one row per run (factor levels + measures)."""
    fsync = str(ds.attrs.get("sim_fsync", "True")) != "False"
    rows = []
    for r, lv in _runs(ds):
        size = lv.get("file_size") if workload == "iozone" else None
        m = measures(runs.ops(ds, r), runs.commits(ds, r), workload, file_size=size, fsync=fsync)
        rows.append({**lv, "run_id": r, **m})
    return pd.DataFrame(rows)


def trace_metrics(ds, block_size=512):
    """abtlab.bps metrics (BPS, IOPS, bandwidth, ARPT) of each run's op trace beside the
    run's elapsed time: a DataFrame, one row per run."""
    rows = []
    for r, lv in _runs(ds):
        elapsed = float(ds["elapsed"].sel({k: v for k, v in lv.items()}).item())
        rows.append({**lv, "run_id": r, "elapsed": elapsed, **metrics(runs.ops(ds, r), block_size)})
    return pd.DataFrame(rows)


def sim_ranking(per_run, level=0.95, n_boot=2000, seed=0):
    """trace_metrics' runs ranked by how well each metric tracks elapsed time: normalised
    CC with bootstrap CIs over the runs and a winner only where its lead excludes 0
    (abtlab.bps.ranking); a "winner" column ("" when none)."""
    r = ranking.rank(per_run, "elapsed", METRICS, EXPECTED_SIGN, level=level, n_boot=n_boot, seed=seed)
    r["winner"] = r.attrs["winner"] or ""
    return r


def frequency_workloads(data="sim", names=("iozone", "metarates", "fio-seq", "mixed"),
                        freqs=(0.8, 1.3, 1.8, 2.5), reps=3, seed=0):
    """SERA-IO comparison workloads: "sim" (simulator), or "auto": emulated-frequency
    runs of iozone and metarates when this machine can run them, else the simulator."""
    if data not in DATA_CHOICES:
        raise ConfigError("data", data, " | ".join(DATA_CHOICES))
    if data == "auto" and real_available("iozone"):
        real = tuple(n for n in names if n in ("iozone", "metarates"))
        return sera.emulated_workloads(real, freqs=freqs, reps=reps, seed=seed)
    return sera.sim_workloads(tuple(names), freqs=freqs, reps=reps, seed=seed)
