"""Policy specs (strings, as on the command line) to Policy values; see abtlab.policies
for the grammar."""
from __future__ import annotations

from ..errors import ConfigError
from .kdelayjc import KIND, parse_kdelayjc
from .policy import KINDS, Policy, parse_items, parse_duration_us

__all__ = ["parse", "parse_list"]


def parse(spec: str) -> Policy:
    """Parse one policy spec; ConfigError names the bad field."""
    if isinstance(spec, Policy):
        return spec
    text = str(spec).strip()
    kind, _, body = text.partition(":")
    kind = kind.strip().lower()
    if kind == KIND:  # the jbd2 patch (guest kernel or a patched host): its own module
        return parse_kdelayjc(text)
    if kind not in KINDS:
        raise ConfigError("policy", spec, "ext4, nojc, delayjc:window=16ms[,max_resets=N], "
                          "delayjc:adaptive, batch:min_us=A,max_us=B")
    kv = parse_items(body, spec)
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
