"""The kernel history study (notebook 08, the demo's opening answer): one IOzone point
at two frequencies on the host (today's kernel), the stock 6.1 guest, the 6.1 guest
with Linux 3.4's journal semantics (`kernel=6.1-legacy`) and the simulator, and the
high/low throughput ratio of each with its CI (docs/kernel-history.md).

`history_data()` runs (or loads) the four rows and says why a row is missing;
`ratio_table()` / `answer_table()` give the ratios with abtlab.stats.test_slowdown (the
function behind `abtlab stats --slowdown --test`); the plots are in
abtlab.present.kernel_history_plots. Host points are measured with emulated frequency, guest
points run in virtual time (qemu icount) and simulator points are simulated: every
table row and plot says which.

`data`: "auto" runs the host where root and loop devices are here and the guests where
their kernel is built; "guest" the two guests (no root needed: qemu runs unprivileged;
builds the kernel when it is missing); "sim" the simulator only; a path loads a dataset
of `abtlab run`/`abtlab sweep` with a machine dim (e.g. examples/kernel_history.toml's).
The simulator row is always simulated at the same point.
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import about
from ..data import schema
from ..errors import ConfigError, UnavailableError

__all__ = ["ROWS", "DATA_CHOICES", "Point", "History", "make_point", "history_data",
           "guest_machines", "guest_ready", "kernel_key", "add_dataset_rows", "ratio_table", "answer_table", "mechanism_table",
           "terms_table"]

HOST, STOCK, LEGACY, SIM = "host", "guest 6.1", "guest 6.1-legacy", "simulator"
ROWS = (HOST, STOCK, LEGACY, SIM)
DATA_CHOICES = ("auto", "guest", "sim")
_KERNEL_DIR = about.NATIVE / "kernel"
# as build-kernel.sh hashes them
_SERIES = ("delayjc.patch", "legacy.patch", "nullblk-disk.patch", "../include/abt_disk.h",
           "guest.config", "build.env")


@dataclass(frozen=True)
class Point:
    """The IOzone point every row runs (sizes in bytes, frequencies in GHz)."""
    threads: int
    file_size: int
    record_size: int
    device: str
    depth: int
    policies: tuple
    freqs: tuple
    reps: int
    seed: int = 1


@dataclass
class History:
    point: Point
    runs: dict = field(default_factory=dict)      # row -> Dataset
    missing: dict = field(default_factory=dict)   # row -> why it is not there


def make_point(threads=32, file_size="64k", record_size="32k", device="hdd7200", depth=1,
               policy="ext4,nojc", freqs="1.6,3.3", reps=2, seed=1) -> Point:
    """The point, checked: ConfigError naming the notebook parameter."""
    from ..factors.levels import parse_ints, parse_size, parse_words
    from ..policies import parse
    if isinstance(threads, bool) or len(parse_ints(threads, "threads")) != 1:
        raise ConfigError("threads", threads, "one thread count, e.g. 64")
    fs, rs = parse_size(file_size, "file_size"), parse_size(record_size, "record_size")
    if rs > fs or fs % rs:
        raise ConfigError("record_size", record_size, f"a size that divides file_size ({fs} bytes)")
    pols = tuple(parse_words(policy, "policy"))
    for p in pols:
        parse(p)
    if "ext4" not in pols:
        raise ConfigError("policy", policy, "a list including ext4 (the table's policy)")
    fq = tuple(sorted({_freq(f) for f in str(freqs).split(",") if f.strip()}))
    if len(fq) < 2:
        raise ConfigError("freqs", freqs, "two or more frequencies in GHz, e.g. 1.6,3.3")
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2:
        raise ConfigError("reps", reps, "an integer >= 2 (a CI needs two repetitions)")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 256:
        raise ConfigError("depth", depth, "the guest disk's queue depth, an integer from 1 to 256")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError("seed", seed, "an integer")
    return Point(parse_ints(threads, "threads")[0], fs, rs, parse_words(device, "device")[0],
                 depth, pols, fq, reps, seed)


def _freq(text) -> float:
    try:
        f = float(text)
    except ValueError:
        f = math.nan
    if not f > 0:
        raise ConfigError("freqs", text, "frequencies in GHz > 0, e.g. 1.6,3.3")
    return f


def guest_machines(depth: int) -> dict:
    """Row -> --machine spec of the two guests (canonical labels)."""
    from ..machines.spec import parse_machine
    tail = f",depth={depth}" if depth != 1 else ""
    return {STOCK: parse_machine(f"guest:kernel=6.1{tail}").label,
            LEGACY: parse_machine(f"guest:kernel=6.1-legacy{tail}").label}


def guest_ready() -> tuple[bool, str]:
    """(ok, reason): the guest can boot here without a kernel build (its image for the
    current patch series and config is in the cache): a build takes tens of minutes."""
    from ..machines import guest
    ok, why = guest.available()
    if not ok:
        return False, why
    cache = Path(os.environ.get("ABTLAB_KERNEL_CACHE", "/var/cache/abtlab/kernel"))
    if not (cache / kernel_key() / "bzImage").is_file():
        return False, ("the guest kernel is not built yet (make -C native/kernel, once; "
                       "or data='guest' builds it)")
    return True, ""


def kernel_key() -> str:
    """The cache key build-kernel.sh gives the current patch series and config."""
    return hashlib.sha256(b"".join((_KERNEL_DIR / f).read_bytes() for f in _SERIES)).hexdigest()[:16]


def history_data(data="auto", point: Point | None = None, quiet=False) -> History:
    """The rows of the study at `point` (make_point()); see the module doc for `data`."""
    point = point or make_point()
    data = str(data)
    hist = History(point)
    if data not in DATA_CHOICES and not Path(data).exists():
        raise ConfigError("data", data, " | ".join(DATA_CHOICES) + " | the path of a dataset")
    if data in DATA_CHOICES:
        _host_row(hist, data, quiet)
        _guest_rows(hist, data, quiet)
    else:
        from ..data.store import load as load_dataset
        from ..model.remeasure import upgrade
        add_dataset_rows(hist, upgrade(load_dataset(data)), Path(data).name)
    hist.runs[SIM] = _run("sim", point, quiet, freq=",".join(map(str, point.freqs)),
                          params=sim_params(hist))
    hist.runs = {row: hist.runs[row] for row in ROWS if row in hist.runs}   # in ROWS order
    return hist


def sim_params(hist: History) -> dict:
    """The simulator's parameters for the simulator row: calibrated on the legacy guest's
    ext4 runs when there are any (abtlab.sim.calibration: CPU costs, write-back, slices;
    the in-guest disk from its settings), else the presets at the point's queue depth."""
    legacy = hist.runs.get(LEGACY)
    if legacy is None or "op_run" not in legacy:
        return {"queue_depth": hist.point.depth}
    from ..sim.calibration import calibrate
    sel = {"policy": "ext4"} if "policy" in legacy.dims else {}
    params = calibrate(legacy, **sel)
    params.pop("calibration", None)
    return {**params, "queue_depth": hist.point.depth}


