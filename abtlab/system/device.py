"""Device profiles: make the scratch loop device behave like a slower disk.

The loop device here completes a flush in about a millisecond; the paper's 7200 rpm disk
takes several, and the ABT slowdown depends on how long a journal commit lasts. The
kernel's block throttling limits IOPS and bytes/s per device:

* cgroup v1: `blkio.throttle.{read,write}_{iops,bps}_device` of the ROOT blkio cgroup,
  so every task's bios are counted, kjournald2's and the loop workers' included.
* cgroup v2 (only where v1 blkio is absent): the root cgroup has no `io.max`, so a child
  cgroup `abtlab-<pid>-<n>` gets it and the workload must be moved into
  `DeviceThrottle.cgroup` (kernel threads such as kjournald2 stay unthrottled there).

Profile values and where they come from:

* `hdd7200`: a 7200 rpm disk turns in 8.33 ms, so the average rotational latency is
  4.17 ms; desktop datasheets of the paper's class (e.g. Seagate Barracuda 7200.12,
  250-500 GB) give an average seek of about 8.5 ms and ~125 MB/s sustained transfer.
  Fully random I/O: 1 / (4.17 + 8.5) ms = ~79 IOPS; a scratch image spans a narrow band
  of the platter, where short seeks (~1-2 ms) give ~160 IOPS. We take 120 IOPS (the
  middle of the usual 75-150 range) and 125 MB/s in each direction.
* `ssd-sata`: Samsung 860 EVO datasheet: 550 MB/s sequential read, 520 MB/s write;
  4 KiB random at queue depth 1 (how fsync-bound threads use it): 10,000 read IOPS,
  42,000 write IOPS.
* `none`: no limits (the loop device as it is).

Caveats, measured on the 6.18 VM (tests/fixtures/device_probe.py):
* The limit is an average rate: blk-throttle grants iops x (time since the slice began),
  and the slice grows while a bio waits. The whole debt of a commit therefore lands on
  the next fsync's data write-back, and the commit's own journal writes then pass in the
  budget that wait accrued. 4 KiB write + fsync, ext4 data=ordered: `none` 0.4-1.2 ms;
  `wiops=20` 400-500 ms per fsync, yet jbd2 commits (start -> end) stay at 0.6-2.5 ms,
  as without limits. So profiles slow fsync, not the commit window itself.
* bios are counted before merging and jbd2 submits each journal block as its own bio,
  so a commit of k blocks costs ~k IOs where a disk writes one sequential run: `hdd7200`
  fsyncs take ~0.1 s here, slower than a real 7200 rpm disk (typically 10-30 ms). Use
  explicit `iops=` limits to calibrate.
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

__all__ = ["Profile", "PROFILES", "parse_profile", "DeviceThrottle", "throttle_backend"]

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
    """Limits for one device; 0 means unlimited. Bandwidth in bytes/s."""
    name: str
    read_iops: int = 0
    write_iops: int = 0
    read_bps: int = 0
    write_bps: int = 0
    source: str = ""

    def limits(self) -> dict:
        return {k: getattr(self, k) for k in _V1_FILES if getattr(self, k)}


PROFILES = {
    "none": Profile("none", source="no throttling: the loop device as it is"),
    "hdd7200": Profile("hdd7200", 120, 120, 125_000_000, 125_000_000,
                       "7200 rpm HDD: 4.17 ms rotational latency + ~8.5 ms average seek "
                       "(Barracuda 7200.12 class datasheets): 79-160 IOPS -> 120; "
                       "~125 MB/s sustained"),
    "ssd-sata": Profile("ssd-sata", 10_000, 42_000, 550_000_000, 520_000_000,
                        "Samsung 860 EVO datasheet: 4 KiB QD1 random 10k read / 42k write "
                        "IOPS; 550 MB/s read, 520 MB/s write sequential"),
}

_ACCEPTED = ("'none', 'hdd7200', 'ssd-sata', or limits like 'iops=120,bps=120M' "
             "(keys iops, bps, riops, wiops, rbps, wbps; bps suffixes K, M, G, Ki, Mi, Gi)")
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
    limits = {}
    for item in spec.split(","):
        key, eq, value = item.strip().partition("=")
        key = key.strip().lower()
        if not eq or key not in _KEYS:
            raise ConfigError("device", text, _ACCEPTED)
        for field in _KEYS[key]:
            limits[field] = _number(key, value, text)
    return Profile(spec, **limits, source="explicit limits")


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


class DeviceThrottle:
    """Apply a profile's limits to one block device; removed on every exit path."""

    def __init__(self, profile, major_minor: str, v1_root=V1_ROOT, v2_root=V2_ROOT):
        self.profile = parse_profile(profile)
        if not isinstance(major_minor, str) or not re.fullmatch(r"\d+:\d+", major_minor):
            raise ConfigError("major_minor", major_minor, "'MAJOR:MINOR', e.g. '7:0'")
        self.major_minor = major_minor
        self.v1_root, self.v2_root = Path(v1_root), Path(v2_root)
        self.backend = None
        self.cgroup: Path | None = None  # v2 only: move the workload here
        self._tokens: list[int] = []

    def __enter__(self):
        limits = self.profile.limits()
        if not limits:
            return self
        self.backend, why = throttle_backend(self.v1_root, self.v2_root)
        try:
            if self.backend == "v1":
                self._apply_v1(limits)
            elif self.backend == "v2":
                self._apply_v2(limits)
            else:
                raise UnavailableError(f"device profile {self.profile.name!r}: {why}")
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc):
        self._remove()
        return False

    def _remove(self):
        while self._tokens:
            cleanup.pop(self._tokens.pop())

    def _apply_v1(self, limits):
        for field, value in limits.items():
            path = self.v1_root / _V1_FILES[field]
            before = _v1_current(path, self.major_minor)
            if before:  # e.g. left by a killed process: kept, restored, but said
                warnings.warn(f"{path.name} already limits {self.major_minor} to {before}",
                              RuntimeWarning)
            undo = lambda p=path, b=before: write(p, f"{self.major_minor} {b}")
            self._tokens.append(cleanup.push(undo, f"restore {path.name} {self.major_minor}"))
            write(path, f"{self.major_minor} {value}")

    def _apply_v2(self, limits):
        cg = self.v2_root / f"abtlab-{os.getpid()}-{next(_counter)}"
        (self.v2_root / "cgroup.subtree_control").write_text("+io")
        cg.mkdir()
        self.cgroup = cg
        self._tokens.append(cleanup.push(lambda: _remove_v2(cg, self.v2_root), f"remove {cg}"))
        line = " ".join(f"{_V2_KEYS[f]}={v}" for f, v in limits.items())
        write(cg / "io.max", f"{self.major_minor} {line}")

    def describe(self) -> dict:
        """Attributes for a run dataset: the profile, its limits and how they were set."""
        p = asdict(self.profile)
        attrs = {"device_profile": p.pop("name"), "device_profile_source": p.pop("source")}
        attrs.update({f"device_{k}": v for k, v in p.items()})
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
