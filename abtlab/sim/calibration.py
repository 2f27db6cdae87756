"""Simulator parameters from a real run dataset (abtlab.load), as `abtlab calibrate` does.

Every run of the dataset is fitted from its own op and commit traces by
abtlab.model.fit_sim_params (CPU costs on the paper's write op, converted to the
reference frequency with the run's freq_ghz); the per-run estimates are pooled by their
median. What the run was made with (its start, cores, slices, disk) and what its
journal thread did (abtlab.sim.run_evidence) are set too. The result is a dict of
SimParams keywords with a [device_overrides] table, accepted by abtlab.sim as `params=`
(dict or the TOML file `to_toml` writes); its [calibration] table says which values were
`measured` from the records, which are the run's `settings` and which `defaults`. Runs
without a journal commit are refused (the commit terms would be the simulator's
defaults).
"""
from __future__ import annotations

import re

import numpy as np

from ..data import runs, schema
from ..errors import ConfigError
from ..machines.spec import parse_machine
from ..model import fit_sim_params
from ..model.calibrate import cpu_scale
from ..trace import Op
from .devices import DEVICES
from .params import make
from .run_evidence import journal_params, sched_quantum_us, shared_stream, start_params

__all__ = ["calibrate", "to_toml", "guest_device", "not_fitted", "measured", "FITTED"]

_CPU = ("open_us", "write_fixed_us", "close_us")
_DEVICE = ("commit_fixed_us", "commit_us_per_block")


def _runs(ds, sel):
    if schema.RUN_ID not in ds or "op_run" not in ds:
        raise ConfigError("dataset", "no traces", "a run dataset with op traces (run_id, op_*)")
    freqs = ds[schema.RUN_ID].sel(**sel)
    out = []
    for f in (freqs["freq_ghz"].values if "freq_ghz" in freqs.dims else [None]):
        ids = freqs.sel(freq_ghz=f) if f is not None else freqs
        out += [(int(i), None if f is None else float(f)) for i in np.ravel(ids.values) if i >= 0]
    return out


def _fit_runs(ds, sel, f_ref, nonscaling, cores=None):
    """(per-run fits, [(ops, commits, freq_ghz)] of those runs): records are read once."""
    fits, seen = [], []
    for run, f in _runs(ds, sel):
        ops, com = runs.ops(ds, run), runs.commits(ds, run)
        if ops.size:
            fits.append(fit_sim_params(ops, com, freq_ghz=f, f_ref_ghz=f_ref, nonscaling=nonscaling,
                                       cores=cores))
            seen.append((ops, com, f))
    if not fits:
        raise ConfigError("dataset", "no op records", "runs with op traces")
    return fits, seen


def _median(fits, key):
    v = np.array([f.get(key, np.nan) for f in fits], float)
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else None


def _one_int(value) -> int | None:
    """An attr that is one integer (a dataset of several machines joins theirs: 'a | b')."""
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


# requests a small commit makes: its log blocks, the cache flush before the commit block,
# the commit block (jbd2 with a write cache: REQ_PREFLUSH | REQ_FUA); 3 x 12.67 ms =
# 38.0 ms, the guest's measured 38.16-38.20 ms commits of one or two handles (hdd7200);
# the last two are its record, after the log blocks (writers blocked on a logged buffer
# resume 23-25 ms before the commit ends in the guest's traces)
COMMIT_REQUESTS = 3


def guest_device(ds) -> dict | None:
    """device_overrides of an in-guest disk (the `guest_disk` attr of a dataset or an
    attrs dict): in virtual time its latency is known exactly, not something to fit.
    null_blk or brd with a fixed latency per request (completion_nsec, or the drive
    model's `fixed` profile with disk_fixed_ns): that latency; the drive model of
    abt_disk.h (disk_model=hdd7200, ...): the simulator's device of the same name,
    fitted to that model (abtlab.sim.devices). None otherwise (a dataset joining several
    disks, a host disk)."""
    attrs = getattr(ds, "attrs", ds)
    text = str(attrs.get("guest_disk", ""))
    if "|" in text:
        return None
    words = dict(re.findall(r"(\w+)=([\w.-]+)", text))
    model = words.get("disk_model", "")
    if model and model != "fixed":
        return dict(DEVICES[model]) if model in DEVICES else None
    fixed = words.get("disk_fixed_ns") if model == "fixed" else words.get("completion_nsec")
    if fixed is None or not fixed.isdigit():
        return None
    c_us, mbps = int(fixed) / 1e3, int(words.get("mbps", "0") or 0)
    per_kib = 1024 / mbps if mbps else 0.0     # us per KiB at mbps MB/s
    return {"flush_fixed_us": c_us, "flush_us_per_kib": per_kib,
            "commit_fixed_us": COMMIT_REQUESTS * c_us, "commit_us_per_block": 4 * per_kib,
            "commit_us_per_file": 0.0, "inode_write_us": c_us,
            "commit_record_us": (COMMIT_REQUESTS - 1) * c_us,
            "cache_kib": 0.0, "media_us_per_kib": 0.0, "destage_us_per_file": 0.0,
            "destage_fixed_us": 0.0}


