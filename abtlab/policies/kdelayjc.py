"""The kernel delayJC policy value, `kdelayjc:window=2ms,max_resets=8` (window 0 = the
stock kernel): the delayjc jbd2 patch's two knobs. How it runs: abtlab.machines.kernel_delayjc."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .policy import Policy, format_duration, parse_items, parse_duration_us

__all__ = ["KernelPolicy", "parse_kdelayjc", "KIND"]

KIND = "kdelayjc"


@dataclass(frozen=True)
class KernelPolicy(Policy):
    """kind 'kdelayjc', params window_us (int us) and max_resets (int)."""

    @property
    def label(self) -> str:
        p = self.params
        return f"kdelayjc:window={format_duration(p['window_us'])},max_resets={p['max_resets']}"

    @classmethod
    def from_body(cls, kind, body, spec):
        return parse_kdelayjc(str(spec).strip())

    @property
    def needs_patched_kernel(self) -> bool:
        return True

    def kernel_knobs(self) -> tuple:
        # max_resets first, so the window never runs with a stale bound
        return (("delayjc_max_resets", self.params["max_resets"]),
                ("delayjc_window_us", self.params["window_us"]))

    @property
    def mechanism(self) -> str:
        return "kernel delayjc (jbd2 patch)"

    @property
    def window_us(self) -> float:
        return float(self.params["window_us"])

    @property
    def sim_mode(self):
        return None     # the simulator has no model of the jbd2 patch


def parse_kdelayjc(spec) -> KernelPolicy:
    """Parse `kdelayjc:window=DURATION[,max_resets=N]`; ConfigError names the field."""
    if isinstance(spec, KernelPolicy):
        return spec
    kind, _, body = str(spec).strip().partition(":")
    if kind.strip().lower() != KIND:
        raise ConfigError("policy", spec, "kdelayjc:window=DURATION[,max_resets=N]")
    kv = parse_items(body, spec)
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
