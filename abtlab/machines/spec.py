"""The machine a point runs on: the host, or the qemu TCG guest (abtlab.machines.guest).

`--machine host` (the default) is today's behaviour. `--machine guest[:key=value,...]`:

* `clock=virtual|lockstep|host` (virtual): `virtual` boots with `-icount shift=S,sleep=off`,
  so guest time advances by instructions executed (one every 2^S ns) and jumps to the next
  guest timer when every vCPU is idle; icount runs all vCPUs on one host thread and their
  instructions share that one stream. `lockstep` is the paper's machine: every vCPU runs
  at the clock `mhz=` whatever the others do (abtlab's qemu patch, backends/kernel/qemu-lockstep:
  each round every vCPU runs up to `quantum=` instructions from the same start and the
  clock advances by the longest run; all idle jumps to the next timer as icount does).
  `host` keeps multi-threaded TCG on the host clock.
* `cpus=N` (1): virtual CPUs, 1 to 4. Under `clock=virtual` they take turns on one host
  thread (qemu's round-robin TCG), so 4 busy vCPUs each run at a quarter of the
  instruction rate. One vCPU repeats exactly; several usually do, but not always (attr
  `repeatable`: the host can force qemu to switch vCPUs at an instruction it picks). More than one needs qemu 8+ (qemu 7.2's icount guest hangs bringing
  up the second vCPU): abtlab.machines.guest.qemu() finds or fetches one, and a boot on an
  older qemu is refused naming `guest:cpus`.
* `kernel=NAME` (6.1): a named guest kernel build: `6.1`, its preset `6.1-legacy`, or
  `3.4.2`, the paper's own kernel (docs/journal/kernel-3.4.2.md), whose disk serves one request
  at a time (`depth=1` only).
* `shift=S` (0): icount shift, 0 to 10 (virtual clock only).
* `mhz=F` (1000) and `quantum=Q` (10000): the lock-step clock's rate (one instruction a
  cycle: 3300 = 0.303 ns an instruction) and its round, in instructions (lockstep only).
* `mem=MB` (1024): guest memory; the in-guest disk lives in it (null_blk memory_backed).
* `depth=N` (1): hardware queue depth of the in-guest disk (1 = one request at a time).
* the kernel knobs of abtlab.machines.kernel_knobs (`legacy=`, `sched=`, `iosched=`,
  `bfq=`), kept as written and checked by its `parse_knobs` when the spec is parsed.

Lists: `;` separates specs (commas belong to a spec); plain names may also be
comma-separated (`host,guest`).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import cached_property

from ..errors import ConfigError
from .availability import Availability
from .kernel_knobs import KNOB_KEYS, KernelKnobs, parse_knobs
from .kernels import KERNELS, GuestKernel, check_kernels, guest_kernel

__all__ = ["Machine", "HOST", "parse_machine", "parse_machines", "KERNELS", "KNOB_KEYS",
           "CLOCKS", "FIELD", "machine_coords", "at_virtual_freq", "check_virtual_freq",
           "VIRTUAL_REF_GHZ"]

FIELD = "--machine"
CLOCKS = ("virtual", "lockstep", "host")
_DEFAULTS = {"clock": "virtual", "cpus": 1, "kernel": "6.1", "shift": 0, "mem": 1024, "depth": 1,
             "mhz": 1000, "quantum": 10000}
_RANGES = {"cpus": (1, 4), "shift": (0, 10), "mem": (256, 16384), "depth": (1, 256),
           "mhz": (50, 10000), "quantum": (100, 10_000_000)}
_LOCKSTEP_ONLY = ("mhz", "quantum")
_ACCEPTED = ("host | guest[:clock=virtual|lockstep|host,cpus=1..4,"
             "kernel=NAME,shift=0..10,mem=256..16384,depth=1..256,mhz=50..10000,"
             "quantum=100..10000000" + "".join(f",{k}=..." for k in KNOB_KEYS) + "]")


@dataclass(frozen=True)
class Machine:
    kind: str = "host"              # "host" | "guest"
    clock: str = "host"             # "virtual" | "host"
    cpus: int = 0                   # guest vCPUs (0 on the host: not set by abtlab)
    kernel: str = ""                # guest kernel name ("" on the host: the running one)
    shift: int = 0                  # icount shift (virtual clock)
    mem: int = 0                    # guest memory, MiB
    depth: int = 1                  # in-guest disk hardware queue depth
    knobs: tuple = field(default=())  # (key, value) of KNOB_KEYS, as written
    mhz: int = 1000                 # lock-step clock rate, MHz (one instruction a cycle)
    quantum: int = 10000            # lock-step round, instructions

    @property
    def is_guest(self) -> bool:
        return self.kind == "guest"

    # what the machine implies, worked out once per Machine (a frozen dataclass keeps
    # cached_property's values in its __dict__)
    @cached_property
    def guest_kernel(self) -> GuestKernel | None:
        """Its guest kernel's row (abtlab.machines.kernels), None on the host."""
        return guest_kernel(self.kernel) if self.is_guest else None

    @cached_property
    def kernel_knobs(self) -> KernelKnobs | None:
        """Its kernel's knobs, the spec's items over the kernel's preset; None on the host."""
        return parse_knobs(self.kernel, **dict(self.knobs)) if self.is_guest else None

    @property
    def isolated_clock(self) -> bool:
        """Whether nothing else running on the host changes what it measures: a guest on
        the virtual or lock-step clock (a clock=host guest is timed by the host)."""
        return self.is_guest and self.clock in ("virtual", "lockstep")

    @property
    def lockstep(self) -> bool:
        return self.is_guest and self.clock == "lockstep"

    def available(self) -> Availability:
        """Can it run here? The host: yes, as far as the machine goes (each driver says
        what it needs besides); a guest: can qemu boot it here."""
        # deferred: a simulated run parses its machine but never boots one; qemu's module
        # (tarfile, the guest's disk and kernel knobs) is 0.07 CPU s more in a new process
        from . import guest
        return Availability(*guest.available()) if self.is_guest else Availability(True)

    def check(self) -> None:
        """Before any point runs: ConfigError when its kernel cannot be built here."""
        if self.is_guest:
            check_kernels([self])

    def __str__(self) -> str:   # a dataset coordinate, a stored point: the canonical spec
        return self.label

    @property
    def label(self) -> str:
        """The canonical spec: keys that differ from the defaults, in a fixed order."""
        if not self.is_guest:
            return "host"
        parts = [f"{k}={getattr(self, k)}" for k in _DEFAULTS if getattr(self, k) != _DEFAULTS[k]
                 and (self.lockstep or k not in _LOCKSTEP_ONLY)]
        parts += [f"{k}={v}" for k, v in self.knobs]
        return "guest" + (":" + ",".join(parts) if parts else "")

    @property
    def ns_per_insn(self) -> float:
        """Virtual nanoseconds per guest instruction (icount, lock-step), 0 on the host clock."""
        if self.lockstep:
            return 1000.0 / self.mhz
        return 2 ** self.shift if self.clock == "virtual" else 0

    def attrs(self) -> dict:
        """Dataset attrs describing the machine (str values)."""
        if not self.is_guest:
            return {"machine": "host", "clock": "host"}
        out = {"machine": self.label, "clock": self.clock, "guest_cpus": str(self.cpus),
               "guest_kernel_name": self.kernel, "guest_disk_queue_depth": str(self.depth)}
        if self.clock == "virtual":
            out["icount"] = (f"-icount shift={self.shift},sleep=off: one guest instruction = "
                             f"{2 ** self.shift} ns of virtual time, shared by all {self.cpus} "
                             f"vCPUs on one host thread")
        if self.lockstep:
            out["lockstep"] = (f"-icount shift=0,sleep=off,lockstep={self.quantum},mhz={self.mhz}: "
                               f"each of {self.cpus} vCPUs runs at {self.mhz / 1000:g} GHz "
                               f"(one instruction a cycle, {1000 / self.mhz:.4g} ns) whatever the "
                               f"others do: rounds of up to {self.quantum} instructions per vCPU "
                               f"from one start, the clock advanced by the longest run "
                               f"(abtlab's qemu patch, backends/kernel/qemu-lockstep.patch)")
            out["lockstep_quantum_insns"] = str(self.quantum)
            out["cpu_clock_ghz"] = f"{self.mhz / 1000:g}"
        out["repeatable"] = self.repeatable
        return out

    @property
    def repeatable(self) -> str:
        """Whether a rerun gives the same numbers, and why not when it may not."""
        if not self.isolated_clock:
            return "no: guest time is the host's clock"
        if self.cpus == 1:
            return "exact: the same kernel build, qemu and inputs give the same op records"
        if self.lockstep:
            return ("exact: lock-step rounds give every vCPU its whole budget whatever made it "
                    "stop, so the host's timing does not reach the interleaving")
        return ("usually: qemu's round-robin moves on to the next vCPU when the host forces "
                "the running one out (an RCU grace period or main-loop work on a slow host), "
                "at an instruction the host picks, which changes how the vCPUs interleave")


