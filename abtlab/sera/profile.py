"""Profiles of I/O patterns across frequencies and the target-frequency rule of Ge et al. (CCGrid 2012).

For each pattern and each available frequency a profile holds the time and average power
of one access (Ge et al., CCGrid 2012, Table III). The target frequency is chosen in two steps (Sec.
III.B.3): accesses shorter than a time threshold (type I) keep the highest frequency,
because a transition would cost more than it saves; longer ones (type II) take the
frequency of smallest energy-delay product, EDP = energy * time = power * time^2.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from . import _csv

__all__ = ["ProfilePoint", "Profile", "load_profile", "profile_pattern", "target_frequency",
           "access_type", "DEFAULT_THRESHOLD_S", "MODES"]

# The paper does not state its threshold; its type I example lasts 0.1 ms and its type II
# example 16 ms, so 1 ms separates them. A table records the threshold it was built with.
DEFAULT_THRESHOLD_S = 1e-3
MODES = ("measured", "emulated", "modelled", "simulated", "published")


@dataclass(frozen=True)
class ProfilePoint:
    freq_ghz: float
    time_s: float
    power_w: float

    @property
    def energy_j(self) -> float:
        return self.power_w * self.time_s

    @property
    def edp(self) -> float:
        """Energy-delay product, J*s."""
        return self.energy_j * self.time_s


@dataclass
class Profile:
    """One pattern's points; `mode` says where time and power came from (MODES)."""
    label: str
    points: list
    time_mode: str
    power_mode: str
    pattern: object = None        # an IOPattern when the profile is to become a table entry
    given_type: str | None = None  # "I" | "II" when the source states it

    def __post_init__(self):
        for name in ("time_mode", "power_mode"):
            if getattr(self, name) not in MODES:
                raise ConfigError(name, getattr(self, name), " | ".join(MODES))
        if not self.points:
            raise ConfigError("points", self.label, "at least one frequency")
        self.points = sorted(self.points, key=lambda p: p.freq_ghz)


def access_type(profile: Profile, threshold_s=DEFAULT_THRESHOLD_S) -> str:
    """'I' when one access at the highest frequency is shorter than threshold_s, else 'II'."""
    return "I" if profile.points[-1].time_s < threshold_s else "II"


def target_frequency(profile: Profile, threshold_s=DEFAULT_THRESHOLD_S, use_given_type=False):
    """(target GHz, access type): highest for type I, min-EDP for type II."""
    kind = profile.given_type if use_given_type and profile.given_type else \
        access_type(profile, threshold_s)
    if kind == "I":
        return profile.points[-1].freq_ghz, kind
    best = min(profile.points, key=lambda p: (p.edp, -p.freq_ghz))
    return best.freq_ghz, kind


def profile_pattern(label, time_at, freqs, power_at, time_mode, power_mode, pattern=None):
    """Profile by calling time_at(f) -> seconds and power_at(f) -> watts at each f."""
    points = [ProfilePoint(float(f), float(time_at(f)), float(power_at(f))) for f in freqs]
    return Profile(label, points, time_mode, power_mode, pattern)


def _num(row, name, lineno, path):
    try:
        value = float(row[name])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"{path}:{lineno}:{name}", row.get(name), "a number") from None
    if not value > 0:
        raise ConfigError(f"{path}:{lineno}:{name}", row[name], "a number > 0")
    return value


def load_profile(path, time_mode="published", power_mode="published") -> dict:
    """Read a profile CSV (pattern, [type], freq_ghz, time_ms, avg_power_w; '#' comments).

    Returns {pattern label: Profile}, in file order."""
    _, rows, header = _csv.read(path)
    _csv.need_columns(path, header, ("pattern", "freq_ghz", "time_ms", "avg_power_w"))
    out: dict = {}
    for lineno, row in rows:
        label = row["pattern"]
        if not label:
            raise ConfigError(f"{path}:{lineno}:pattern", label, "a pattern label")
        given = row.get("type") or None
        if given not in (None, "I", "II"):
            raise ConfigError(f"{path}:{lineno}:type", given, "I | II | empty")
        pt = ProfilePoint(_num(row, "freq_ghz", lineno, path),
                          _num(row, "time_ms", lineno, path) / 1e3,
                          _num(row, "avg_power_w", lineno, path))
        if label not in out:
            out[label] = Profile(label, [pt], time_mode, power_mode, given_type=given)
        else:
            out[label].points = sorted(out[label].points + [pt], key=lambda p: p.freq_ghz)
    if not out:
        raise ConfigError(str(path), "no rows", "at least one profile row")
    return out