def _bfq(attrs) -> bool:
    """BFQ serves one process's queue at a time (and idles on it): the writers' requests,
    one process each, reach the device one at a time whatever its depth."""
    return str(attrs.get("kernel_iosched", "")).strip() == "bfq"


def _fsync_cpu(ops, cores, write_us, scale, dilation=False):
    """CPU time (us at f_ref) of an fsync before its data goes to the disk (the write-back
    it starts: allocation, page walk, bio submission), from the spacing of fsync starts
    when threads outnumber cores and run one after another: cores x the median gap is one
    thread's writes and its fsync's CPU. The median ignores the gap of threads a commit
    blocked. By dilation the writes are dilated in the gap and the fsync is not (its
    dilation is spun after it returns). None when it cannot be told (also when the gap
    is not longer than the writes: a zero would read as measured)."""
    tids = np.unique(ops["tid"])
    f = np.sort(ops["t_start_ns"][ops["op"] == int(Op.FSYNC)])
    writes = np.count_nonzero(ops["op"] == int(Op.WRITE))
    if tids.size <= cores or f.size < 3:
        return None
    gap_us = cores * float(np.median(np.diff(f))) / 1e3
    fsync_us = gap_us - writes / tids.size * write_us * scale
    if fsync_us <= 0:      # fsyncs closer than their threads' writes: not one after another
        return None
    return fsync_us if dilation else fsync_us / scale


def _median_fsync_cpu(seen, f_ref, nonscaling, cores, write_us, dilation=False):
    """Median of _fsync_cpu over the runs at the frequency nearest f_ref: the gap also
    holds the writes' CPU beyond their median (their tail, dilated with them), which at
    a lower clock would be taken for the fsync's, by dilation undilated."""
    near = min((abs(f - f_ref) for _, _, f in seen if f), default=None)
    est = []
    for ops, _, f in seen:
        if near is not None and f and abs(f - f_ref) > near:
            continue
        v = _fsync_cpu(ops, cores, write_us, cpu_scale(f, f_ref, nonscaling), dilation)
        if v is not None:
            est.append(v)
    return float(np.median(est)) if est else None


def _per_kib(fits, out, share=1) -> None:
    """A buffered write's CPU is its copy: the guest's writes cost 10.9 / 40.8 / 80.9 us at
    4 / 16 / 32 KiB (2.5-2.7 us per KiB, little fixed), so a cost read at one record size
    is priced per KiB (median over runs), and a simulated 4 KiB record costs an eighth of
    a 32 KiB one, not the same."""
    per = [share * f["write_fixed_us"] / f["write_kib"] for f in fits
           if np.isfinite(f.get("write_fixed_us", np.nan)) and f.get("write_kib", 0) > 0]
    if per and "write_fixed_us" in out:
        out["write_fixed_us"], out["write_us_per_kib"] = 0.0, float(np.median(per))


def _dioread(attrs) -> str:
    """Where the runs' write-back joined a transaction: ext4's dioread_nolock is the
    default from Linux 5.6 (244adf6426ee); the dioread_lock mount option, or an older
    kernel, allocates when write-back starts."""
    if "dioread_lock" in str(attrs.get("mount_options", "")).split(","):
        return "lock"
    m = re.search(r"(\d+)\.(\d+)", str(attrs.get("kernel", "")))
    return "nolock" if m is None or (int(m[1]), int(m[2])) >= (5, 6) else "lock"


