"""The policy kinds besides ext4 (the base, abtlab.policies.policy) and kdelayjc (its own
module): each one class, saying where it differs from the stock journal and parsing its
own spec body."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .policy import Policy, format_duration, parse_duration_us, parse_items

__all__ = ["NoJournal", "BatchPolicy", "DelayPolicy"]


@dataclass(frozen=True)
class NoJournal(Policy):
    """nojc: no journal at all (mkfs.ext4 -O ^has_journal)."""

    @property
    def journal(self) -> bool:
        return False

    @property
    def window_us(self):
        return None

    @property
    def sim_mode(self):
        return "nojc"


@dataclass(frozen=True)
class BatchPolicy(Policy):
    """batch:min_us=A,max_us=B: ext4's own min_batch_time/max_batch_time mount options."""

    @classmethod
    def from_body(cls, kind, body, spec):
        kv = parse_items(body, spec)
        unknown = set(kv) - {"min_us", "max_us"}
        if unknown or not {"min_us", "max_us"} <= set(kv):
            raise ConfigError("policy batch", body, "min_us=A,max_us=B (microseconds)")
        lo = parse_duration_us(kv["min_us"], "policy batch.min_us")
        hi = parse_duration_us(kv["max_us"], "policy batch.max_us")
        if hi < lo:
            raise ConfigError("policy batch.max_us", kv["max_us"], f">= min_us ({lo:g})")
        return cls(kind, {"min_us": lo, "max_us": hi})

    @property
    def label(self) -> str:
        return f"batch:min_us={self.params['min_us']:g},max_us={self.params['max_us']:g}"

    def mount_options(self) -> str:
        return f"min_batch_time={int(self.params['min_us'])},max_batch_time={int(self.params['max_us'])}"

    @property
    def window_us(self):
        return None

    @property
    def sim_mode(self):
        return "batch"

    def sim_window(self) -> tuple:
        return self.params["min_us"], self.params["max_us"]


@dataclass(frozen=True)
class DelayPolicy(Policy):
    """delayjc: the LD_PRELOAD group commit (backends/delayjc), a fixed window or adaptive;
    params mode, window_us (fixed), max_resets, max_age_us."""

    @classmethod
    def from_body(cls, kind, body, spec):
        kv = parse_items(body, spec)
        adaptive = kv.pop("adaptive", False) is True
        allowed = {"max_resets", "max_age"} | (set() if adaptive else {"window"})
        unknown = set(kv) - allowed
        if unknown:
            raise ConfigError(f"policy delayjc.{sorted(unknown)[0]}", spec, ", ".join(sorted(allowed)))
        params = {"mode": "adaptive" if adaptive else "fixed"}
        if not adaptive:
            if "window" not in kv:
                raise ConfigError("policy delayjc.window", None, "window=DURATION or 'adaptive'")
            params["window_us"] = parse_duration_us(kv["window"], "policy delayjc.window")
        resets = kv.get("max_resets", "64")
        if not str(resets).isdigit():
            raise ConfigError("policy delayjc.max_resets", resets, "an integer >= 0")
        params["max_resets"] = int(resets)
        params["max_age_us"] = parse_duration_us(kv.get("max_age", "1s"), "policy delayjc.max_age")
        return cls(kind, params)

    @property
    def label(self) -> str:
        p = self.params
        head = ("delayjc:adaptive" if self.tunes_window
                else f"delayjc:window={format_duration(p['window_us'])}")
        return f"{head},max_resets={p['max_resets']},max_age={format_duration(p['max_age_us'])}"

    @property
    def needs_preload(self) -> bool:
        return True

    def preload_env(self) -> dict:
        env = {"ABT_DELAYJC_POLICY": self.params["mode"],
               "ABT_DELAYJC_MAX_RESETS": str(int(self.params["max_resets"])),
               "ABT_DELAYJC_MAX_AGE_US": str(int(self.params["max_age_us"]))}
        if not self.tunes_window:
            env["ABT_DELAYJC_WINDOW_US"] = str(int(self.params["window_us"]))
        return env

    @property
    def tunes_window(self) -> bool:
        return self.params["mode"] == "adaptive"

    @property
    def window_us(self):
        return None if self.tunes_window else float(self.params["window_us"])

    @property
    def sim_mode(self):
        return "adaptive" if self.tunes_window else "fixed"

    def sim_window(self) -> tuple:
        return (0.0 if self.tunes_window else self.params["window_us"]), 0.0
