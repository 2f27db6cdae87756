"""Device profiles: make the scratch loop device behave like a slower disk.

The loop device here completes a flush in about a millisecond; the paper's 7200 rpm disk
takes several, and the ABT slowdown depends on how long a journal commit lasts. A
profile is one of two kinds:

* `kind="latency"`: an emulated device. The image lives on `abt-slowdisk`, a FUSE
  passthrough that charges each request a device model's cost (abtlab.system.slowdisk):
  seek + rotational latency unless the request continues the previous one, transfer at
  a bandwidth, and a cost per cache flush (the loop device turns REQ_PREFLUSH and FUA
  into an fsync of the image). Journal commits then last what the model says.
* `kind="throttle"`: the kernel's block throttling limits IOPS and bytes/s per device:
  - cgroup v1: `blkio.throttle.{read,write}_{iops,bps}_device` of the ROOT blkio cgroup,
    so every task's bios are counted, kjournald2's and the loop workers' included.
  - cgroup v2 (only where v1 blkio is absent): the root cgroup has no `io.max`, so a
    child cgroup `abtlab-<pid>-<n>` gets it and the workload must be moved into
    `DeviceThrottle.cgroup` (kernel threads such as kjournald2 stay unthrottled there).

Profile values and where they come from:

* `hdd7200` (latency, the paper's disk): on the host, the drive model of
  backends/include/abt_disk.h (`disk="hdd7200"`): a Seagate Barracuda 7200.12 250 GB with
  its 8 MiB write cache on, seek by distance, rotation from the clock, zoned transfer,
  FLUSH paying for what the cache holds; parameters and sources in docs/device.md.
  The 6.1 guest's null_blk runs the same model (abtlab.machines.guest_disk). Its average
  figures stay in the legacy fields, which the 3.4.2 guest's brd still uses: 8.5 ms
  average seek (Barracuda 7200.12 product manual) + 4.17 ms half a turn at 7200 rpm =
  12.67 ms per request and per flush, transfer at 125 MB/s.
* `hdd7200-nocache`: the same drive with its write cache off (each write reaches the
  platter before it completes; a flush costs only the command).
* `fixed:<time>` (e.g. `fixed:12.67ms`): every request and flush costs exactly that,
  whatever its size: what `hdd7200` meant in the guests before the model, for comparison.
* `ssd-sata` (latency): Samsung 860 EVO datasheet: 520 MB/s sequential write; 4 KiB QD1
  random 42k write / 10k read IOPS, i.e. 24-100 us per request -> 60 us; cache flush
  1 ms, an estimate for consumer SATA drives without power-loss protection (their
  fsync rates vary widely between drives). On the host, the same model (`disk="ssd-sata"`).
* `hdd7200-throttle`, `ssd-sata-throttle`: the throttle kind with the same sources:
  1 / (4.17 + 8.5) ms = ~79 IOPS fully random, ~160 IOPS with the short seeks of a
  narrow band -> 120 IOPS, 125 MB/s; SSD: 10k read / 42k write IOPS, 550/520 MB/s.
* `none`: the loop device as it is.

Caveats of the throttle kind, measured on the 6.18 VM (`python -m benchmarks.device`):
* The limit is an average rate: blk-throttle grants iops x (time since the slice began),
  and the slice grows while a bio waits. The whole debt of a commit therefore lands on
  the next fsync's data write-back, and the commit's own journal writes then pass in the
  budget that wait accrued. 4 KiB write + fsync, ext4 data=ordered: `none` 0.4-1.2 ms;
  `wiops=20` 400-500 ms per fsync, yet jbd2 commits (start -> end) stay at 0.6-2.5 ms,
  as without limits. So throttle profiles slow fsync, not the commit window itself:
  that is what the latency kind is for.
* bios are counted before merging and jbd2 submits each journal block as its own bio,
  so a commit of k blocks costs ~k IOs where a disk writes one sequential run.
"""
from __future__ import annotations

import itertools
import os
import re
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigError, UnavailableError
from . import cleanup
from ._shell import read, write

__all__ = ["Profile", "PROFILES", "parse_profile", "DeviceThrottle", "throttle_backend",
           "LATENCY_KEYS"]

V1_ROOT = Path("/sys/fs/cgroup/blkio")
V2_ROOT = Path("/sys/fs/cgroup")
_V1_FILES = {"read_iops": "blkio.throttle.read_iops_device",
             "write_iops": "blkio.throttle.write_iops_device",
             "read_bps": "blkio.throttle.read_bps_device",
             "write_bps": "blkio.throttle.write_bps_device"}
