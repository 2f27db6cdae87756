"""Which Linux the guest boots, and what differs between them: one row per kernel name.

`6.1` (and its preset `6.1-legacy`) is Debian's linux-source-6.1 with abtlab's patches,
built by `make -C backends/kernel`. `3.4.2` is the paper's own kernel (docs/journal/kernel-3.4.2.md),
built from the linux-3.4.2 import by backends/kernel/build-kernel-3.4.2.sh with the
k342/ patches; CI machines cannot fetch that source (they reach Debian's and the
language registries only), so `check_kernels` refuses a run that needs it before any
point does. The guest's /init is the same for both (backends/kernel/init.sh); what the
host side must know is a field of the kernel's row in KERNELS: the dataset's label, how
it is built, the boot line (3.4.2's disk is brd in request mode, sized at boot), how the
trace prints microseconds, its disk, its knobs' presets and where they live. Adding a
guest kernel is adding a row.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import about
from ..errors import ConfigError
from ..system.geometry import FEATURES_342
from .guest_disk import Brd, NullBlk

__all__ = ["KERNEL_LABEL", "K342", "K342_LABEL", "CMDLINE", "CMDLINE_342", "K342_BUILD",
           "K342_SOURCE", "GuestKernel", "KERNELS", "guest_kernel", "check_kernels",
           "LEGACY_KNOBS", "LEGACY_MOUNT", "LEGACY_ITEMS", "IOSCHEDS", "IOSCHEDS_342",
           "SCHED_SYSCTL", "KERNEL_DIR", "MAKE_61"]

KERNEL_DIR = about.NATIVE / "kernel"

KERNEL_LABEL = "guest linux 6.1 + delayjc (TCG)"
K342 = "3.4.2"
K342_LABEL = "guest linux 3.4.2 (TCG)"
# null_blk makes no device of its own (each point configures one); no address-space
# randomisation, so a run's instruction stream does not depend on where things landed
CMDLINE = "console=ttyS0 panic=-1 quiet null_blk.nr_devices=0 norandmaps"
# no null_blk: one brd RAM disk in request mode (k342/07-brd-rq-mode.patch), as large as
# the batch's largest image
# clocksource=hpet: 3.4 registers the TSC a second after boot (tsc_refine_calibration_work)
# and switches to it, mid-run for most points; after the switch its trace clock (ktime_get,
# k342/06) ran up to 0.2 ms ahead of the vDSO's CLOCK_MONOTONIC on some points, which the
# clock check refused on every boot. On hpet throughout the same one-vCPU sweep passes,
# its numbers unchanged; four vCPUs still fail the check on some points, for another
# reason not found (docs/journal/kernel-3.4.2.md, "The clocksource").
CMDLINE_342 = ("console=ttyS0 panic=-1 quiet norandmaps clocksource=hpet brd.rq_mode=1 brd.rd_nr=1 "
               "brd.rd_size={kb}")
K342_BUILD = KERNEL_DIR / "build-kernel-3.4.2.sh"
K342_SOURCE = ("the Linux 3.4.2 source: ABTLAB_K342_SRC=<a tree of the linux-3.4.2 import> "
               "(default /var/cache/abtlab/linux-3.4.2) or ABTLAB_K342_GIT=<a git directory of "
               "github.com/allenzhangt/linux-3.4.2> (docs/journal/kernel-3.4.2.md, Source), or another "
               "kernel=")
SCHED_DEBUGFS = "/sys/kernel/debug/sched/"
SCHED_SYSCTL = "/proc/sys/kernel/sched_"       # 3.4's names for the same variables
IOSCHEDS = ("none", "mq-deadline", "bfq")
IOSCHEDS_342 = ("cfq", "noop", "deadline")
# legacy item -> the module parameter that switches it (1 on, 0 off)
LEGACY_KNOBS = {"shadow_wait": "/sys/module/jbd2/parameters/legacy_shadow_wait",
                "write_handle": "/sys/module/ext4/parameters/legacy_write_handle"}
# legacy item -> the ext4 mount option that restores it (a stock kernel's own option)
LEGACY_MOUNT = {"dioread_lock": "dioread_lock"}
LEGACY_ITEMS = (*LEGACY_KNOBS, *LEGACY_MOUNT)
# what build-kernel.sh (run by `make -C backends/kernel`) hashes, in its order, into the name
# of the cache folder it builds the 6.1 guest in: the series, the disk model null_blk
# includes, config and build.env
MAKE_61 = ("delayjc.patch", "legacy.patch", "nullblk-disk.patch", "../include/abt_disk.h",
           "guest.config", "build.env")
# What a first guest build costs, measured on the 2-core VM this is developed on (load
# 4-6, November 2026): the trees stay in the cache, so it is paid once per machine.
FIRST_BUILD_61 = ("linux-source-6.1 (a 138 MB Debian package) unpacked into a 1.6 GB tree, "
                  "~25 CPU-minutes (13 min on 2 cores)")
FIRST_BUILD_342 = "a 0.6 GB tree beside the 0.5 GB source, ~40 CPU-minutes (20 min at -j2)"


@dataclass(frozen=True)
class GuestKernel:
    """What a point on this guest kernel does differently, in one place."""
    name: str               # the spec's kernel=
    label: str              # the dataset's "kernel" attr before the knobs
    printed: str            # how its trace prints microseconds (abtlab.system.tracefs.PRINTED)
    disk: type              # the in-guest disk's class (abtlab.machines.guest_disk)
    mkfs_features: str      # mke2fs -O items its ext4 needs (abtlab.system.geometry)
    commit_records: str     # where the commits come from, for the dataset
    cmdline: str            # the boot line; {kb}: the batch's largest disk, in KiB
    preset: tuple           # the knobs' defaults: (legacy items, sched, iosched)
    elevators: tuple        # the iosched= it offers
    sched_dir: str          # where its CFS settings are written (a path prefix)
    # why legacy= is refused: the 3.4 semantics the items restore are its own code ("": knobs)
    native_legacy: str = ""
    build_script: Path | None = None    # None: `make -C backends/kernel` builds it
    source: str = ""        # what its build script needs, for the error that names it
    max_depth: int = 256    # its disk's hardware queue depth, at most
    depth_why: str = ""     # why not deeper
    build: str = "6.1"      # the build it boots (the 6.1 rows share one)
    first_build: str = FIRST_BUILD_61   # what a first build costs here
    cache_env: tuple = ("ABTLAB_KERNEL_CACHE", "kernel")   # its build's cache: variable, default

    def disk_name(self, index: int) -> str:
        """The point's block device (null_blk makes one per point, brd has one RAM disk)."""
        return self.disk.device_name(index)

    def boot_cmdline(self, disk_mb: int) -> str:
        return self.cmdline.format(kb=disk_mb * 1024)

    @property
    def cache(self) -> Path:
        """The folder its build script caches builds in."""
        var, default = self.cache_env
        return Path(os.environ.get(var) or about.SYSTEM_CACHE / default)

    def build_key(self) -> str:
        """The name of the cache folder its build goes in (the hash of what it is built
        from), '' when a kernel with a build script of its own is not built yet."""
        if self.build_script is not None:
            out = _check(self.build_script).stdout.split()
            return Path(out[-1]).parent.name if out else ""
        h = hashlib.sha256()
        for name in MAKE_61:
            h.update((KERNEL_DIR / name).read_bytes())
        return h.hexdigest()[:16]

    def build_check(self) -> tuple[bool, str]:
        """For `abtlab doctor`, without building anything: (built, the cached image or what
        a first build needs and costs)."""
        if self.build_script is not None:
            return self._script_check()
        try:
            image = self.cache / self.build_key() / "bzImage"
        except OSError as exc:
            return False, f"backends/kernel is incomplete: {exc}"
        if image.is_file():
            return True, f"cached {image} ({image.stat().st_size / 1e6:.1f} MB)"
        need = "" if os.geteuid() == 0 or Path("/usr/src/linux-source-6.1.tar.xz").is_file() else \
            " (as root: it installs linux-source-6.1)"
        return False, f"not built: the first guest run builds it in {self.cache}{need}: {self.first_build}"

    def _script_check(self) -> tuple[bool, str]:
        """A kernel built by its own script (3.4.2): a cached build, or its source."""
        src = Path(os.environ.get("ABTLAB_K342_SRC") or about.SYSTEM_CACHE / "linux-3.4.2")
        try:
            proc = _check(self.build_script)
        except (OSError, subprocess.SubprocessError) as exc:
            return False, f"{self.build_script}: {exc}"
        if proc.returncode != 0:
            return False, (f"no source at {src}: set ABTLAB_K342_SRC or ABTLAB_K342_GIT "
                           f"(docs/journal/kernel-3.4.2.md); runs with kernel={self.name} are refused")
        if proc.stdout.strip():
            return True, f"cached {proc.stdout.split()[-1]}"
        where = os.environ.get("ABTLAB_K342_GIT") if not (src / "Makefile").is_file() else src
        return False, (f"not built: the first kernel={self.name} run builds it from {where}: "
                       f"{self.first_build}")