def _run(backend, point: Point, quiet, **kw):
    from . import accessor  # noqa: F401  (registers ds.abt)
    from ..sweep.runner import run as run_sweep
    return run_sweep(backend, threads=point.threads, file_size=point.file_size,
                     record_size=point.record_size, policy=",".join(point.policies),
                     device=point.device, reps=point.reps, seed=point.seed, quiet=quiet, **kw)


def _emulated(point: Point) -> str:
    return "emulated:" + ",".join(map(str, point.freqs))


def _host_row(hist: History, data: str, quiet) -> None:
    if data != "auto":
        hist.missing[HOST] = f"not asked for (data={data!r})"
        return
    from ..backends import get
    avail = get("iozone").available()
    if not avail:
        hist.missing[HOST] = f"cannot run here: {avail.reason}"
        return
    hist.runs[HOST] = _run("iozone", hist.point, quiet, machine="host", warmup=1,
                           freq=_emulated(hist.point))


def _guest_rows(hist: History, data: str, quiet) -> None:
    if data == "sim":
        for row in (STOCK, LEGACY):
            hist.missing[row] = "not asked for (data='sim': the simulator only)"
        return
    ok, why = guest_ready() if data == "auto" else (True, "")
    for row, machine in guest_machines(hist.point.depth).items():
        if not ok:
            hist.missing[row] = f"cannot run here: {why}"
            continue
        try:
            hist.runs[row] = _run("iozone", hist.point, quiet, machine=machine,
                                  freq=_emulated(hist.point))
        except UnavailableError as exc:
            if data != "auto":
                raise
            hist.missing[row] = f"cannot run here: {exc}"