_V2_KEYS = {"read_iops": "riops", "write_iops": "wiops", "read_bps": "rbps", "write_bps": "wbps"}
_counter = itertools.count()


@dataclass(frozen=True)
class Profile:
    """One device. Throttle kind: limits, 0 = unlimited, bandwidth in bytes/s.
    Latency kind: the abt-slowdisk model (us, MB/s, bytes)."""
    name: str
    read_iops: int = 0
    write_iops: int = 0
    read_bps: int = 0
    write_bps: int = 0
    source: str = ""
    kind: str = "throttle"
    seek_us: int = 0
    rotation_us: int = 0
    bw_mbps: int = 0
    flush_us: int = 0
    idle_us: int = 0
    sequential_window: int = 0
    disk: str = ""       # a profile of abt_disk.h: the host disk runs that model
    fixed_ns: int = 0    # disk="fixed": the cost of every request

    @property
    def label(self) -> str:
        """The spec it was parsed from (a name, or explicit limits as written)."""
        return self.name

    def __str__(self) -> str:   # a dataset coordinate, a stored point
        return self.name

    def limits(self) -> dict:
        """Throttle limits to write (none for a latency profile)."""
        if self.kind != "throttle":
            return {}
        return {k: getattr(self, k) for k in _V1_FILES if getattr(self, k)}

    def latency(self) -> dict:
        """The latency model's parameters ({} for a throttle profile)."""
        if self.kind != "latency":
            return {}
        if self.disk:
            return {"disk": self.disk, **({"fixed_ns": self.fixed_ns} if self.fixed_ns else {})}
        return {k: getattr(self, k) for k in
                ("seek_us", "rotation_us", "bw_mbps", "flush_us", "idle_us",
                 "sequential_window")}


_HDD = "Seagate Barracuda 7200.12 product manual: 8.5 ms average seek, 125 MB/s sustained; "
_SSD = "Samsung 860 EVO datasheet: 520 MB/s sequential write, 4 KiB QD1 10k read / 42k write IOPS"
SEQUENTIAL_WINDOW = 64 * 1024  # a forward skip this short passes under the head: transfer cost
IDLE_US = 1000  # a continuing request after a longer idle gap waits for the platter to turn

PROFILES = {
    "none": Profile("none", source="no throttling: the loop device as it is"),
    "hdd7200": Profile("hdd7200", kind="latency", seek_us=8500, rotation_us=4167, bw_mbps=125,
                       flush_us=4167, idle_us=IDLE_US, sequential_window=SEQUENTIAL_WINDOW,
                       disk="hdd7200",
                       source=_HDD + "7200 rpm -> 4.17 ms average rotational latency; "
                       "host: the abt_disk.h model, 8 MiB write cache on (docs/device.md)"),
    "hdd7200-nocache": Profile(
        "hdd7200-nocache", kind="latency", seek_us=8500, rotation_us=4167, bw_mbps=125,
        flush_us=0, idle_us=IDLE_US, sequential_window=SEQUENTIAL_WINDOW,
        disk="hdd7200-nocache",
        source=_HDD + "7200 rpm; host: the abt_disk.h model with its write cache off"),
    "ssd-sata": Profile("ssd-sata", kind="latency", seek_us=60, rotation_us=0, bw_mbps=520,
                        flush_us=1000, idle_us=IDLE_US, sequential_window=SEQUENTIAL_WINDOW,
                        disk="ssd-sata",
                        source=_SSD + " -> 24-100 us per request, 60 us; flush 1 ms "
                        "(estimate for consumer SATA SSDs without power-loss protection)"),
    "hdd7200-throttle": Profile(
        "hdd7200-throttle", 120, 120, 125_000_000, 125_000_000,
        "7200 rpm HDD: 4.17 ms rotational latency + ~8.5 ms average seek "
        "(Barracuda 7200.12 class datasheets): 79-160 IOPS -> 120; ~125 MB/s sustained"),
    "ssd-sata-throttle": Profile(
        "ssd-sata-throttle", 10_000, 42_000, 550_000_000, 520_000_000,
        "Samsung 860 EVO datasheet: 4 KiB QD1 random 10k read / 42k write IOPS; "
        "550 MB/s read, 520 MB/s write sequential"),
}

