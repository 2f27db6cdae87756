"""Policy specs (strings, as on the command line) to Policy values; see abtlab.policies
for the grammar."""
from __future__ import annotations

from ..errors import ConfigError
from .kdelayjc import KernelPolicy
from .kinds import BatchPolicy, DelayPolicy, NoJournal
from .policy import Policy

__all__ = ["parse", "parse_list", "KINDS"]

# kind -> its class: the one table of policy kinds (a new kind is a class and a line here)
KINDS = {"ext4": Policy, "nojc": NoJournal, "delayjc": DelayPolicy, "batch": BatchPolicy,
         "kdelayjc": KernelPolicy}


def parse(spec: str) -> Policy:
    """Parse one policy spec; ConfigError names the bad field."""
    if isinstance(spec, Policy):
        return spec
    text = str(spec).strip()
    kind, _, body = text.partition(":")
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise ConfigError("policy", spec, "ext4, nojc, delayjc:window=16ms[,max_resets=N], "
                          "delayjc:adaptive, batch:min_us=A,max_us=B")
    return KINDS[kind].from_body(kind, body, spec)


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