HOST = Machine()


def _int(key, value, spec):
    lo, hi = _RANGES[key]
    try:
        n = int(str(value).strip())
    except ValueError:
        n = None
    if n is None or not lo <= n <= hi:
        raise ConfigError(f"{FIELD} guest:{key}", spec, f"{key}= an integer from {lo} to {hi}")
    return n


def _items(body, spec) -> dict:
    out = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not value.strip():
            raise ConfigError(f"{FIELD} guest:{key}", spec, "key=value items: " + _ACCEPTED)
        if key not in _DEFAULTS and key not in KNOB_KEYS:
            raise ConfigError(f"{FIELD} guest:{key}", spec, _ACCEPTED)
        if key in out:
            raise ConfigError(f"{FIELD} guest:{key}", spec, "each key once")
        out[key] = value.strip()
    return out


def parse_machine(spec) -> Machine:
    """One spec -> Machine; ConfigError naming `--machine` and the key."""
    if isinstance(spec, Machine):
        return spec
    text = str(spec).strip()
    kind, sep, body = text.partition(":")
    kind = kind.strip().lower()
    if kind == "host" and not body.strip():
        return HOST
    if kind != "guest":
        raise ConfigError(FIELD, spec, _ACCEPTED)
    items = {**_DEFAULTS, **_items(body, text)}
    if items["clock"] not in CLOCKS:
        raise ConfigError(f"{FIELD} guest:clock", text, " | ".join(CLOCKS))
    if items["kernel"] not in KERNELS:
        raise ConfigError(f"{FIELD} guest:kernel", text, " | ".join(KERNELS))
    nums = {k: _int(k, items[k], text) for k in _RANGES}
    if items["clock"] == "host" and nums["shift"] != 0:
        raise ConfigError(f"{FIELD} guest:shift", text, "shift only with clock=virtual")
    _check_lockstep(items, nums, text)
    row = KERNELS[items["kernel"]]
    if nums["depth"] > row.max_depth:
        raise ConfigError(f"{FIELD} guest:depth", text, f"depth={row.max_depth} with "
                          f"kernel={row.name} ({row.depth_why})")
    knobs = tuple((k, items[k]) for k in KNOB_KEYS if k in items)
    m = Machine("guest", items["clock"], nums["cpus"], items["kernel"], nums["shift"],
                nums["mem"], nums["depth"], knobs, nums["mhz"], nums["quantum"])
    m.kernel_knobs    # ConfigError naming the knob now, not when a point runs
    return m


