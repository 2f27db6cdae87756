"""Kernel delayJC on the host: the delayjc jbd2 patch's knobs (the policy value is
abtlab.policies.kdelayjc). Where the running kernel carries the patch, `KernelKnobs`
writes /sys/module/jbd2/parameters/delayjc_* and restores them on exit; elsewhere the
point runs inside the qemu guest (abtlab.machines.dispatch) and is labelled so.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import RunError
from ..policies.kdelayjc import parse_kdelayjc
from ..system import cleanup

__all__ = ["KernelKnobs", "knobs_present", "SYSFS_KNOBS"]
SYSFS_KNOBS = Path("/sys/module/jbd2/parameters")
_KNOBS = ("delayjc_window_us", "delayjc_max_resets")


def knobs_present(root=None) -> bool:
    """True when the running kernel (or the tree at root) carries the delayjc knobs."""
    return all((Path(root or SYSFS_KNOBS) / k).is_file() for k in _KNOBS)


class KernelKnobs(cleanup.Undoable):
    """Set delayjc_window_us and delayjc_max_resets under `root`; restore on every exit."""

    def __init__(self, policy, root=None):
        self.policy = parse_kdelayjc(policy)
        self.root = Path(root or SYSFS_KNOBS)
        self._tokens = []

    def _setup(self):
        if not knobs_present(self.root):
            raise RunError(f"{self.root} has no delayjc knobs: the kernel lacks the delayjc patch")
        old = {k: (self.root / k).read_text().strip() for k in _KNOBS}
        self._undo(lambda: self._write(old), f"restore delayjc knobs in {self.root}")
        self._write(dict(self.policy.kernel_knobs()))   # in the policy's order

    def _write(self, values: dict):
        for k, v in values.items():
            (self.root / k).write_text(f"{v}\n")
