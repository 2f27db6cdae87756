"""The scratch disk inside the guest: a null_blk device whose latency is a guest timer.

In virtual time a disk on the host costs the guest nothing (and its host-side timing
would leak into the run), so the device profiles of abtlab.system.device are served by
null_blk inside the guest, configured through configfs per point:

* `memory_backed=1`: the data lives in guest RAM (the guest needs `mem` > the image);
* `irqmode=2` (hrtimer) with `completion_nsec`: every request (read, write, flush)
  completes that long after it was issued, on the guest's clock;
* `mbps`: a bandwidth cap (null_blk's own budget timer), the transfer part;
* `hw_queue_depth`: requests in service at once (1: one at a time, as a disk without a
  command queue; deeper queues complete their requests *in parallel*, which a real single
  actuator does not);
* `cache_size` (MiB): a volatile write cache, so the device advertises one and ext4's
  journal commits send cache flushes, each costing one request's completion time;
* `max_sectors` 2560: a request carries up to 1280 KiB, what Linux 6.1 lets a SATA disk
  take (BLK_DEF_MAX_SECTORS); null_blk's own default (255 sectors) split every 128 KiB
  write-back into two requests, each paying a positioning.

What each profile is (docs/device.md):
* `hdd7200`, `hdd7200-nocache`, `ssd-sata`: the drive model of backends/include/abt_disk.h,
  the one abt-slowdisk runs on the host, inside null_blk (backends/kernel/
  nullblk-disk.patch, configfs `disk_model`): each request goes to the model when it
  reaches the driver and completes when the model says, by an absolute hrtimer on the
  guest's clock (seek by distance, rotation from the clock, zoned transfer, the 8 MiB
  write cache, FLUSH and FUA). null_blk's own latency, cap and cache are off
  (`cache_size` 0; the patch advertises a volatile cache and FUA for the model);
* `fixed:<time>`: every request and flush that long, whatever its size, no bandwidth cap
  (the guest's `hdd7200` before the model was `fixed:12.67ms` with a 125 MB/s cap);
* `latency:...`: every request and flush the average positioning, seek + rotation, and
  transfer at its bandwidth (not the FUSE model's sequential window, idle rotation wait
  and elevator order);
* throttle profiles (`iops=`, `bps=`, `*-throttle`): completion time 1/IOPS per request and
  the bandwidth cap. `none`: completion at submission (irqmode=0), no cache.

Linux 3.4.2 (`kernel=3.4.2`) has no null_blk (3.13; configfs in 4.14): its disk is brd in
request mode (`Brd`, backends/kernel/k342/07-brd-rq-mode.patch, booted with `brd.rq_mode=1`):
one RAM disk made at boot as large as the batch's largest image, emptied per point
(`blockdev --flushbufs` frees its pages, which then read as zeros), mkfs told the point's
size. The named profiles run the same drive model as the 6.1 guest
(k342/09-brd-disk-model.patch, module parameter `disk_model`: writing it starts a fresh
drive each point; each request goes to the model when brd takes it and completes when the
model says, by an absolute hrtimer on the guest's clock; discards, which mkfs sends to brd
and a drive of the paper's class would not take, cost nothing). The others keep
`completion_nsec` and `mbps` (null_blk's bandwidth cap, ported: a budget of mbps MiB/s x
20 ms per 20 ms tick) as in the 6.1 guest; one request at a time (depth 1 only); a
volatile write cache and FUA always (flushes are requests even for `none`); requests of
at most 3.4's 1024 sectors (512 KiB, BLK_DEF_MAX_SECTORS), not 6.1's 2560.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..system.device import Profile, parse_profile

__all__ = ["NullBlk", "Brd", "for_profile", "GUEST_RESERVE_MB", "BRD_PARAMS"]

GUEST_RESERVE_MB = 384    # guest RAM left beside the memory-backed disk (kernel, tmpfs, workload)
CACHE_MB = 16             # volatile write cache of the latency profiles (a desktop HDD has 16-64 MiB)


@dataclass(frozen=True)
class NullBlk:
    size_mb: int
    completion_nsec: int = 0
    mbps: int = 0
    hw_queue_depth: int = 1
    cache_mb: int = 0
    blocksize: int = 4096
    model: str = "memory disk, no latency"
    max_sectors: int = 2560
    disk_model: str = ""      # a profile of abt_disk.h: it times each request (nullblk-disk.patch)
    disk_fixed_ns: int = 0
    DRIVER = "null_blk"

    @staticmethod
    def device_name(index: int) -> str:
        """The point's block device: null_blk makes one per point."""
        return f"nullb{index}"

    @classmethod
    def for_kernel(cls, disk: NullBlk, depth: int, row) -> NullBlk:
        """The disk serving a profile on kernel `row`, from its null_blk form."""
        return disk

    def settings(self, index: int) -> list[tuple[str, str]]:
        """What the guest's /init writes to make the disk (DISK_ATTRS)."""
        return self.configfs(index)

    def configfs(self, index: int) -> list[tuple[str, str]]:
        """(attribute, value) to write under /sys/kernel/config/nullb/<dev>/, in order."""
        timed = self.completion_nsec > 0 or bool(self.disk_model)
        items = [("index", index), ("size", self.size_mb), ("blocksize", self.blocksize),
                 ("memory_backed", 1), ("queue_mode", 2), ("submit_queues", 1),
                 ("hw_queue_depth", self.hw_queue_depth), ("irqmode", 2 if timed else 0),
                 ("completion_nsec", self.completion_nsec), ("mbps", self.mbps),
                 ("cache_size", self.cache_mb), ("max_sectors", self.max_sectors)]
        if self.disk_model:   # disk_fixed_ns first: disk_model reads it when set
            items += [("disk_fixed_ns", self.disk_fixed_ns), ("disk_model", self.disk_model)]
        return [(k, str(v)) for k, v in items]

    def describe(self) -> dict:
        # with a drive model, null_blk's own latency and cap are off and not listed: a
        # reader of completion_nsec (sim.calibration.guest_device) must not see 0 as the disk
        timing = (f"disk_model={self.disk_model} disk_fixed_ns={self.disk_fixed_ns}"
                  if self.disk_model else
                  f"irqmode={2 if self.completion_nsec else 0} "
                  f"completion_nsec={self.completion_nsec} mbps={self.mbps}")
        return {"device": f"null_blk in the guest: {self.model}",
                "guest_disk": (f"null_blk memory_backed=1 {timing} "
                               f"hw_queue_depth={self.hw_queue_depth} cache_size={self.cache_mb}MiB "
                               f"max_sectors={self.max_sectors}")}


