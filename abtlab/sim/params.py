"""Simulator parameters: workload, CPU (scaled by frequency), device presets, variation.

CPU costs are given at the reference frequency f_ref; at frequency f a phase costs
    c(f) = c_ref * (nonscaling + (1 - nonscaling) * f_ref / f)
(`nonscaling` is the share of a CPU phase bound by memory or uncore, which does not
speed up with the core clock). Device phases (data flush, journal commit, inode write)
do not scale with f. The scheduler's time slice does not either: by default it follows
CFS, max(sched_latency / (N / cores), min_granularity), both scaled by 1 + log2(cores) as Linux
does. How a thread's CPU work per op compares with these f-independent times is what
decides how many threads one commit batches. With `dilation` (frequency emulated by
spinning after each call, as abtlab's emulated mode does) an op's CPU runs at f_ref inside
the call and the thread then spins the rest: the same CPU time, but an fsync's
write-back starts as early as at f_ref, and its dilation is spun after the commit.
IOzone's start (`start="poll"`): each thread wakes at its own poll timer after the
release (`poll_us`) and reads the flag (`poll_cpu_us`), so the release spread has a
fixed part. The journal thread (`commit_cpu_us` > 0) needs CPU to start a commit and
competes for the cores like any thread; it is a kernel thread, so dilation leaves its
CPU at f_ref. The devices and their sources are abtlab.sim.devices.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .. import policies
from ..errors import ConfigError
from . import state as K
from .devices import DEVICES

__all__ = ["SimParams", "DEVICES", "DISTRIBUTIONS", "DATA_MODES", "STARTS", "POLL_US", "make",
           "vector", "load_params"]

STARTS = ("barrier", "poll")
# IOzone's children poll the start flag with select() and a 1 us timeout (iozone.c,
# Poll(1)); Linux rounds a user thread's timer up by its timer slack, 50 us by default
# (prctl(2), PR_SET_TIMERSLACK; hrtimer slack of a SCHED_OTHER task): a poll every ~51 us
POLL_US = 51.0

# Device presets (us), chosen from the hardware, not from the effect they produce; the
# table, with each number's source, is abtlab.sim.devices.
DATA_MODES = ("fsync", "commit")
DIOREAD_MODES = ("lock", "nolock")
DISTRIBUTIONS = ("lognormal", "gamma", "fixed")
WORKLOADS = ("iozone", "metarates")


@dataclass(frozen=True)
class SimParams:
    workload: str = "iozone"
    policy: str = "ext4"
    threads: int = 64
    cores: int = 4
    file_size: int = 128 * 1024
    record_size: int = 32 * 1024
    files: int = 1
    fsync: bool = True
    freq_ghz: float = 3.3
    f_ref_ghz: float = 3.3
    nonscaling: float = 0.1
    quantum_us: float | None = None        # None: CFS-like, see module doc
    open_us: float = 20.0                  # CPU costs at f_ref
    write_fixed_us: float = 4.0            # a 32 KiB write: ~30 us at 3.3 GHz, ~58 at 1.6
    write_us_per_kib: float = 0.8
    fsync_cpu_us: float = 8.0
    close_us: float = 4.0
    spawn_us: float = 25.0                 # creating one thread (serial, in the main thread)
    device: str = "loop"
    device_overrides: dict = field(default_factory=dict, hash=False)
    queue_depth: int = 1                   # requests the device serves at once: 1 = one FIFO
                                           # queue for data flushes and commits
    shared_transfer: bool = False          # the requests in flight share the device's rate
                                           # (their per-KiB parts go one after another)
    blocks_per_handle: float = 1.0
    cpu_dist: str = "lognormal"
    cpu_cv: float = 0.1
    dev_dist: str = "lognormal"
    dev_cv: float = 0.2
    wake_front: bool = True
    adaptive_k: float = 2.0
    ewma_alpha: float = 0.25
    commit_lock_us: float | None = None    # None: writes block for the whole commit (Chang et al., MASCOTS 2014)
    data_flush: str = "fsync"              # fsync: each fsync writes its own data (delalloc);
                                           # commit: the commit writes its members' data
    fsync_allocates: bool = True           # data_flush=fsync: the write-back allocates blocks in
                                           # the running transaction, which the fsync then commits
    dioread: str = "lock"                  # lock: blocks allocated written when the write-back
                                           # starts (Linux 3.4's default); nolock: unwritten
                                           # extents converted when the I/O completes, in the
                                           # transaction running then (the default since 5.6)
    shadow_wait: bool = False              # writes wait while the commit logs the metadata
                                           # they dirty: until its end less commit_record_us
    dilation: bool = False                 # frequency by CPU-time dilation (abtlab's emulated
                                           # mode): an op runs at f_ref inside the call and the
                                           # thread spins the rest after it returns, so an
                                           # fsync starts its write-back at f_ref's speed
    start: str = "barrier"                 # barrier: released together (a pthread barrier);
                                           # poll: IOzone's start, each thread at its poll timer
    poll_us: float = POLL_US               # poll=IOzone: select(1 us) under the timer slack
    poll_cpu_us: float = 2.0               # CPU to return from select() and read the flag
                                           # (an estimate), at f_ref
    commit_cpu_us: float = 0.0             # CPU the journal thread needs to start a commit,
                                           # at f_ref (0: it starts at once, on no core)
    jbd2_front: bool = True                # the woken journal thread goes to the run queue's
                                           # front (false: behind the runnable writers)

    def device_params(self) -> dict:
        return {**DEVICES[self.device], **self.device_overrides}

    def scale(self) -> float:
        return self.nonscaling + (1 - self.nonscaling) * self.f_ref_ghz / self.freq_ghz

    def quantum(self) -> float:
        if self.quantum_us is not None:
            return float(self.quantum_us)
        factor = 1 + math.log2(self.cores)            # per-CPU run queues of threads/cores
        return max(6000.0 * factor * self.cores / self.threads, 750.0 * factor)

    def as_attrs(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k != "device_overrides"}
        d.update(self.device_params())
        d["quantum_us"] = self.quantum()
        return {f"sim_{k}": (str(v) if v is None or isinstance(v, bool) else v) for k, v in d.items()}


def _need(cond, name, given, accepted):
    if not cond:
        raise ConfigError(name, given, accepted)


def _validate(p: SimParams) -> None:
    _need(p.workload in WORKLOADS, "workload", p.workload, " | ".join(WORKLOADS))
    _need(isinstance(p.queue_depth, (int, np.integer)) and 1 <= p.queue_depth <= K.MAX_QDEPTH,
          "queue_depth", p.queue_depth, f"an integer from 1 (one FIFO queue) to {K.MAX_QDEPTH}")
    for name in ("threads", "cores", "files"):
        v = getattr(p, name)
        _need(isinstance(v, (int, np.integer)) and v >= 1, name, v, "an integer >= 1")
    for name in ("file_size", "record_size"):
        v = getattr(p, name)
        _need(isinstance(v, (int, np.integer)) and v >= 1, name, v, "a size in bytes >= 1")
    _need(p.record_size <= p.file_size, "record_size", p.record_size,
          f"<= file_size ({p.file_size})")
    for name in ("freq_ghz", "f_ref_ghz"):
        v = getattr(p, name)
        _need(isinstance(v, (int, float)) and 0 < v < 100, name, v, "a frequency in GHz > 0")
    _need(0 <= p.nonscaling <= 1, "nonscaling", p.nonscaling, "a fraction in [0, 1]")
    _need(p.quantum_us is None or p.quantum_us > 0, "quantum_us", p.quantum_us, "> 0 or None")
    _need(p.commit_lock_us is None or (isinstance(p.commit_lock_us, (int, float))
                                       and p.commit_lock_us >= 0),
          "commit_lock_us", p.commit_lock_us, "a number of us >= 0, or None (whole commit)")
    _need(p.data_flush in DATA_MODES, "data_flush", p.data_flush, " | ".join(DATA_MODES))
    _need(p.dioread in DIOREAD_MODES, "dioread", p.dioread, " | ".join(DIOREAD_MODES))
    _need(not p.dilation or p.freq_ghz <= p.f_ref_ghz, "freq_ghz", p.freq_ghz,
          f"<= f_ref_ghz ({p.f_ref_ghz}) with dilation=true (dilation only slows the CPU)")
    _need(p.start in STARTS, "start", p.start, " | ".join(STARTS))
    for name in ("fsync", "wake_front", "fsync_allocates", "dilation", "shared_transfer",
                 "shadow_wait", "jbd2_front"):
        v = getattr(p, name)
        _need(isinstance(v, (bool, np.bool_)), name, v, "true or false")
    for name in ("open_us", "write_fixed_us", "write_us_per_kib", "fsync_cpu_us", "close_us",
                 "spawn_us", "blocks_per_handle", "cpu_cv", "dev_cv", "adaptive_k", "poll_us",
                 "poll_cpu_us", "commit_cpu_us"):
        v = getattr(p, name)
        _need(isinstance(v, (int, float)) and v >= 0 and math.isfinite(v), name, v, "a number >= 0")
    _need(0 < p.ewma_alpha <= 1, "ewma_alpha", p.ewma_alpha, "a weight in (0, 1]")
    _need(p.device in DEVICES, "device", p.device, " | ".join(DEVICES))
    for k, v in p.device_overrides.items():
        _need(k in DEVICES["loop"], f"device_overrides.{k}", k, ", ".join(DEVICES["loop"]))
        _need(isinstance(v, (int, float)) and v >= 0, f"device_overrides.{k}", v, "a number >= 0")
    for name in ("cpu_dist", "dev_dist"):
        v = getattr(p, name)
        _need(v in DISTRIBUTIONS, name, v, " | ".join(DISTRIBUTIONS))


def load_params(src) -> dict:
    """SimParams keywords from a TOML file (as `abtlab calibrate` writes) or a dict.
    A [device_overrides] table overrides the device preset's fields."""
    if isinstance(src, dict):
        data = dict(src)
    else:
        # deferred: tomllib (~10 ms) only for a params file; `abtlab run sim` does without
        from ..data.tomlfile import read_toml
        data = read_toml(src, "params", "a TOML file of SimParams fields, or a dict")
    data.pop("calibration", None)          # calibrate()'s provenance table, not a parameter
    return data