def _machine_attrs(ds, sel) -> dict:
    """ds.attrs, and when sel picks one of several machines (whose attrs the dataset
    joins, 'a | b'): for a guest its own vCPUs, disk depth, kernel knobs and the mount
    options they imply, from its spec (abtlab.machines.spec); for the host, no guest's."""
    attrs = dict(ds.attrs)
    label = sel.get("machine")
    if label is None or "machine" not in ds.dims or ds.sizes["machine"] < 2:
        return attrs
    m = parse_machine(str(label))
    if not m.is_guest:                     # the host: none of the guests' settings
        return {k: v for k, v in attrs.items() if not k.startswith(("guest_", "kernel_"))}
    knobs, own = m.kernel_knobs, m.attrs()
    attrs.update(knobs.attrs(), mount_options=knobs.mount_options(),
                 **{k: own[k] for k in ("guest_cpus", "guest_disk_queue_depth")})
    return attrs


def _device(fits, attrs, out) -> dict:
    """device_overrides fitted from the runs, or the in-guest disk's own settings (a
    model: its numbers are known), with what follows from them in `out`."""
    known = guest_device(attrs)
    if known is None:
        dev = {k: v for k in _DEVICE if (v := _median(fits, k)) is not None}
        flush = _median(fits, "flush_us")
        if flush is not None:                 # whole own-data write-back per fsync
            dev.update(flush_fixed_us=flush, flush_us_per_kib=0.0)
        return {k: max(v, 0.0) for k, v in dev.items()}
    out["dev_cv"] = 0.0
    # null_blk's mbps is one budget for the device, whatever the requests in flight
    out["shared_transfer"] = known["flush_us_per_kib"] > 0
    # ext4's writes dirty the inode-table blocks all files share: each waits while a
    # commit logs them, until the log write completes (the record after it is known)
    out["shadow_wait"] = True
    return known


def _cores(attrs) -> tuple[int | None, int]:
    """(the simulator's cores, the vCPUs that share one instruction stream). A guest
    run's cores are the guest's, not the host's that ran qemu. Under icount its vCPUs
    take turns at one stream: each of N busy vCPUs runs at 1/N of it, so a cost read
    undisturbed is N times as long on a core of the simulator (processor sharing; an
    upper bound where the quiet write op already held other vCPUs' turns, as measured
    in docs/guide/simulator.md)."""
    cores = _one_int(attrs.get("guest_cpus")) or _one_int(attrs.get("cpu_logical"))
    return cores, (cores if cores and shared_stream(attrs) else 1)


def _share(out, n) -> None:
    """Costs of one stream shared by n vCPUs, on n cores of the simulator."""
    for k in ("open_us", "write_fixed_us", "write_us_per_kib", "close_us", "commit_cpu_us"):
        if n > 1 and k in out:
            out[k] *= n


def _flush_one_file_us(dev, ds) -> float:
    """Device time of one file's data write-back (the fsync before its commit)."""
    kib = float(np.max(ds["file_size"].values)) / 1024 if "file_size" in ds.coords else 0.0
    return dev.get("flush_fixed_us", 0.0) + dev.get("flush_us_per_kib", 0.0) * kib


