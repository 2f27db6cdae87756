"""Parse the list-valued factor options of `abtlab run` into typed levels.

Every error names the option and what it accepts.
"""
from __future__ import annotations

import re

from ..errors import ConfigError

__all__ = ["parse_size", "parse_sizes", "parse_ints", "parse_freq", "parse_words", "FreqAxis",
           "MAX_THREADS", "check_real_freq"]

MAX_THREADS = 4096        # abt-iozone --threads and abt-metarates --workers accept 1..4096

_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)[bB]?\s*$")
_MULT = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def parse_size(text, field) -> int:
    if isinstance(text, int) and text > 0:
        return text
    m = _SIZE.match(str(text))
    if not m or int(m.group(1)) <= 0:
        raise ConfigError(field, text, "a positive size such as 4096, 32k, 128k, 1m")
    return int(m.group(1)) * _MULT[m.group(2).lower()]


def _split(text):
    if isinstance(text, (list, tuple)):
        return list(text)
    return [t for t in str(text).split(",") if t.strip()]


def parse_sizes(text, field) -> list[int]:
    items = _split(text)
    if not items:
        raise ConfigError(field, text, "a comma-separated list of sizes such as 128k,1m")
    return [parse_size(t, field) for t in items]


def parse_ints(text, field, lo=1, hi=None) -> list[int]:
    items = _split(text)
    out = []
    for t in items:
        try:
            v = int(str(t).strip())
        except ValueError:
            v = None
        if v is None or v < lo or (hi is not None and v > hi):
            rng = f"integers >= {lo}" + (f" and <= {hi}" if hi is not None else "")
            raise ConfigError(field, text, f"a comma-separated list of {rng}")
        out.append(v)
    if not out:
        raise ConfigError(field, text, "at least one value")
    return out


def parse_words(text, field, allowed=None) -> list[str]:
    items = [str(t).strip() for t in (text if isinstance(text, (list, tuple)) else str(text).split(";"))]
    out = []
    for chunk in items:
        out.extend([chunk] if "=" in chunk else [c.strip() for c in chunk.split(",") if c.strip()])
    if not out:
        raise ConfigError(field, text, "at least one value")
    for w in out:
        if allowed is not None and w not in allowed:
            raise ConfigError(field, w, ", ".join(allowed))
    return out


class FreqAxis:
    """mode: 'emulated' | 'real' | 'native'; levels in GHz (native: one level, the current)."""

    def __init__(self, mode: str, levels: list[float]):
        self.mode, self.levels = mode, levels

    @property
    def f_ref(self) -> float:
        return max(self.levels)

    def __repr__(self):
        return f"FreqAxis({self.mode!r}, {self.levels!r})"


def parse_freq(text, default_mode=None) -> FreqAxis:
    """'emulated:1.6,2.0,3.3' | 'real:1.6,3.3' | 'simulated:1.6,3.3' | 'virtual:1,0.5' | 'native'."""
    accepted = ("emulated:F1,F2,... | real:F1,F2,... | simulated:F1,... (GHz, > 0) | "
                "virtual:F1,... (guest clock: icount 1, 0.5, ... 1/1024; lockstep any GHz) | native")
    if isinstance(text, FreqAxis):
        return text
    if isinstance(text, (list, tuple)):  # Python callers: freq=[1.6, 3.3]
        text = ",".join(str(t) for t in text)
    if isinstance(text, (int, float)):
        text = str(text)
    s = str(text).strip()
    if s == "native":
        return FreqAxis("native", [_native_ghz()])
    mode, sep, body = s.partition(":")
    if not sep and default_mode:
        mode, body, sep = default_mode, s, ":"
    if not sep or mode not in ("emulated", "real", "simulated", "virtual"):
        raise ConfigError("freq", text, accepted)
    levels = []
    for t in body.split(","):
        try:
            v = float(t)
        except ValueError:
            raise ConfigError("freq", text, accepted) from None
        if not (0 < v < 20):
            raise ConfigError("freq", text, accepted)
        levels.append(v)
    if len(set(levels)) != len(levels):
        raise ConfigError("freq", text, "distinct frequencies")
    # virtual levels are checked against the machines (machines.spec.check_virtual_freq):
    # icount takes 1/2^S GHz, the lock-step clock any frequency
    return FreqAxis(mode, levels)


def check_real_freq(axis: FreqAxis, text) -> None:
    """real: frequencies must be ones this machine's cpufreq can pin, checked before any
    run; ConfigError('freq') saying what is possible here."""
    if axis.mode != "real":
        return
    # deferred: cpufreq imports numpy, which a parsed factor level does not need
    from ..system import cpufreq
    ok, why = cpufreq.available()
    if not ok:
        raise ConfigError("freq", text, f"emulated:F1,F2,... or native here (real: needs "
                                        f"cpufreq, and {why})")
    khz = cpufreq.frequencies()
    for f in axis.levels:
        if not khz[0] <= round(f * 1e6) <= khz[-1]:
            raise ConfigError("freq", text, f"real: frequencies from {khz[0] / 1e6:g} to "
                                            f"{khz[-1] / 1e6:g} GHz on this machine")


def _native_ghz() -> float:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return round(float(line.split(":")[1]) / 1000, 3)
    except OSError:
        pass
    return 0.0
