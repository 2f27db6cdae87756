"""Energy: measured through RAPL where the machine has it, otherwise a labelled power model.

Measured sources, first readable wins:
* powercap sysfs: /sys/class/powercap/intel-rapl:N/energy_uj (package zones; subzones
  such as intel-rapl:0:0 are inside their package and are not added again). The counter
  wraps at max_energy_range_uj; a reading lower than the previous one adds one range.
  Sample at least once per wrap period (minutes at full load) for long runs.
* `perf stat -a -e power/energy-pkg/` when the power PMU is listed in sysfs.
Neither exists on VMs; then energy comes from `PowerModel`, P(f) = P_static + u*c*f*V(f)^2,
whose parameters go into every dataset it touches, with energy_mode="modelled".
"""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigError, RunError, UnavailableError

__all__ = ["POWERCAP_ROOT", "PERF_EVENTS_ROOT", "RaplZone", "rapl_zones", "delta_uj",
           "RaplMeter", "perf_available", "parse_perf_stat", "PerfMeter", "energy_source",
           "PowerModel", "sera_io_node_model", "attach_energy", "ENERGY_MODES"]

POWERCAP_ROOT = "/sys/class/powercap"
PERF_EVENTS_ROOT = "/sys/bus/event_source/devices/power"
ENERGY_MODES = ("measured", "modelled")


@dataclass(frozen=True)
class RaplZone:
    name: str
    path: Path
    max_range_uj: int

    def read_uj(self) -> int:
        return int((self.path / "energy_uj").read_text().strip())


def rapl_zones(root=POWERCAP_ROOT) -> list:
    """Readable package-level RAPL zones under root (empty when there are none)."""
    zones = []
    for d in sorted(Path(root).glob("intel-rapl:*")):
        if not re.fullmatch(r"intel-rapl:\d+", d.name):
            continue
        try:
            z = RaplZone((d / "name").read_text().strip() if (d / "name").exists() else d.name,
                         d, int((d / "max_energy_range_uj").read_text().strip()))
            z.read_uj()
        except (OSError, ValueError):
            continue  # unreadable (not root, or locked down since CVE-2020-8694): skip it
        zones.append(z)
    return zones


def delta_uj(before: int, after: int, max_range_uj: int) -> int:
    """Energy between two readings of one counter, across at most one wrap."""
    if after >= before:
        return after - before
    return after + max_range_uj - before


class RaplMeter:
    """`with RaplMeter() as m: ...; m.joules` (sum of package zones, measured)."""

    def __init__(self, root=POWERCAP_ROOT):
        self.zones = rapl_zones(root)
        if not self.zones:
            raise UnavailableError(f"no readable intel-rapl:* zone under {root}")
        self.total_uj = 0
        self._last = None

    def sample(self):
        """Read every zone and add the energy since the last sample."""
        now = [z.read_uj() for z in self.zones]
        if self._last is not None:
            self.total_uj += sum(delta_uj(b, a, z.max_range_uj)
                                 for b, a, z in zip(self._last, now, self.zones))
        self._last = now
        return self.total_uj

    def __enter__(self):
        self.sample()
        return self

    def __exit__(self, *exc):
        self.sample()
        return False

    @property
    def joules(self) -> float:
        return self.total_uj / 1e6

    def describe(self) -> dict:
        return {"energy_mode": "measured", "energy_source": "rapl powercap: " +
                ",".join(z.name for z in self.zones)}


def perf_available(events_root=PERF_EVENTS_ROOT) -> tuple:
    if not (Path(events_root) / "events" / "energy-pkg").exists():
        return False, f"no power/energy-pkg event in {events_root}"
    if not shutil.which("perf"):
        return False, "perf is not on PATH"
    return True, "perf power/energy-pkg"


_PERF_LINE = re.compile(r"^\s*([0-9.]+),(Joules|J)?,power/energy-pkg/", re.MULTILINE)


def parse_perf_stat(text: str) -> float:
    """Joules from `perf stat -x, -e power/energy-pkg/` output."""
    m = _PERF_LINE.search(text)
    if not m:
        raise RunError(f"no power/energy-pkg count in perf output: {text.strip()[:200]!r}")
    return float(m.group(1))