def calibrate(ds, **sel) -> dict:
    """SimParams keywords fitted from every run of ds (optionally a .sel() of its factors;
    one machine of several: that machine's attrs)."""
    attrs = _machine_attrs(ds, sel)
    emulated = attrs.get("freq_mode") == "emulated"
    f_ref = float(attrs.get("f_ref_ghz", 3.3))
    # emulation dilates all of a thread's CPU time; icount, every instruction of the guest
    nonscaling = 0.0 if emulated or attrs.get("freq_mode") == "virtual" else 0.1
    cores, share = _cores(attrs)
    # vCPUs taking turns at one stream: the write op's quiet duration, shared (_share)
    fits, seen = _fit_runs(ds, sel, f_ref, nonscaling, cores if share == 1 else None)
    commits = int(sum(f.get("commit_count", 0) for f in fits))
    if commits == 0:           # the simulator's defaults would stand in for the commit
        raise ConfigError("dataset", f"{len(fits)} runs{_levels(ds, sel, 'policy')}, "
                          "no journal commit in their traces",
                          "runs with journal commits (ext4 or delayjc, commits traced) to fit "
                          "the commit's lock, device time and blocks per handle from; NOJC "
                          "has no journal")
    out = {"f_ref_ghz": f_ref, "nonscaling": nonscaling, "write_us_per_kib": 0.0}
    out.update({k: v for k in _CPU if (v := _median(fits, k)) is not None})
    if cores:
        out["cores"] = cores
    if depth := _one_int(attrs.get("guest_disk_queue_depth")):
        out["queue_depth"] = 1 if _bfq(attrs) else depth
    for k in ("dev_cv", "commit_lock_us", "blocks_per_handle"):
        if (v := _median(fits, k)) is not None:
            out[k] = max(v, 0.0)
    if emulated:             # the backends dilate an op's CPU time by spinning after the call
        out["dilation"] = True
    if (quantum := sched_quantum_us(attrs)) is not None:   # the guest's slices (cfs34, x K)
        out["quantum_us"] = quantum
    out["dioread"] = _dioread(attrs)
    out["device_overrides"] = _device(fits, attrs, out)
    note = _run_settings(ds, attrs, seen, out, f_ref, nonscaling)
    _share(out, share)
    if cores and "write_fixed_us" in out and (v := _median_fsync_cpu(
            seen, f_ref, nonscaling, cores, out["write_fixed_us"], emulated)) is not None:
        out["fsync_cpu_us"] = v
    _per_kib(fits, out, share)
    out["calibration"] = {"source_command": str(attrs.get("command", "")),
                          "freq_mode": str(attrs.get("freq_mode", "")),
                          "runs": len(fits), "commits_seen": commits,
                          "measured": measured(out), "defaults": not_fitted(out),
                          "settings": [k for k in SETTINGS if k in out],
                          "vcpus_per_stream": share, **note}
    return out


def _run_settings(ds, attrs, seen, out, f_ref, nonscaling) -> dict:
    """The start and the journal thread from the run (abtlab.sim.run_evidence), set in
    out; what the [calibration] table says of them."""
    note = {}
    if "iozone" in (attrs.get("backend"), attrs.get("sim_workload")):
        start, note["start_from"], defaults = start_params(attrs)
        out.update(start)
        note["start_defaults"] = defaults
    threads = int(np.max(ds["threads"].values)) if "threads" in ds.coords else 64
    quantum = out.get("quantum_us") or make(threads=threads, cores=out.get("cores", 4)).quantum()
    dev = {**DEVICES["loop"], **out["device_overrides"]}
    journal, evidence = journal_params(seen, f_ref, nonscaling, quantum,
                                       _flush_one_file_us(dev, ds))
    out.update(journal)
    return {**note, **evidence}


# what calibrate() fits; one it could not tell is left out (the simulator's default applies)
FITTED = ("open_us", "write_fixed_us", "close_us", "fsync_cpu_us", "dev_cv", "commit_lock_us",
          "blocks_per_handle", *_DEVICE, "flush_fixed_us", "commit_cpu_us", "jbd2_front")


# what calibrate() takes from the run's settings (its attrs), not from its records
SETTINGS = ("nonscaling", "cores", "queue_depth", "quantum_us", "dioread", "dilation", "start",
            "poll_us", "poll_cpu_us", "shared_transfer", "shadow_wait", "device_overrides")


def measured(params: dict) -> list[str]:
    """The FITTED names calibrate() read from the runs' records (the rest of the file is
    the run's settings: its start, cores, disk, slices)."""
    dev = params.get("device_overrides", {})
    return [k for k in FITTED if k in params or k in dev]


def not_fitted(params: dict) -> list[str]:
    """The FITTED names calibrate() could not tell from the runs, so left to the defaults."""
    dev = params.get("device_overrides", {})
    return [k for k in FITTED if k not in params and k not in dev]


def _levels(ds, sel, factor) -> str:
    """' (policy nojc)': the levels of factor the fitted runs have, for a message."""
    if factor in sel:
        return f" ({factor} {sel[factor]})"
    if factor not in ds.coords:
        return ""
    return f" ({factor} " + ", ".join(str(v) for v in ds[factor].values.tolist()) + ")"


def _value(v):
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(float(v)) if isinstance(v, float) else str(int(v))


def to_toml(params: dict) -> str:
    """TOML text of calibrate()'s dict: scalars first, then one table per dict value."""
    lines = [f"{k} = {_value(v)}" for k, v in params.items() if not isinstance(v, dict)]
    for k, v in params.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"] + [f"{kk} = {_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"
