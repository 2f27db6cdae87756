"""The Policy value every run and the simulator take, and the pieces of its grammar
(durations, key=value bodies) that each kind's parser shares."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ConfigError

__all__ = ["Policy", "parse_duration_us", "format_duration", "parse_items"]

_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
_DUR = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ns|us|ms|s)?\s*$")


def parse_duration_us(text, field="duration") -> float:
    m = _DUR.match(str(text))
    if not m:
        raise ConfigError(field, text, "a non-negative duration such as 500us, 16ms, 1s")
    return float(m.group(1)) * _UNITS[m.group(2) or "us"]


@dataclass(frozen=True)
class Policy:
    """ext4, the stock jbd2 journal, and the base of every other kind: a kind is one
    subclass (abtlab.policies.kinds, .kdelayjc) that overrides where it differs, registered
    in abtlab.policies.parse.KINDS. Run paths, the simulator and the analyses ask these
    properties, never the kind."""
    kind: str = "ext4"
    params: dict = field(default_factory=dict, hash=False, compare=True)

    def __str__(self) -> str:   # a dataset coordinate, a stored point: the canonical spec
        return self.label

    @classmethod
    def from_body(cls, kind: str, body: str, spec) -> Policy:
        """The policy of spec `kind:body`; ConfigError names the bad field."""
        if parse_items(body, spec):
            raise ConfigError(f"policy {kind}", body, "no parameters")
        return cls(kind)

    @property
    def label(self) -> str:
        """Canonical spec string; parse(label) == self."""
        return self.kind

    @property
    def journal(self) -> bool:
        return True

    def mount_options(self) -> str:
        return ""

    # what running it needs: the run paths (abtlab.machines) ask these, not its kind
    @property
    def needs_preload(self) -> bool:
        """Its workload runs under libdelayjc.so (LD_PRELOAD), which records its batches."""
        return False

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
        return {}

    # what the analyses and the simulator ask
    @property
    def window_us(self) -> float | None:
        """The delay before a commit, in us, where it is one option of a delay decision
        (ext4: 0); None for a policy with no fixed window (nojc, batch, adaptive)."""
        return 0.0

    @property
    def sim_mode(self) -> str | None:
        """The simulator's model of it (a key of abtlab.sim.state.POLICY_MODES); None: the
        simulator has none."""
        return "ext4"

    def sim_window(self) -> tuple:
        """The simulator's two numbers for it: (window or min_us, max_us), in us."""
        return 0.0, 0.0

    @property
    def tunes_window(self) -> bool:
        """Its window is tuned while it runs (delayjc:adaptive): the simulator's gain applies."""
        return False


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
