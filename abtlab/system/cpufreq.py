"""Real CPU frequency through cpufreq sysfs: list, pin, and always restore.

Pinning uses, per CPU, the first method the driver allows:

* `userspace` governor + `scaling_setspeed` (acpi-cpufreq, most non-Intel drivers);
* otherwise min = max limits (`scaling_min_freq` = `scaling_max_freq` = f). This is the
  only way under intel_pstate in active mode, which offers just `performance` and
  `powersave`; the governor is set to `performance` so the CPU sits at the limit.

Each CPU's governor and limits are saved first and put back on every exit path through
`abtlab.system.cleanup`; they are also written to a state file in an owned directory, so
that after a kill -9 the next pin or `abtlab cleanup` puts them back (`leftovers`).
`root` (default /sys/devices/system/cpu) lets tests use a fake tree. Frequencies are in
kHz, as sysfs writes them.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from ..errors import ConfigError, UnavailableError
from . import cleanup, leftovers
from ._shell import read, write
from .cpufreq_limits import put_back, set_limits

__all__ = ["available", "frequencies", "cpus", "FrequencyPin", "CPU_ROOT"]

CPU_ROOT = "/sys/devices/system/cpu"
STEP_KHZ = 100_000  # listed step for drivers without a frequency table (intel_pstate)


def cpus(root=CPU_ROOT) -> list[int]:
    """CPUs that have a cpufreq directory, in order."""
    found = [int(m.group(1)) for p in Path(root).glob("cpu[0-9]*")
             if (m := re.fullmatch(r"cpu(\d+)", p.name)) and (p / "cpufreq").is_dir()]
    return sorted(found)


_cpus = cpus  # FrequencyPin's `cpus` argument shadows the function


def _cf(root, cpu) -> Path:
    return Path(root) / f"cpu{cpu}" / "cpufreq"


def available(root=CPU_ROOT) -> tuple[bool, str]:
    """(True, driver and method) when frequencies can be pinned here, else (False, why)."""
    found = cpus(root)
    if not found:
        return False, f"no cpufreq in {root} (no cpu*/cpufreq: the VM or kernel has none)"
    cf = _cf(root, found[0])
    if not os.access(cf / "scaling_max_freq", os.W_OK):
        return False, f"{cf}/scaling_max_freq is not writable (needs root)"
    driver = _maybe(cf / "scaling_driver") or "unknown driver"
    method = "userspace governor" if "userspace" in _governors(cf) else "min=max limits"
    return True, f"cpufreq {driver} on {len(found)} CPUs, pinning by {method}"


def _maybe(path) -> str | None:
    try:
        return read(path)
    except OSError:
        return None


def _governors(cf: Path) -> list[str]:
    return (_maybe(cf / "scaling_available_governors") or "").split()


def frequencies(root=CPU_ROOT) -> list[int]:
    """Frequencies (kHz, ascending) of the first CPU: its table, or a range min..max."""
    found = cpus(root)
    if not found:
        raise UnavailableError(f"no cpufreq in {root}")
    cf = _cf(root, found[0])
    table = _maybe(cf / "scaling_available_frequencies")
    if table:
        return sorted({int(f) for f in table.split()})
    lo, hi = int(read(cf / "cpuinfo_min_freq")), int(read(cf / "cpuinfo_max_freq"))
    steps = list(range(lo, hi, STEP_KHZ))
    return steps + [hi]


def _in_range(root, freq):
    cf = _cf(root, cpus(root)[0])
    lo, hi = int(read(cf / "cpuinfo_min_freq")), int(read(cf / "cpuinfo_max_freq"))
    return lo <= freq <= hi, f"{lo}..{hi} kHz"


class FrequencyPin(cleanup.Undoable):
    """Pin CPUs to one frequency for the `with` block; restore governor and limits."""

    def __init__(self, freq_khz, root=CPU_ROOT, cpus=None, state_dir=None):
        ok, why = available(root)
        if not ok:
            raise UnavailableError(why)
        if state_dir is not None and not os.path.isdir(state_dir):
            raise ConfigError("state_dir", state_dir, "an existing directory")
        self.root, self._state_parent = root, state_dir or "/var/tmp"
        self._state: dict = {}
        self.state_file = None
        self.cpus = list(_cpus(root) if cpus is None else cpus)
        self.freq_khz = self._check(freq_khz)
        self.methods: dict[int, str] = {}
        self._tokens: list[int] = []

    def _check(self, freq):
        if not isinstance(freq, int) or isinstance(freq, bool):
            raise ConfigError("freq", freq, "an integer frequency in kHz")
        known = set(_cpus(self.root))
        bad = [c for c in self.cpus if c not in known]
        if bad or not self.cpus:
            raise ConfigError("cpus", self.cpus, f"CPUs with cpufreq: {sorted(known)}")
        table = _maybe(_cf(self.root, self.cpus[0]) / "scaling_available_frequencies")
        if table:
            listed = sorted(int(f) for f in table.split())
            if freq not in listed:
                raise ConfigError("freq", freq, f"one of {listed} kHz")
        else:
            inside, span = _in_range(self.root, freq)
            if not inside:
                raise ConfigError("freq", freq, span)
        return freq

    def _setup(self):
        # a pin left by a process killed with -9 goes back first, or it would be saved
        # here as the CPUs' own setting
        leftovers.reclaim(roots=(self._state_parent,))
        self._keep_state()
        for cpu in self.cpus:
            self._pin(cpu)

    def _keep_state(self):
        """What the CPUs had, on disk before any change, so that `leftovers` can put it
        back if this process dies without unwinding (kill -9)."""
        d = Path(tempfile.mkdtemp(prefix="abtlab-cpufreq-", dir=self._state_parent))
        self.state_file = d / leftovers.PIN_STATE
        self._undo(lambda: (self.state_file.unlink(missing_ok=True), leftovers.remove_dir(d)),
                   f"remove {d}")
        leftovers.mark(d)

    def _pin(self, cpu):
        cf = _cf(self.root, cpu)
        saved = {k: read(cf / k) for k in ("scaling_governor", "scaling_min_freq",
                                            "scaling_max_freq")}
        self._state[str(cf)] = saved
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._state))
        os.replace(tmp, self.state_file)     # atomic: a kill leaves the old or the new
        self._undo(lambda: put_back(cf, saved), f"restore {cf}")
        if "userspace" in _governors(cf) and (cf / "scaling_setspeed").exists():
            write(cf / "scaling_governor", "userspace")
            write(cf / "scaling_setspeed", self.freq_khz)
            self.methods[cpu] = "userspace"
            return
        if "performance" in _governors(cf):
            write(cf / "scaling_governor", "performance")
        set_limits(cf, self.freq_khz, self.freq_khz)
        self.methods[cpu] = "min=max"

    def describe(self) -> dict:
        """Attributes for a run dataset."""
        cf = _cf(self.root, self.cpus[0])
        return {"freq_mode": "real", "freq_khz": self.freq_khz,
                "cpufreq_driver": _maybe(cf / "scaling_driver") or "unknown",
                "cpufreq_method": ",".join(sorted(set(self.methods.values()))),
                "cpufreq_cpus": ",".join(map(str, self.cpus))}