_ACCEPTED = ("'none', 'hdd7200', 'hdd7200-nocache', 'ssd-sata', 'hdd7200-throttle', "
             "'ssd-sata-throttle', a fixed cost per request like 'fixed:12.67ms' (us or ms, "
             "from 1us to 10000ms), "
             "limits like 'iops=120,bps=120M' (keys iops, bps, riops, wiops, rbps, wbps; bps "
             "suffixes K, M, G, Ki, Mi, Gi), or a latency model like "
             "'latency:seek=8500,rot=4167,bw=125,flush=4167' (seek, rot, flush in us or with "
             "suffix us/ms; bw in MB/s; optional idle=US (default 1000) and window=BYTES (default "
             "64Ki), suffixes K, M, Ki, Mi)")
# latency:KEY -> (Profile field, upper bound); seek, rot, flush and bw are required.
LATENCY_KEYS = {"seek": ("seek_us", 10**6), "rot": ("rotation_us", 10**6),
                "bw": ("bw_mbps", 10**5), "flush": ("flush_us", 10**6),
                "idle": ("idle_us", 10**7), "window": ("sequential_window", 2**30)}
_OPTIONAL = ("idle", "window")
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
_KEYS = {"iops": ("read_iops", "write_iops"), "bps": ("read_bps", "write_bps"),
         "riops": ("read_iops",), "wiops": ("write_iops",),
         "rbps": ("read_bps",), "wbps": ("write_bps",)}


def _number(key, value, text):
    m = re.fullmatch(r"(\d+)([KMG]i?)?", value.strip(), re.IGNORECASE)
    if not m or (m.group(2) and "bps" not in key):
        raise ConfigError("device", text, _ACCEPTED)
    n = int(m.group(1)) * _SUFFIX[(m.group(2) or "").lower()]
    if n <= 0:
        raise ConfigError("device", text, "limits above 0 (use 'none' for no limit)")
    return n


def parse_profile(text) -> Profile:
    """A named profile or explicit limits -> Profile; ConfigError('device') otherwise."""
    if isinstance(text, Profile):
        return text
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("device", text, _ACCEPTED)
    spec = text.strip()
    if spec in PROFILES:
        return PROFILES[spec]
    if spec.lower().startswith("latency:"):
        return _parse_latency(spec, text)
    if spec.lower().startswith("fixed:"):
        return _parse_fixed(spec, text)
    limits = {}
    for item in spec.split(","):
        key, eq, value = item.strip().partition("=")
        key = key.strip().lower()
        if not eq or key not in _KEYS:
            raise ConfigError("device", text, _ACCEPTED)
        for field in _KEYS[key]:
            limits[field] = _number(key, value, text)
    return Profile(spec, **limits, source="explicit limits")


def _latency_value(key, value, text):
    """One 'key=value' of a latency spec -> (Profile field, int); ConfigError('device')."""
    field, hi = LATENCY_KEYS[key]
    v, n = value.strip().lower(), None
    if key == "window":
        m = re.fullmatch(r"(\d+)([km]i?)?", v, re.ASCII)
        n = int(m.group(1)) * _SUFFIX[m.group(2) or ""] if m else None
    elif key == "bw":
        n = int(v) if re.fullmatch(r"\d+", v, re.ASCII) else None
    elif m := re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms)?", v, re.ASCII):
        n = round(float(m.group(1)) * (1000 if m.group(2) == "ms" else 1))
    low = 1 if key == "bw" else 0
    if n is None or not low <= n <= hi:
        raise ConfigError("device", text, f"{key}= from {low} to {hi} ({field}); " + _ACCEPTED)
    return field, n