BRD_PARAMS = "/sys/module/brd/parameters"
BRD_MAX_SECTORS = 1024     # 3.4's BLK_DEF_MAX_SECTORS, which brd's 1024 hw sectors meet


@dataclass(frozen=True)
class Brd:
    """Linux 3.4.2's disk: /dev/ram0 in request mode (k342/07-brd-rq-mode.patch), timed
    by the drive model of abt_disk.h when disk_model is set (k342/09-brd-disk-model.patch)."""
    size_mb: int
    completion_nsec: int = 0
    mbps: int = 0
    model: str = "memory disk, no latency"
    max_sectors: int = BRD_MAX_SECTORS
    disk_model: str = ""      # a profile of abt_disk.h: it times each request
    disk_fixed_ns: int = 0
    DRIVER = "brd"

    @staticmethod
    def device_name(index: int) -> str:
        """One RAM disk serves every point of a boot."""
        return "ram0"

    @classmethod
    def for_kernel(cls, disk: NullBlk, depth: int, row) -> Brd:
        """The null_blk form's timing on brd (depth 1 only: abtlab.machines.spec refuses more)."""
        if depth > row.max_depth:
            raise ConfigError("--machine guest:depth", depth, f"depth=1 with kernel={row.name}")
        return cls(disk.size_mb, disk.completion_nsec, disk.mbps, disk.model,
                   disk_model=disk.disk_model, disk_fixed_ns=disk.disk_fixed_ns)

    def settings(self, index: int) -> list[tuple[str, str]]:
        """(parameter, value) to write under /sys/module/brd/parameters (index unused:
        one RAM disk serves every point of a boot). Every parameter every point, since
        they outlive it: disk_model last, it starts a fresh drive with disk_fixed_ns."""
        return [("completion_nsec", str(self.completion_nsec)), ("mbps", str(self.mbps)),
                ("disk_fixed_ns", str(self.disk_fixed_ns)), ("disk_model", self.disk_model)]

    @property
    def fs_size(self) -> str:
        """mkfs's size argument: the disk is as large as the batch's largest image."""
        return f"{self.size_mb}M"

    def describe(self) -> dict:
        # as NullBlk's: with a drive model, completion_nsec is not the disk and not listed
        timing = (f"disk_model={self.disk_model} disk_fixed_ns={self.disk_fixed_ns}"
                  if self.disk_model else
                  f"completion_nsec={self.completion_nsec} mbps={self.mbps}")
        return {"device": f"brd (rq_mode) in the guest: {self.model}",
                "guest_disk": (f"brd rq_mode=1 {timing} queue_depth=1 write_cache=volatile "
                               f"max_sectors={self.max_sectors} size={self.size_mb}MiB")}


