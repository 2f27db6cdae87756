"""Which Linux the guest boots, and what differs between them.

`6.1` (and its presets) is Debian's linux-source-6.1 with abtlab's patches, built by
`make -C native/kernel`. `3.4.2` is the paper's own kernel (docs/kernel-3.4.2.md),
built from the linux-3.4.2 import by native/kernel/build-kernel-3.4.2.sh with the
k342/ patches; CI machines cannot fetch that source (they reach Debian's and the
language registries only), so `check_kernels` refuses a run that needs it before any
point does. The guest's /init is the same for both (native/kernel/init.sh); what the
host side must know: the dataset's label, the boot line (3.4.2's disk is brd in
request mode, sized at boot), and how the trace prints microseconds.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import about
from ..errors import ConfigError

__all__ = ["KERNEL_LABEL", "K342", "K342_LABEL", "CMDLINE_342", "K342_BUILD", "K342_SOURCE",
           "GuestKernel", "guest_kernel", "kernel_label", "trace_times", "check_kernels",
           "k342_build"]

KERNEL_LABEL = "guest linux 6.1 + delayjc (TCG)"
K342 = "3.4.2"
K342_LABEL = "guest linux 3.4.2 (TCG)"
# no null_blk: one brd RAM disk in request mode (k342/07-brd-rq-mode.patch), as large as
# the batch's largest image
CMDLINE_342 = "console=ttyS0 panic=-1 quiet norandmaps brd.rq_mode=1 brd.rd_nr=1 brd.rd_size={kb}"
K342_BUILD = about.NATIVE / "kernel" / "build-kernel-3.4.2.sh"
K342_SOURCE = ("the Linux 3.4.2 source: ABTLAB_K342_SRC=<a tree of the linux-3.4.2 import> "
               "(default /var/cache/abtlab/linux-3.4.2) or ABTLAB_K342_GIT=<a git directory of "
               "github.com/allenzhangt/linux-3.4.2> (docs/kernel-3.4.2.md, Source), or another "
               "kernel=")


@dataclass(frozen=True)
class GuestKernel:
    """What a point on this guest kernel does differently, in one place."""
    label: str              # the dataset's "kernel" attr before the knobs
    printed: str            # how its trace prints microseconds (abtlab.system.tracefs.PRINTED)
    disk: str               # the in-guest disk driver (abtlab.machines.guest_disk)
    mkfs_features: str      # mke2fs -O items its ext4 needs (abtlab.system.geometry)
    commit_records: str     # where the commits come from, for the dataset

    def disk_name(self, index: int) -> str:
        """The point's block device: null_blk makes one per point, brd has one RAM disk."""
        return "ram0" if self.disk == "brd" else f"nullb{index}"


def guest_kernel(kernel: str) -> GuestKernel:
    """The GuestKernel of a kernel name (6.1 and its presets, or 3.4.2)."""
    from ..system.geometry import FEATURES_342
    if kernel == K342:     # 3.4 rounds printed times to the nearest us (ns2usecs adds 500 ns)
        return GuestKernel(K342_LABEL, "rounded", "brd", FEATURES_342,
                           "debugfs tracing in the guest (trace_clock mono, k342/06; times "
                           "printed to the nearest us)")
    return GuestKernel(KERNEL_LABEL, "truncated", "null_blk", "",
                       "tracefs in the guest (trace_clock mono)")


def kernel_label(kernel: str) -> str:
    """The dataset's "kernel" attr before the knobs: which guest kernel ran."""
    return guest_kernel(kernel).label


def trace_times(kernel: str) -> str:
    """How the kernel's trace file prints microseconds (abtlab.system.tracefs.PRINTED):
    3.4 rounds to the nearest, later kernels truncate."""
    return guest_kernel(kernel).printed


def _check() -> subprocess.CompletedProcess:
    return subprocess.run([str(K342_BUILD), "--check"], capture_output=True, text=True,
                          timeout=120)


def check_kernels(machines) -> None:
    """Before any point runs: ConfigError naming `guest:kernel` when a machine's kernel
    cannot be built here (3.4.2 with neither its source nor a cached build)."""
    if not any(getattr(m, "kernel", "") == K342 for m in machines):   # parsed Machines
        return
    proc = _check()
    if proc.returncode != 0:
        raise ConfigError("--machine guest:kernel", K342,
                          f"{K342_SOURCE} ({proc.stderr.strip()[-300:]})")


def k342_build() -> str:
    """The cached 3.4.2 build's name (the hash of its patches, config, build.env and
    compiler), '' before it is built."""
    out = _check().stdout.split()
    return Path(out[-1]).parent.name if out else ""