def add_dataset_rows(hist: History, ds, source="the dataset") -> None:
    """The host and guest rows of a run dataset with a machine dim, at the point's
    levels (threads, sizes, device; the guests at the point's depth)."""
    ds = _at_point(ds, hist.point)
    labels = [str(m) for m in ds[schema.MACHINE].values] if schema.MACHINE in ds.dims else []
    for row, label in {HOST: "host", **guest_machines(hist.point.depth)}.items():
        if label in labels:
            hist.runs[row] = ds.sel({schema.MACHINE: [label]})
        else:
            hist.missing[row] = f"not in {source} (machines: {', '.join(labels) or 'none'})"


def _at_point(ds, point: Point):
    """ds narrowed to the point's threads, sizes and device (each kept as a dim of one)."""
    want = {schema.THREADS: point.threads, schema.FILE_SIZE: point.file_size,
            schema.RECORD_SIZE: point.record_size, schema.DEVICE: point.device}
    names = {schema.THREADS: "threads", schema.FILE_SIZE: "file_size",
             schema.RECORD_SIZE: "record_size", schema.DEVICE: "device"}
    for dim, value in want.items():
        if dim not in ds.dims:
            continue
        levels = [v.item() for v in ds[dim].values]
        if value not in levels:
            raise ConfigError(names[dim], value, f"a level of the dataset: {levels}")
        ds = ds.sel({dim: [value]})
    return ds


def ratio_table(hist: History, f_low=None, f_high=None, level=0.95):
    """One row per (study row, policy): throughput ratio f_high/f_low with its CI
    (Fieller) and the one-sided test of "slower at f_high" (abtlab.stats.test_slowdown),
    the kind of data, and for a missing study row the reason in `note`."""
    import pandas as pd
    from ..stats.values import provenance_label
    pt = hist.point
    f_low = pt.freqs[0] if f_low is None else f_low
    f_high = pt.freqs[-1] if f_high is None else f_high
    out = []
    for row in ROWS:
        ds = hist.runs.get(row)
        if ds is None:
            out.append({"row": row, "policy": "", "data": "", "note": hist.missing.get(row, "not run")})
            continue
        for pol in [str(p) for p in ds[schema.POLICY].values]:
            rec = _ratio_row(ds.sel({schema.POLICY: [pol]}), f_low, f_high, level)
            out.append({"row": row, "policy": pol, "data": provenance_label(ds), **rec})
    df = pd.DataFrame(out, columns=["row", "policy", "machine", "data", "ratio", "ci_low",
                                    "ci_high", "n_low", "n_high", "p", "fsync_ratio",
                                    "fsync_ci_low", "fsync_ci_high", "note"])
    df.attrs.update(f_low=float(f_low), f_high=float(f_high), level=level)
    return df


def _ratio_row(ds, f_low, f_high, level) -> dict:
    """The paper's throughput (write op timed) ratio with its test, and the -e one
    (fsync timed) beside it when the run has it."""
    import numpy as np
    from ..stats import test_slowdown
    t = test_slowdown(ds, "throughput", f_low, f_high, level=level)
    fs = {"fsync_ratio": math.nan, "fsync_ci_low": math.nan, "fsync_ci_high": math.nan}
    if "throughput_fsync" in ds and np.isfinite(ds["throughput_fsync"].values).any():
        tf = test_slowdown(ds, "throughput_fsync", f_low, f_high, level=level).iloc[0]
        fs = {"fsync_ratio": tf["ratio"], "fsync_ci_low": tf["ci_low"], "fsync_ci_high": tf["ci_high"]}
    if len(t) != 1:
        many = [c for c in t.columns if c in schema.FACTOR_DIMS and t[c].nunique() > 1]
        raise ConfigError(many[0] if many else "ds", "several levels", "one point per study row")
    r = t.iloc[0]
    machine = str(ds[schema.MACHINE].values[0]) if schema.MACHINE in ds.dims else "simulator"
    return {"machine": machine, "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
            "n_low": int(r["n_low"]), "n_high": int(r["n_high"]), "p": r["p"], **fs, "note": _verdict(r)}


def _verdict(r) -> str:
    if r["ci_high"] < 1:
        return "SLOWER at the higher frequency (CI below 1)"
    if r["ci_low"] > 1:
        return "faster at the higher frequency (CI above 1)"
    return "no clear difference (CI contains 1)"