def for_profile(profile, size_mb: int, depth: int = 1, mem_mb: int | None = None, row=None):
    """The in-guest disk serving `profile` (a device spec or Profile) on the guest kernel
    `row` (abtlab.machines.kernels; None: 6.1's null_blk): its disk class's form of it."""
    disk = _null_blk(profile, size_mb, depth, mem_mb)
    return disk if row is None else row.disk.for_kernel(disk, depth, row)


def _legacy_latency(prof: Profile, size_mb: int, depth: int) -> NullBlk:
    """Every request and flush the profile's average positioning; transfer capped."""
    pos_us = prof.seek_us + prof.rotation_us
    return NullBlk(size_mb, pos_us * 1000, int(prof.bw_mbps), depth, CACHE_MB,
                   model=f"{prof.name}: every request and flush {pos_us} us "
                         f"(seek {prof.seek_us} + rotation {prof.rotation_us}), "
                         f"transfer at {prof.bw_mbps} MB/s"
                         + (" (not the host's drive model)" if prof.disk else ""))


def _null_blk(profile, size_mb: int, depth: int, mem_mb: int | None) -> NullBlk:
    prof: Profile = parse_profile(profile) if isinstance(profile, str) else profile
    if mem_mb is not None and size_mb + GUEST_RESERVE_MB > mem_mb:
        raise ConfigError("--machine guest:mem", mem_mb,
                          f"at least the scratch image ({size_mb} MiB) + {GUEST_RESERVE_MB} MiB: "
                          f"mem={size_mb + GUEST_RESERVE_MB} or a smaller image_mb")
    if prof.kind == "latency" and prof.disk == "fixed":
        return NullBlk(size_mb, prof.fixed_ns, 0, depth, CACHE_MB,
                       model=f"{prof.name}: every request and flush {prof.fixed_ns} ns, "
                             f"whatever its size")
    if prof.kind == "latency" and prof.disk:
        # the host's drive model, in the guest's null_blk on the guest's clock
        # cache_mb 0: the model is the write cache (null_blk advertises one for it)
        # and null_blk's own cache would only copy the data once more
        return NullBlk(size_mb, 0, 0, depth, 0, disk_model=prof.disk,
                       model=f"{prof.name}: the abt_disk.h drive model times each request "
                             f"(as abt-slowdisk on the host)")
    if prof.kind == "latency":
        return _legacy_latency(prof, size_mb, depth)
    iops = max(prof.write_iops, prof.read_iops)
    bps = max(prof.write_bps, prof.read_bps)
    if not iops and not bps:
        return NullBlk(size_mb, hw_queue_depth=depth)
    nsec = int(1e9 // iops) if iops else 0
    mbps = max(1, bps // 10 ** 6) if bps else 0
    return NullBlk(size_mb, nsec, mbps, depth, CACHE_MB if nsec else 0,
                   model=f"{prof.name}: {iops or 'unlimited'} IOPS as {nsec} ns per request, "
                         f"{mbps or 'unlimited'} MB/s")
