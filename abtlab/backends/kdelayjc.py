"""Kernel delayJC: the delayjc jbd2 patch (backends/kernel/delayjc.patch) as a policy.

Spec: `kdelayjc:window=2ms,max_resets=8` (window 0 = the stock kernel). Where the running
kernel carries the patch, `KernelKnobs` writes /sys/module/jbd2/parameters/delayjc_*
and restores them on exit; elsewhere the point runs inside the qemu guest
(abtlab.backends.guest_point, the default `--machine guest`) and is labelled so.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import policies
from ..errors import ConfigError, RunError
from ..policies import Policy, parse_duration_us
from ..system import cleanup
from .base import RunResult

__all__ = ["KernelPolicy", "parse_kdelayjc", "KernelKnobs", "knobs_present", "run_in_guest",
           "run_kdelayjc", "run_any", "SYSFS_KNOBS", "KIND"]

KIND = "kdelayjc"
SYSFS_KNOBS = Path("/sys/module/jbd2/parameters")
_KNOBS = ("delayjc_window_us", "delayjc_max_resets")


@dataclass(frozen=True)
class KernelPolicy(Policy):
    """kind 'kdelayjc', params window_us (int us) and max_resets (int)."""

    @property
    def label(self) -> str:
        p = self.params
        return f"kdelayjc:window={policies._dur(p['window_us'])},max_resets={p['max_resets']}"

    @property
    def journal(self) -> bool:
        return True

    def mount_options(self) -> str:
        return ""

    def preload_env(self) -> dict:
        return {}


def parse_kdelayjc(spec) -> KernelPolicy:
    """Parse `kdelayjc:window=DURATION[,max_resets=N]`; ConfigError names the field."""
    if isinstance(spec, KernelPolicy):
        return spec
    kind, _, body = str(spec).strip().partition(":")
    if kind.strip().lower() != KIND:
        raise ConfigError("policy", spec, "kdelayjc:window=DURATION[,max_resets=N]")
    kv = policies._kv(body, spec)
    unknown = set(kv) - {"window", "max_resets"}
    if unknown:
        raise ConfigError(f"policy kdelayjc.{sorted(unknown)[0]}", spec, "window, max_resets")
    if "window" not in kv or kv["window"] is True:
        raise ConfigError("policy kdelayjc.window", None, "window=DURATION, e.g. 2ms (0 = stock)")
    window = parse_duration_us(kv["window"], "policy kdelayjc.window")
    if window != int(window) or window >= 2 ** 32:
        raise ConfigError("policy kdelayjc.window", kv["window"], "whole microseconds below 4295 s")
    resets = kv.get("max_resets", "0")
    if resets is True or not str(resets).isdigit() or int(resets) >= 2 ** 32:
        raise ConfigError("policy kdelayjc.max_resets", resets, "an integer >= 0")
    return KernelPolicy(KIND, {"window_us": int(window), "max_resets": int(resets)})


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
        p = self.policy.params
        # max_resets first, so the window never runs with a stale bound
        self._write({"delayjc_max_resets": p["max_resets"], "delayjc_window_us": p["window_us"]})

    def _write(self, values: dict):
        for k, v in values.items():
            (self.root / k).write_text(f"{v}\n")


def run_any(argv_for, point, ctx, data_bytes) -> RunResult:
    """What a driver calls instead of realfs.run_workload: a guest machine runs the point
    in the qemu guest; on the host, kdelayjc policies go to the kernel delayjc path."""
    from ..factors.machine import parse_machine
    machine = parse_machine(point.get("machine", "host"))
    if machine.is_guest:
        return run_in_guest(argv_for, point, ctx, data_bytes, machine)
    kind = str(getattr(point["policy"], "kind", point["policy"])).strip().lower()
    if kind.startswith(KIND):
        return run_kdelayjc(argv_for, point, ctx, data_bytes)
    from .realfs import run_workload
    res = run_workload(argv_for, point, ctx, data_bytes)
    res.attrs.update(machine.attrs())   # machine=host, clock=host: mixed datasets say both
    return res


def run_kdelayjc(argv_for, point, ctx, data_bytes) -> RunResult:
    """A kdelayjc point on the host: with the host kernel's knobs when it has them, else
    in the default guest (labelled so in the machine attrs)."""
    if knobs_present():
        from .realfs import run_workload
        with KernelKnobs(point["policy"]):
            res = run_workload(argv_for, {**point, "policy": "ext4"}, ctx, data_bytes)
        res.attrs["policy_mechanism"] = "kernel delayjc (host kernel carries the patch)"
        return res
    return run_in_guest(argv_for, point, ctx, data_bytes, "guest")


def run_in_guest(argv_for, point, ctx, data_bytes, machine="guest", timeout=None) -> RunResult:
    """One point in the qemu guest (abtlab.backends.guest_point)."""
    from .guest_point import run_in_guest as run
    return run(argv_for, point, ctx, data_bytes, machine, timeout)
