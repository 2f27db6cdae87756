"""The Policy value every run and the simulator take, and the pieces of its grammar
(durations, key=value bodies) that each kind's parser shares."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ConfigError

__all__ = ["Policy", "parse_duration_us", "format_duration", "parse_items", "KINDS"]

KINDS = ("ext4", "nojc", "delayjc", "batch", "kdelayjc")
_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
_DUR = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ns|us|ms|s)?\s*$")


def parse_duration_us(text, field="duration") -> float:
    m = _DUR.match(str(text))
    if not m:
        raise ConfigError(field, text, "a non-negative duration such as 500us, 16ms, 1s")
    return float(m.group(1)) * _UNITS[m.group(2) or "us"]


@dataclass(frozen=True)
class Policy:
    kind: str
    params: dict = field(default_factory=dict, hash=False, compare=True)

    def __str__(self) -> str:   # a dataset coordinate, a stored point: the canonical spec
        return self.label

    @property
    def label(self) -> str:
        """Canonical spec string; parse(label) == self."""
        p = self.params
        if self.kind in ("ext4", "nojc"):
            return self.kind
        if self.kind == "batch":
            return f"batch:min_us={p['min_us']:g},max_us={p['max_us']:g}"
        head = "delayjc:adaptive" if p["mode"] == "adaptive" else f"delayjc:window={format_duration(p['window_us'])}"
        return f"{head},max_resets={p['max_resets']},max_age={format_duration(p['max_age_us'])}"

    @property
    def journal(self) -> bool:
        return self.kind != "nojc"

    def mount_options(self) -> str:
        if self.kind == "batch":
            return f"min_batch_time={int(self.params['min_us'])},max_batch_time={int(self.params['max_us'])}"
        return ""

    # what running it needs: the run paths (abtlab.machines) ask these, not its kind
    @property
    def needs_preload(self) -> bool:
        """Its workload runs under libdelayjc.so (LD_PRELOAD), which records its batches."""
        return self.kind == "delayjc"

    @property
    def needs_patched_kernel(self) -> bool:
        """It needs the delayjc jbd2 patch: a host kernel that carries it, or the guest's."""
        return False

    def kernel_knobs(self) -> tuple:
        """(jbd2 module parameter, value) to write before the workload, in order."""
        return ()

    @property
    def needs_kernel_knobs(self) -> bool:
        return bool(self.kernel_knobs())

    @property
    def mechanism(self) -> str:
        """How it groups commits, for the dataset's policy_mechanism attr."""
        return "LD_PRELOAD libdelayjc.so" if self.needs_preload else "stock jbd2"

    def preload_env(self) -> dict:
        """Environment for libdelayjc.so (empty for policies that need no preload)."""
        if self.kind != "delayjc":
            return {}
        env = {"ABT_DELAYJC_POLICY": self.params["mode"],
               "ABT_DELAYJC_MAX_RESETS": str(int(self.params["max_resets"])),
               "ABT_DELAYJC_MAX_AGE_US": str(int(self.params["max_age_us"]))}
        if self.params["mode"] == "fixed":
            env["ABT_DELAYJC_WINDOW_US"] = str(int(self.params["window_us"]))
        return env


def format_duration(us: float) -> str:
    """Microseconds as a spec writes them: 16ms, 1s, 500us."""
    for unit, scale in (("s", 1e6), ("ms", 1e3)):
        if us >= scale and us % scale == 0:
            return f"{us / scale:g}{unit}"
    return f"{us:g}us"


def parse_items(body, spec) -> dict:
    """A spec's 'k=v,flag' body as {k: v, flag: True}."""
    out = {}
    for part in filter(None, body.split(",")):
        if "=" not in part:
            out[part.strip()] = True
            continue
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out