class PerfMeter:
    """System-wide package energy by a `perf stat` process stopped with SIGINT."""

    def __init__(self, events_root=PERF_EVENTS_ROOT):
        ok, why = perf_available(events_root)
        if not ok:
            raise UnavailableError(why)
        self.joules = None
        self._proc = None

    def __enter__(self):
        self._proc = subprocess.Popen(["perf", "stat", "-a", "-x,", "-e", "power/energy-pkg/",
                                       "--", "sleep", "1000000"], stderr=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, text=True)
        return self

    def __exit__(self, *exc):
        self._proc.send_signal(signal.SIGINT)
        _, err = self._proc.communicate(timeout=30)
        self.joules = parse_perf_stat(err)
        return False

    def describe(self) -> dict:
        return {"energy_mode": "measured", "energy_source": "perf stat power/energy-pkg/"}


def energy_source(root=POWERCAP_ROOT, events_root=PERF_EVENTS_ROOT) -> tuple:
    """('rapl' | 'perf' | 'model', reason)."""
    if rapl_zones(root):
        return "rapl", f"powercap zones under {root}"
    ok, why = perf_available(events_root)
    if ok:
        return "perf", why
    return "model", f"no RAPL ({root}) and {why}: energy is modelled"


@dataclass(frozen=True)
class PowerModel:
    """P(f, u) = p_static_w + u * c * f * V(f)^2 with V(f) = v0 + kv * f (f in GHz).

    u is the CPU utilisation (0..1). The defaults of V are a generic DVFS voltage line
    (about 0.96 V at 0.8 GHz, 1.3 V at 2.5 GHz), an assumption, not a measurement."""
    p_static_w: float
    c_w: float
    v0: float = 0.8
    kv: float = 0.2
    source: str = "parameters given"

    def __post_init__(self):
        for name in ("p_static_w", "c_w", "v0", "kv"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v < 0:
                raise ConfigError(f"power_model.{name}", v, "a number >= 0")

    def power(self, freq_ghz, util=1.0):
        v = self.v0 + self.kv * freq_ghz
        return self.p_static_w + util * self.c_w * freq_ghz * v * v

    @classmethod
    def fit(cls, freqs_ghz, powers_w, v0=0.8, kv=0.2, source="fitted"):
        """Least-squares p_static and c from (f, P) pairs measured at full utilisation."""
        # deferred: numpy only for the fit; reading power needs none
        import numpy as np
        f = np.asarray(freqs_ghz, float)
        a = np.column_stack([np.ones_like(f), f * (v0 + kv * f) ** 2])
        (p0, c), *_ = np.linalg.lstsq(a, np.asarray(powers_w, float), rcond=None)
        if p0 < 0 or c < 0:
            raise ConfigError("powers_w", list(powers_w), "powers that rise with frequency")
        return cls(float(p0), float(c), v0, kv, source)

    def attrs(self) -> dict:
        """Dataset attributes: every parameter, and the label."""
        d = {f"power_model_{k}": v for k, v in asdict(self).items()}
        d["power_model"] = "P(f,u) = p_static_w + u*c_w*f*(v0+kv*f)^2, f in GHz"
        d["energy_mode"] = "modelled"
        return d


# Ge et al. (CCGrid 2012) Table III (b): average nodal power of a 2 MB access at 0.8, 1.3, 2.5 GHz.
SERA_IO_TABLE3_POWER = ((0.8, 141.0), (1.3, 152.0), (2.5, 183.0))


def sera_io_node_model() -> PowerModel:
    """A whole-node model fitted to Ge et al.'s (CCGrid 2012) Table III powers (a modelled node)."""
    f, p = zip(*SERA_IO_TABLE3_POWER)
    return PowerModel.fit(f, p, source="fit to Ge et al. (CCGrid 2012) Table III(b) nodal power")


def attach_energy(ds, model: PowerModel, util=1.0, time_var="elapsed"):
    """ds with power_w, energy_j and edp from `time_var` and the freq_ghz coordinate.

    Every added variable says "modelled" in long_name; the model goes into ds.attrs."""
    if time_var not in ds:
        raise ConfigError("time_var", time_var, ", ".join(map(str, ds.data_vars)))
    if "freq_ghz" not in ds.coords:
        raise ConfigError("freq_ghz", None, "a dataset with a freq_ghz coordinate")
    power = model.power(ds["freq_ghz"], util)
    energy = power * ds[time_var]
    out = ds.assign(power_w=power.assign_attrs(units="W", long_name="power (modelled)"),
                    energy_j=energy.assign_attrs(units="J", long_name="energy (modelled)"),
                    edp=(energy * ds[time_var]).assign_attrs(
                        units="J s", long_name="energy-delay product (modelled energy)"))
    out.attrs.update(model.attrs())
    out.attrs["energy_util"] = float(util)
    return out