def _check_lockstep(items: dict, nums: dict, text: str) -> None:
    """mhz= and quantum= belong to the lock-step clock, which has no shift. (Its qemu runs up
    to 64 vCPUs; the guest kernels are built with NR_CPUS=4.)"""
    lockstep = items["clock"] == "lockstep"
    for key in _LOCKSTEP_ONLY:
        if not lockstep and nums[key] != _DEFAULTS[key]:
            raise ConfigError(f"{FIELD} guest:{key}", text, f"{key} only with clock=lockstep")
    if lockstep and nums["shift"] != 0:
        raise ConfigError(f"{FIELD} guest:shift", text, "no shift with clock=lockstep (mhz= sets its rate)")


VIRTUAL_REF_GHZ = 1.0   # freq virtual:F = icount shift log2(REF/F): one instruction every 1/F ns
_SHIFT_GHZ = {1.0 / 2 ** s for s in range(11)}


def at_virtual_freq(m: Machine, freq_ghz: float) -> Machine:
    """The machine that runs at freq_ghz (`--freq virtual:...`): on the lock-step clock the
    frequency itself (mhz), on the virtual clock the icount shift log2(REF/F)."""
    if m.lockstep:
        return dataclasses.replace(m, mhz=round(float(freq_ghz) * 1000))
    shift = round(math.log2(VIRTUAL_REF_GHZ / float(freq_ghz)))
    return dataclasses.replace(m, shift=shift)


def check_virtual_freq(machines, levels=()) -> None:
    """`--freq virtual:...` sets each guest's clock: only guests on the virtual clock
    without a shift of their own (levels 1/2^S GHz) or on the lock-step clock (any GHz
    from 0.05 to 10, the frequency itself)."""
    for m in map(parse_machine, machines):
        if not m.is_guest or m.clock not in ("virtual", "lockstep") or m.shift:
            raise ConfigError("freq", f"virtual with --machine {m.label}",
                              "virtual:... only with guest machines on clock=virtual (no shift=) "
                              "or clock=lockstep")
        if m.lockstep and m.mhz != _DEFAULTS["mhz"]:
            raise ConfigError("freq", f"virtual with --machine {m.label}",
                              "virtual:... sets mhz=: leave it out of the machine")
        bad = [v for v in levels if (v not in _SHIFT_GHZ if m.clock == "virtual"
                                     else not 0.05 <= v <= 10)]
        if bad:
            raise ConfigError("freq", f"virtual:{','.join(f'{v:g}' for v in bad)} with --machine "
                              f"{m.label}", "clock=virtual: levels 1/2^S GHz for S = 0..10 (icount "
                              "shift S); clock=lockstep: 0.05 to 10 GHz")


def machine_coords(labels) -> dict:
    """Coords along the machine dim: its clock and kernel, so mixed datasets say per level."""
    ms = [parse_machine(m) for m in labels]
    return {"clock": ("machine", [m.clock for m in ms]),
            "kernel": ("machine", [_kernel_label(m) for m in ms])}


def _kernel_label(m: Machine) -> str:
    return m.kernel_knobs.label if m.is_guest else "host"


def parse_machines(text) -> list[Machine]:
    """A ';'-separated list (or a Python list) of specs; plain names may be comma-separated."""
    if isinstance(text, (list, tuple)):
        parts = list(text)
    else:
        parts = []
        for chunk in filter(str.strip, str(text).split(";")):
            parts.extend(chunk.split(",") if ":" not in chunk else [chunk])
    out = [parse_machine(p) for p in parts if str(p).strip()]
    if not out:
        raise ConfigError(FIELD, text, _ACCEPTED)
    labels = [m.label for m in out]
    if len(set(labels)) != len(labels):
        raise ConfigError(FIELD, text, "distinct machines")
    return out