def _parse_fixed(spec, text) -> Profile:
    """'fixed:12.67ms' -> every request and flush costs 12.67 ms (disk model 'fixed')."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms)", spec.split(":", 1)[1].strip().lower(), re.ASCII)
    ns = round(float(m.group(1)) * (10**6 if m.group(2) == "ms" else 10**3)) if m else 0
    if not 1000 <= ns <= 10**10:
        raise ConfigError("device", text, "fixed:TIME with TIME from 1us to 10000ms, "
                          "e.g. 'fixed:12.67ms' or 'fixed:500us'")
    us = ns // 1000
    return Profile(spec, kind="latency", seek_us=us, rotation_us=0, bw_mbps=0, flush_us=us,
                   disk="fixed", fixed_ns=ns,
                   source=f"fixed latency: every request and flush {ns} ns, whatever its size")


def _parse_latency(spec, text) -> Profile:
    values = {"sequential_window": SEQUENTIAL_WINDOW, "idle_us": IDLE_US}
    for item in spec.split(":", 1)[1].split(","):
        key, eq, value = item.strip().partition("=")
        key = key.strip().lower()
        if not eq or key not in LATENCY_KEYS:
            raise ConfigError("device", text, _ACCEPTED)
        field, n = _latency_value(key, value, text)
        values[field] = n
    missing = [k for k, (f, _) in LATENCY_KEYS.items() if k not in _OPTIONAL and f not in values]
    if missing:
        raise ConfigError("device", text, f"latency: needs {', '.join(missing)}; " + _ACCEPTED)
    return Profile(spec, kind="latency", source="explicit latency model", **values)


def throttle_backend(v1_root=V1_ROOT, v2_root=V2_ROOT) -> tuple[str | None, str]:
    """('v1' | 'v2' | None, reason): which block throttling this machine offers."""
    if (Path(v1_root) / _V1_FILES["write_iops"]).exists():
        return "v1", f"cgroup v1 blkio throttling at {v1_root}"
    controllers = Path(v2_root) / "cgroup.controllers"
    if controllers.exists() and "io" in read(controllers).split():
        return "v2", f"cgroup v2 io.max under {v2_root}"
    return None, "no blkio.throttle.* (cgroup v1) and no io controller (cgroup v2)"


def _v1_current(path: Path, mm: str) -> int:
    for line in read(path).splitlines():
        dev, _, value = line.partition(" ")
        if dev == mm:
            return int(value)
    return 0


class DeviceThrottle(cleanup.Undoable):
    """Apply a profile's limits to one block device; removed on every exit path."""

    def __init__(self, profile, major_minor: str, v1_root=V1_ROOT, v2_root=V2_ROOT):
        self.profile = parse_profile(profile)
        if self.profile.kind != "throttle":
            raise ConfigError("device", self.profile.name,
                              "a throttle profile here (latency profiles run on SlowDisk)")
        if not isinstance(major_minor, str) or not re.fullmatch(r"\d+:\d+", major_minor):
            raise ConfigError("major_minor", major_minor, "'MAJOR:MINOR', e.g. '7:0'")
        self.major_minor = major_minor
        self.v1_root, self.v2_root = Path(v1_root), Path(v2_root)
        self.backend = None
        self.cgroup: Path | None = None  # v2 only: move the workload here
        self._tokens: list[int] = []

    def _setup(self):
        limits = self.profile.limits()
        if not limits:
            return
        self.backend, why = throttle_backend(self.v1_root, self.v2_root)
        if self.backend == "v1":
            self._apply_v1(limits)
        elif self.backend == "v2":
            self._apply_v2(limits)
        else:
            raise UnavailableError(f"device profile {self.profile.name!r}: {why}")

    def _apply_v1(self, limits):
        for field, value in limits.items():
            path = self.v1_root / _V1_FILES[field]
            before = _v1_current(path, self.major_minor)
            if before:  # e.g. left by a killed process: kept, restored, but said
                warnings.warn(f"{path.name} already limits {self.major_minor} to {before}",
                              RuntimeWarning)
            undo = lambda p=path, b=before: write(p, f"{self.major_minor} {b}")
            self._undo(undo, f"restore {path.name} {self.major_minor}")
            write(path, f"{self.major_minor} {value}")

    def _apply_v2(self, limits):
        cg = self.v2_root / f"abtlab-{os.getpid()}-{next(_counter)}"
        (self.v2_root / "cgroup.subtree_control").write_text("+io")
        cg.mkdir()
        self.cgroup = cg
        self._undo(lambda: _remove_v2(cg, self.v2_root), f"remove {cg}")
        line = " ".join(f"{_V2_KEYS[f]}={v}" for f, v in limits.items())
        write(cg / "io.max", f"{self.major_minor} {line}")

    def describe(self) -> dict:
        """Attributes for a run dataset: the profile, its limits and how they were set."""
        p = asdict(self.profile)
        attrs = {"device_profile": p.pop("name"), "device_profile_source": p.pop("source")}
        attrs.update({f"device_{k}": p[k] for k in _V1_FILES})
        attrs["device_throttle"] = {"v1": "cgroup v1 blkio.throttle (root cgroup)",
                                    "v2": "cgroup v2 io.max (child cgroup)"}.get(
                                        self.backend, "none")
        return attrs


def _remove_v2(cg: Path, v2_root: Path):
    # A cgroup can only be removed empty: hand any process left in it back to the parent.
    if not cg.exists():
        return
    for pid in read(cg / "cgroup.procs").split():
        write(v2_root / "cgroup.procs", pid)
    cg.rmdir()
