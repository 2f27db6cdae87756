"""What a run says about its start, its scheduler and its journal thread, as SimParams.

abtlab.sim.calibration fits costs; this module reads the settings a run was made with
and the journal thread's behaviour from its commit records:
- the start (a simulated run's own, read back): abt-iozone's `start` option (the dataset's `start` attr, else its sweep
  spec, else the program's default, the barrier). A barrier-started thread takes its
  clock when it runs after the barrier, not at the release: in the simulator that is
  the polled start with no timer (`start="poll"`, `poll_us=0`, `poll_cpu_us=0`). IOzone's
  polled start wakes at the poll timer (`poll_us`: select(1 us) under the default timer
  slack, a default, not read from the run).
- the slice: a guest's `kernel_sched` preset (3.4's minimum granularity, times K for
  cfs34xK), the CFS floor a slice of hundreds of runnable writers comes to.
- the journal thread's CPU to start a commit (`commit_cpu_us`): jbd2's T_RUNNING ->
  T_LOCKED step, the median of (locking - start) over commits, at f_ref.
- whether the woken journal thread runs at once (`jbd2_front`): the first commit's start
  after the first fsync began, less that fsync's own data write-back on the device
  (`wake_lag_us`). Longer than a slice means jbd2 waited behind runnable writers.
- the CPU streams: under qemu's icount the vCPUs take turns at one instruction stream
  (the dataset's `icount` attr says "shared by all N vCPUs"), so N vCPUs do no more
  work per virtual second than one.
"""
from __future__ import annotations

import json
import re

import numpy as np

from ..model.calibrate import cpu_scale
from ..model.spans import commit_table
from ..trace import Op
from .params import POLL_US
from ..errors import ConfigError
from ..machines.kernel_knobs import sched_settings

__all__ = ["start_params", "sched_quantum_us", "journal_params", "wake_lag_us",
           "shared_stream"]


def _start_option(attrs) -> tuple[str, str]:
    """(start mode, where it was read)."""
    if str(attrs.get("start", "")).strip():
        return str(attrs["start"]).strip(), "the run's start attr"
    try:
        spec = json.loads(str(attrs.get("sweep_spec", "")) or "{}")
    except ValueError:
        spec = {}
    opt = spec.get("options", {}).get("start") if isinstance(spec, dict) else None
    if opt:
        return str(opt), "the run's sweep spec"
    return "barrier", "abt-iozone's default (the sweep spec sets no start)"


def start_params(attrs) -> tuple[dict, str, list]:
    """(SimParams of the start, where the mode was read, names left to defaults)."""
    if attrs.get("backend") == "sim" and "sim_start" in attrs:     # the simulator's own
        return ({"start": str(attrs["sim_start"]), "poll_us": float(attrs["sim_poll_us"]),
                 "poll_cpu_us": float(attrs["sim_poll_cpu_us"])}, "the simulated run's", [])
    mode, source = _start_option(attrs)
    if mode == "barrier":
        return {"start": "poll", "poll_us": 0.0, "poll_cpu_us": 0.0}, source, []
    if mode == "poll":
        return {"start": "poll", "poll_us": POLL_US}, source, ["poll_us", "poll_cpu_us"]
    raise ConfigError("dataset.start", mode, "barrier | poll (abt-iozone's --start)")


def sched_quantum_us(attrs) -> float | None:
    """The guest's minimum slice (us) from its sched preset, None without one."""
    name = str(attrs.get("kernel_sched", "")).strip()
    if not name.startswith("cfs34"):
        return None
    values = dict(sched_settings(name))
    return int(values["min_granularity_ns"]) / 1e3


def shared_stream(attrs) -> bool:
    """The guest's vCPUs share one instruction stream (qemu -icount, one host thread)."""
    text = str(attrs.get("icount", ""))
    return str(attrs.get("clock", "")) == "virtual" and bool(re.search(r"shared by all \d+ vCPU", text))


def _sorted_commits(commits):
    s = np.asarray(commits.get("start", []), np.int64)
    order = np.argsort(s, kind="stable")
    return {k: np.asarray(v)[order] for k, v in commits.items() if np.size(v) == s.size}


def wake_lag_us(ops, commits, flush_us) -> float:
    """us from the first fsync's start to the first commit's start after it, less
    flush_us (its data write-back on the device); nan without both."""
    f = ops["t_start_ns"][ops["op"] == Op.FSYNC]
    s, _ = commit_table(commits)
    if not f.size or not s.size:
        return float("nan")
    k = np.searchsorted(s, f.min())
    return float(s[k] - f.min()) * 1e-3 - flush_us if k < s.size else float("nan")


def lock_step_us(commits) -> np.ndarray:
    """jbd2's start -> locking step of each commit (us at the run's clock)."""
    c = _sorted_commits(commits)
    if "locking" not in c or not c["locking"].size:
        return np.zeros(0)
    d = (c["locking"] - c["start"]) * 1e-3
    return d[c["locking"] > 0]


def journal_params(seen, f_ref, nonscaling, quantum_us, flush_us) -> tuple[dict, dict]:
    """(commit_cpu_us and jbd2_front where the runs tell them, evidence for the file).
    seen: [(ops, commits, freq_ghz)] of the fitted runs."""
    out, note = {}, {}
    cpu = [lock_step_us(c) / cpu_scale(f, f_ref, nonscaling) for _, c, f in seen]
    cpu = np.concatenate(cpu) if cpu else np.zeros(0)
    # a 0 is no measurement (jbd2 is a task that needs a core: the simulator's own records
    # stamp locking at start), and would let the simulated journal thread skip the queue
    if cpu.size and np.median(cpu) > 0:
        out["commit_cpu_us"] = float(np.median(cpu))
    lags = {}
    for ops, com, f in seen:
        lags.setdefault(f, []).append(wake_lag_us(ops, com, flush_us))
    lag = {f: float(np.nanmedian(v)) for f, v in lags.items() if np.isfinite(v).any()}
    if lag and quantum_us:
        note["wake_lag_ms"] = [round(lag[f] / 1e3, 3) for f in sorted(lag, key=lambda x: x or 0)]
        note["wake_lag_freq_ghz"] = [float(f or 0) for f in sorted(lag, key=lambda x: x or 0)]
        # a journal thread run at the front waits at most for a running slice to end
        out["jbd2_front"] = bool(min(lag.values()) <= quantum_us)
    return out, note