_61 = dict(label=KERNEL_LABEL, printed="truncated", disk=NullBlk, mkfs_features="",
           commit_records="tracefs in the guest (trace_clock mono)", cmdline=CMDLINE,
           elevators=IOSCHEDS, sched_dir=SCHED_DEBUGFS)
KERNELS = {k.name: k for k in (
    GuestKernel("6.1", preset=(frozenset(), "default", "none"), **_61),
    GuestKernel("6.1-legacy", preset=(frozenset(LEGACY_ITEMS), "cfs34", "bfq"), **_61),
    # 3.4 rounds printed times to the nearest us (ns2usecs adds 500 ns)
    GuestKernel(K342, K342_LABEL, "rounded", Brd, FEATURES_342,
                "debugfs tracing in the guest (trace_clock mono, k342/06; times printed to "
                "the nearest us)", CMDLINE_342, (frozenset(), "default", "cfq"), IOSCHEDS_342,
                SCHED_SYSCTL,
                native_legacy="it is Linux 3.4, whose shadow wait, per-page write handle and "
                              "dioread_lock write-back are its own code (legacy= restores "
                              "them in kernel=6.1)",
                build_script=K342_BUILD, source=K342_SOURCE, max_depth=1,
                depth_why="its disk, brd in request mode, serves one request at a time",
                build=K342, first_build=FIRST_BUILD_342,
                cache_env=("ABTLAB_K342_CACHE", "kernel-3.4.2")),
)}


def guest_kernel(kernel: str) -> GuestKernel:
    """The row of a kernel name; ConfigError naming `guest:kernel` for an unknown one."""
    try:
        return KERNELS[kernel]
    except KeyError:
        raise ConfigError("--machine guest:kernel", kernel, " | ".join(KERNELS)) from None


def _check(script: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(script), "--check"], capture_output=True, text=True, timeout=120)


def check_kernels(machines) -> None:
    """Before any point runs: ConfigError naming `guest:kernel` when a machine's kernel
    cannot be built here (one with a build script of its own, 3.4.2, with neither its
    source nor a cached build)."""
    rows = {m.kernel: m.guest_kernel for m in machines if getattr(m, "is_guest", False)}
    for row in (rows[n] for n in sorted(rows)):   # parsed Machines carry their rows
        if row.build_script is None:
            continue
        proc = _check(row.build_script)
        if proc.returncode != 0:
            raise ConfigError("--machine guest:kernel", row.name,
                              f"{row.source} ({proc.stderr.strip()[-300:]})")