def make(params=None, **kw) -> SimParams:
    """SimParams from keywords, checked; ConfigError names the bad field.
    params: a TOML path or dict of fields (e.g. from calibration); keywords win."""
    if params is not None:
        base = load_params(params)
        dev = {**base.get("device_overrides", {}), **kw.get("device_overrides", {})}
        kw = {**base, **kw, "device_overrides": dev}
    known = set(SimParams.__dataclass_fields__)
    for k in kw:
        _need(k in known, k, kw[k], "one of " + ", ".join(sorted(known)))
    if "policy" in kw:
        kw["policy"] = policies.parse(kw["policy"]).label
    p = replace(SimParams(), **kw)
    _validate(p)
    return p


def vector(p: SimParams) -> np.ndarray:
    """The kernel's parameter vector (costs at the simulated frequency, in us)."""
    pol = policies.parse(p.policy)
    dev = p.device_params()
    s = p.scale()
    v = np.zeros(K.NPARAM)
    v[K.I_QUANTUM] = p.quantum()
    v[K.I_C_OPEN], v[K.I_C_CLOSE] = p.open_us * s, p.close_us * s
    # by dilation only the order within an op changes, and only fsync blocks after its CPU
    v[K.I_C_FSYNC] = p.fsync_cpu_us * (1.0 if p.dilation else s)
    v[K.I_FSYNC_SPIN] = p.fsync_cpu_us * (s - 1.0) if p.dilation else 0.0
    v[K.I_C_WRITE] = (p.write_fixed_us + p.write_us_per_kib * p.record_size / 1024) * s
    v[K.I_FLUSH_FIXED] = dev["flush_fixed_us"]
    v[K.I_FLUSH_PER_BYTE] = dev["flush_us_per_kib"] / 1024
    v[K.I_COMMIT_FIXED], v[K.I_COMMIT_PER_BLOCK] = dev["commit_fixed_us"], dev["commit_us_per_block"]
    v[K.I_COMMIT_PER_FILE] = dev["commit_us_per_file"]
    v[K.I_INODE_WRITE] = dev["inode_write_us"]
    v[K.I_BLOCKS_PER_HANDLE] = p.blocks_per_handle
    v[K.I_POLICY], v[K.I_WINDOW], v[K.I_KPARAM] = _policy_code(pol)
    v[K.I_MAX_RESETS] = pol.params.get("max_resets", 0)
    v[K.I_MAX_AGE] = pol.params.get("max_age_us", 0.0)
    v[K.I_WAKE_FRONT] = 1.0 if p.wake_front else 0.0
    v[K.I_JBD2_FRONT] = 1.0 if p.jbd2_front else 0.0
    v[K.I_ALPHA] = p.ewma_alpha
    v[K.I_D0] = dev["commit_fixed_us"]       # first estimate of a commit's duration
    v[K.I_RECORD_BYTES] = p.record_size
    v[K.I_CORES] = p.cores
    v[K.I_LOCK] = -1.0 if p.commit_lock_us is None else p.commit_lock_us
    v[K.I_DATA] = DATA_MODES.index(p.data_flush)
    v[K.I_FSYNC_ALLOC] = 1.0 if p.fsync_allocates else 0.0
    v[K.I_QDEPTH] = p.queue_depth
    v[K.I_SHARED_XFER] = 1.0 if p.shared_transfer else 0.0
    v[K.I_SHADOW] = dev["commit_record_us"] if p.shadow_wait else -1.0
    v[K.I_DIOREAD] = DIOREAD_MODES.index(p.dioread)
    if pol.tunes_window:
        v[K.I_KPARAM] = p.adaptive_k
    v[K.I_CACHE] = dev["cache_kib"] * 1024
    v[K.I_MEDIA_PER_BYTE] = dev["media_us_per_kib"] / 1024
    v[K.I_DESTAGE_FILE], v[K.I_DESTAGE_FIXED] = dev["destage_us_per_file"], dev["destage_fixed_us"]
    # the journal thread is a kernel thread: dilation (spinning in the workload) leaves it be
    v[K.I_C_COMMIT] = p.commit_cpu_us * (1.0 if p.dilation else s)
    v[K.I_POLL] = 1.0 if p.start == "poll" else 0.0
    v[K.I_POLL_US], v[K.I_C_POLL] = p.poll_us, p.poll_cpu_us * s
    return v


def _policy_code(pol):
    """(the simulator's policy code, its window or min_us, max_us): the policy's own answer."""
    if pol.sim_mode is None:
        raise ConfigError("policy", pol.label, "a policy the simulator models: ext4, nojc, "
                          "delayjc (a window or adaptive), batch")
    return (POLICY_MODES[pol.sim_mode], *pol.sim_window())


# a policy's sim_mode -> the compiled kernel's code for it (abtlab.sim.state)
POLICY_MODES = {"ext4": K.POL_EXT4, "nojc": K.POL_NOJC, "fixed": K.POL_FIXED,
                "adaptive": K.POL_ADAPT, "batch": K.POL_BATCH}
