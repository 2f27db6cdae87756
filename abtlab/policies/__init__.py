"""ABT policy specs, shared by real runs and the simulator.

Grammar (one spec per string):
    ext4                              default jbd2 journal, data=ordered
    nojc                              no journal (mkfs.ext4 -O ^has_journal)
    delayjc:window=16ms,max_resets=64[,max_age=1s]   fixed-window group commit
    delayjc:adaptive[,max_resets=N,max_age=T]        window tuned at run time
    kdelayjc:window=2ms,max_resets=8  the same inside jbd2 (backends/kernel/delayjc.patch)
    batch:min_us=A,max_us=B           ext4 min_batch_time/max_batch_time mount options
Durations accept ns, us, ms, s (a bare number is microseconds).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ConfigError

__all__ = ["Policy", "parse", "parse_list", "parse_duration_us", "KINDS"]

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

    @property
    def label(self) -> str:
        """Canonical spec string; parse(label) == self."""
        p = self.params
        if self.kind in ("ext4", "nojc"):
            return self.kind
        if self.kind == "batch":
            return f"batch:min_us={p['min_us']:g},max_us={p['max_us']:g}"
        head = "delayjc:adaptive" if p["mode"] == "adaptive" else f"delayjc:window={_dur(p['window_us'])}"
        return f"{head},max_resets={p['max_resets']},max_age={_dur(p['max_age_us'])}"

    @property
    def journal(self) -> bool:
        return self.kind != "nojc"

    def mount_options(self) -> str:
        if self.kind == "batch":
            return f"min_batch_time={int(self.params['min_us'])},max_batch_time={int(self.params['max_us'])}"
        return ""

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


def _dur(us: float) -> str:
    for unit, scale in (("s", 1e6), ("ms", 1e3)):
        if us >= scale and us % scale == 0:
            return f"{us / scale:g}{unit}"
    return f"{us:g}us"


def _kv(body, spec):
    out = {}
    for part in filter(None, body.split(",")):
        if "=" not in part:
            out[part.strip()] = True
            continue
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def parse(spec: str) -> Policy:
    """Parse one policy spec; ConfigError names the bad field."""
    if isinstance(spec, Policy):
        return spec
    text = str(spec).strip()
    kind, _, body = text.partition(":")
    kind = kind.strip().lower()
    if kind == "kdelayjc":  # the jbd2 patch (guest kernel or a patched host): its own module
        from ..backends.kdelayjc import parse_kdelayjc
        return parse_kdelayjc(text)
    if kind not in KINDS:
        raise ConfigError("policy", spec, "ext4, nojc, delayjc:window=16ms[,max_resets=N], "
                          "delayjc:adaptive, batch:min_us=A,max_us=B")
    kv = _kv(body, spec)
    if kind in ("ext4", "nojc"):
        if kv:
            raise ConfigError(f"policy {kind}", body, "no parameters")
        return Policy(kind)
    if kind == "batch":
        unknown = set(kv) - {"min_us", "max_us"}
        if unknown or not {"min_us", "max_us"} <= set(kv):
            raise ConfigError("policy batch", body, "min_us=A,max_us=B (microseconds)")
        lo = parse_duration_us(kv["min_us"], "policy batch.min_us")
        hi = parse_duration_us(kv["max_us"], "policy batch.max_us")
        if hi < lo:
            raise ConfigError("policy batch.max_us", kv["max_us"], f">= min_us ({lo:g})")
        return Policy("batch", {"min_us": lo, "max_us": hi})
    return _parse_delayjc(kv, spec)


def _parse_delayjc(kv, spec):
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
    return Policy("delayjc", params)


def parse_list(text) -> list[Policy]:
    """Parse a ';'-separated list (or a Python list) of specs. Commas belong to specs,
    so on the command line plain kinds may also be comma-separated: ext4,nojc."""
    if isinstance(text, (list, tuple)):
        return [parse(t) for t in text]
    parts = [p for p in str(text).split(";") if p.strip()]
    out = []
    for p in parts:
        if ":" not in p and "," in p:
            out.extend(parse(q) for q in p.split(",") if q.strip())
        else:
            out.append(parse(p))
    if not out:
        raise ConfigError("policy", text, "at least one policy")
    return out