def answer_table(hist: History, policy="ext4", f_low=None, f_high=None, level=0.95, digits=2):
    """The demo's opening table: per study row the `policy` ratio of the paper's
    throughput (write op timed) as '0.53 [0.45, 0.61]', the kind of data, the ratio with
    the fsync timed (IOzone -e) beside it, n per frequency and the verdict (on the
    paper's quantity), or why the row is missing."""
    from ..stats import format_ratio
    if policy not in hist.point.policies:
        raise ConfigError("policy", policy, "a policy of the study: " + ", ".join(hist.point.policies))
    df = ratio_table(hist, f_low, f_high, level)
    df = df[(df.policy == policy) | (df.policy == "")]      # "": a missing row
    head = f"{df.attrs['f_high']:g}/{df.attrs['f_low']:g} GHz [{level:.0%} CI]"
    fhead = f"with fsync timed {df.attrs['f_high']:g}/{df.attrs['f_low']:g}"

    def fmt(rs, los, his):
        return [format_ratio(r, lo, hi, digits) if math.isfinite(r) else "-"
                for r, lo, hi in zip(rs.astype(float), los.astype(float), his.astype(float))]
    table = df.assign(**{head: fmt(df.ratio, df.ci_low, df.ci_high),
                         fhead: fmt(df.fsync_ratio, df.fsync_ci_low, df.fsync_ci_high),
                         "n": [f"{a:.0f} / {b:.0f}" if math.isfinite(a) else "-"
                               for a, b in zip(df.n_low.astype(float), df.n_high.astype(float))]})
    table = table[["row", "machine", "data", head, fhead, "n", "note"]].fillna("").set_index("row")
    table.index.name = None                   # one header row in the rendered table
    table.attrs = dict(df.attrs, policy=policy)
    return table


def mechanism_table(hist: History, policy="ext4"):
    """Per study row and frequency, means over repetitions of what the paper's
    mechanism moves: throughput (MB/s of the row's own clock; the paper's, write op
    timed, and with the fsync timed), journal commits, unblocked threads (the trace
    evidence, where the run recorded it), writers whose write op shares no time with a
    commit (span overlap, not the paper's count) and the mean commit wait (ms)."""
    import pandas as pd
    from ..stats.values import provenance_label
    cols = {"throughput": ("throughput_MB_s", 1e-6), "throughput_fsync": ("with_fsync_MB_s", 1e-6),
            "commits": ("commits", 1),
            "unblocked_threads": ("unblocked_threads", 1), "threads_clear_of_commits": ("no_commit_overlap", 1),
            "mean_commit_wait": ("commit_wait_ms", 1e3)}
    frames = []
    for row in ROWS:
        ds = hist.runs.get(row)
        if ds is None or policy not in [str(p) for p in ds[schema.POLICY].values]:
            continue
        m = ds[[v for v in cols if v in ds]].sel({schema.POLICY: policy}).mean(schema.REP)
        df = m.to_dataframe().reset_index()
        for var, (name, scale) in cols.items():
            if var in df:
                df[name] = df.pop(var) * scale
        frames.append(df.assign(row=row, data=provenance_label(ds)))
    if not frames:
        raise ConfigError("policy", policy, "a policy of the study: " + ", ".join(hist.point.policies))
    out = pd.concat(frames, ignore_index=True)
    keep = ["row", schema.FREQ] + [n for n, _ in cols.values() if n in out] + ["data"]
    return out[keep].set_index(["row", schema.FREQ])


def terms_table(hist: History, policy="ext4"):
    """Per study row and frequency, the timing terms that decide the paper's account
    (abtlab.model.terms, in ms; `writers_before_first_commit` a count): whether the lead
    writer's delay to the first commit shrinks with the clock faster than the others'
    lag behind it."""
    import pandas as pd
    from ..model import terms
    from ..stats.values import provenance_label
    frames = []
    for row in ROWS:
        ds = hist.runs.get(row)
        if ds is None or policy not in [str(p) for p in ds[schema.POLICY].values]:
            continue
        t = terms.terms_table(ds.sel({schema.POLICY: [policy]}))
        for name in terms.TERMS:
            if name != "writers_before_first_commit":
                t[name] = t[name] * 1e3
        frames.append(t.assign(row=row, data=provenance_label(ds)))
    if not frames:
        raise ConfigError("policy", policy, "a policy of the study: " + ", ".join(hist.point.policies))
    out = pd.concat(frames, ignore_index=True)
    keep = ["row", schema.FREQ, *terms.TERMS, "data"]
    return out[keep].rename(columns={k: f"{k}_ms" for k in terms.TERMS
                                     if k != "writers_before_first_commit"}).set_index(["row", schema.FREQ])
