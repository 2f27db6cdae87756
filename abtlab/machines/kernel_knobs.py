"""Run-time knobs of the guest kernel that restore Linux 3.4 semantics in Linux 6.1.

Each knob is off (stock 6.1) unless asked for, and is written in the guest after /proc,
/sys and debugfs are mounted and before the workload (see docs/journal/kernel-history.md):

- legacy `shadow_wait`: jbd2 `legacy_shadow_wait`, 3.4's `do_get_write_access` sleeping on a
  BJ_Shadow buffer until the commit refiles it (removed by b34090e5e22a, 3.11);
- legacy `write_handle`: ext4 `legacy_write_handle`, 3.4's journal handle per page in the
  delalloc write_begin/write_end (removed by cc883236b792, 5.15);
- legacy `dioread_lock`: the ext4 mount option of that name, 3.4's default write-back
  (blocks allocated written, in the transaction running when write-back starts), which
  244adf6426ee "ext4: make dioread_nolock the default" (5.6) replaced with unwritten
  extents converted when the I/O completes, in whatever transaction runs then;
- sched `cfs34`: 3.4's CFS settings on 4 CPUs (latency 18 ms, min granularity 2.25 ms,
  wakeup granularity 3 ms) in debugfs /sys/kernel/debug/sched; `default` writes nothing;
  `cfs34xK` (K = 2..32) those three times K: the guest's CPU runs K times slower per core
  than the paper's, so a write op that fits in 3.4's slice on the paper's machine would
  straddle it here; scaling the slices keeps that ratio (docs/measuring-as-the-paper.md);
- iosched: the block device's elevator, `none`, `mq-deadline` or `bfq` (CFQ's successor);
- bfq: BFQ's own tunables (`slice_idle=0+low_latency=0`), only with iosched `bfq`, written
  in queue/iosched after the elevator is set; unnamed tunables keep BFQ's defaults.

The preset `6.1-legacy` turns every knob on; explicit items override the preset.

`3.4.2` is the paper's own kernel (docs/journal/kernel-3.4.2.md): its semantics are the ones the
legacy items restore, so `legacy=` is refused there; `sched=cfs34` writes the same values
into 3.4's sysctls (/proc/sys/kernel/sched_*_ns: 3.4 scales 6 / 0.75 / 1 ms by 1 + ilog2(CPUs),
so one CPU boots with 6 / 0.75 / 1 ms and four with 18 / 2.25 / 3); its elevators are
3.4's: cfq (its default, the paper's), noop, deadline.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..errors import ConfigError
from ..data.schema import ATTR_BFQ, ATTR_KERNEL_PRESET, ATTR_IOSCHED, ATTR_LEGACY, ATTR_SCHED
from .kernels import KERNELS, LEGACY_ITEMS, LEGACY_KNOBS, LEGACY_MOUNT, guest_kernel

__all__ = ["KNOB_KEYS", "SCHEDS", "sched_settings", "BFQ_TUNABLES",
           "KernelKnobs", "parse_knobs", "shell_script", "parse_readback"]

KNOB_KEYS = ("legacy", "sched", "iosched", "bfq")

# 3.4 on 4 CPUs: 6 ms / 0.75 ms / 1 ms, each times 1 + ilog2(4) (SCHED_TUNABLESCALING_LOG)
SCHEDS = {"default": (),
          "cfs34": (("latency_ns", "18000000"), ("min_granularity_ns", "2250000"),
                    ("wakeup_granularity_ns", "3000000"))}
SCHED_SCALES = range(2, 33)     # cfs34xK; 3.4's sysctls cap each value at 1 s (18 ms x 55)
SCHED_ACCEPTED = "default | cfs34 | cfs34xK (K = 2..32: 3.4's settings times K)"


def sched_settings(name: str) -> tuple:
    """(variable, value in ns) of a sched preset: SCHEDS, or cfs34xK (3.4's times K)."""
    if isinstance(name, str) and name in SCHEDS:
        return SCHEDS[name]
    base, _, k = name.partition("x") if isinstance(name, str) else ("", "", "")
    if base != "cfs34" or not k.isdigit() or int(k) not in SCHED_SCALES:
        raise ConfigError(_FIELD.format("sched"), name, SCHED_ACCEPTED)
    return tuple((var, str(int(v) * int(k))) for var, v in SCHEDS["cfs34"])
# BFQ's tunables (block/bfq-iosched.c in 6.1; ms unless _us) in the order they are written,
# each with the range the kernel keeps as written (it clamps outside it, which would not
# read back). strict_guarantees comes first: switching it on raises slice_idle to 8 ms,
# which a slice_idle of the spec must then override.
_INT_MAX, _UINT_MAX = 2 ** 31 - 1, 2 ** 32 - 1
BFQ_TUNABLES = {"strict_guarantees": (0, 1), "low_latency": (0, 1),
                "slice_idle": (0, _INT_MAX), "slice_idle_us": (0, _UINT_MAX),
                "back_seek_penalty": (1, _INT_MAX), "fifo_expire_sync": (1, _INT_MAX),
                "timeout_sync": (1, _INT_MAX)}
_FIELD = "--machine guest:{}"


@dataclass(frozen=True)
class KernelKnobs:
    kernel: str
    legacy: frozenset
    sched: str
    iosched: str
    bfq: tuple = ()     # (tunable, value) of BFQ_TUNABLES, in BFQ_TUNABLES' order

    @cached_property
    def row(self):
        """Its kernel's row (abtlab.machines.kernels), looked up once."""
        return guest_kernel(self.kernel)

    def writes(self, dev: str) -> list:
        """(path in the guest, value) in order: every legacy switch (0 or 1, so a run
        never inherits a value), the CFS settings, dev's elevator, then BFQ's tunables
        (a fresh elevator has BFQ's defaults, so unnamed ones are BFQ's own)."""
        if not dev or "/" in dev:
            raise ConfigError("guest block device", dev, "a name under /sys/block, e.g. vda")
        row = self.row
        out = [] if row.native_legacy else [(path, "1" if name in self.legacy else "0")
                                            for name, path in LEGACY_KNOBS.items()]
        out += [(f"{row.sched_dir}{name}", value) for name, value in sched_settings(self.sched)]
        out.append((f"/sys/block/{dev}/queue/scheduler", self.iosched))
        out += [(f"/sys/block/{dev}/queue/iosched/{name}", value) for name, value in self.bfq]
        return out

    def mount_options(self) -> str:
        """ext4 mount options of the legacy items that are mount options ('' for none)."""
        return ",".join(LEGACY_MOUNT[n] for n in LEGACY_MOUNT if n in self.legacy)

    def readback_ok(self, readback: dict, dev: str) -> bool:
        """Does parse_readback's dict show every value of writes(dev) in force? (The
        elevator file lists all, the active one in brackets: 'none [bfq]'.)"""
        for path, value in self.writes(dev):
            got = readback.get(path, "")
            if got != value and f"[{value}]" not in got.split():
                return False
        return True

    def attrs(self) -> dict:
        return {ATTR_KERNEL_PRESET: self.kernel, ATTR_LEGACY: self._legacy_text(),
                ATTR_SCHED: self.sched, ATTR_IOSCHED: self.iosched,
                ATTR_BFQ: self._bfq_text()}

    @property
    def label(self) -> str:
        """'6.1' when every knob is stock, else the kernel and its knobs spelled out
        (BFQ's tunables after the elevator: 'bfq:slice_idle=0')."""
        row = self.row
        if (self.legacy, self.sched, self.iosched) == KERNELS["6.1"].preset:
            return "6.1"
        if row.native_legacy:   # no legacy items to name: its own code
            stock = (self.sched, self.iosched) == row.preset[1:]
            return row.name if stock else f"{row.name}({self.sched},{self.iosched})"
        elevator = f"{self.iosched}:{self._bfq_text()}" if self.bfq else self.iosched
        return f"{self.kernel}({self._legacy_text()},{self.sched},{elevator})"

    def _legacy_text(self) -> str:
        if self.row.native_legacy:
            return "native"     # 3.4's own code, not knobs
        return "+".join(sorted(self.legacy)) or "none"

    def _bfq_text(self) -> str:
        return "+".join(f"{k}={v}" for k, v in self.bfq) or "default"


def parse_knobs(kernel: str = "6.1", **items: str) -> KernelKnobs:
    """KernelKnobs of the preset `kernel` with the machine spec's items laid over it;
    ConfigError naming the spec field for an unknown kernel, key or value."""
    if kernel not in KERNELS:
        raise ConfigError(_FIELD.format("kernel"), kernel, " | ".join(KERNELS))
    row = KERNELS[kernel]
    unknown = sorted(set(items) - set(KNOB_KEYS))
    if unknown:
        raise ConfigError(_FIELD.format(unknown[0]), items[unknown[0]],
                          f"a kernel knob key: {', '.join(KNOB_KEYS)}")
    legacy, sched, iosched = row.preset
    if "legacy" in items:
        if row.native_legacy:
            raise ConfigError(_FIELD.format("legacy"), items["legacy"],
                              f"no legacy= on kernel={kernel}: {row.native_legacy}")
        legacy = _parse_legacy(items["legacy"])
    sched = items.get("sched", sched)
    sched_settings(sched)                     # ConfigError naming the field if unknown
    iosched = _choose("iosched", items.get("iosched", iosched), row.elevators,
                      f" (the elevators of kernel={kernel})")
    bfq = _parse_bfq(items["bfq"], iosched) if "bfq" in items else ()
    return KernelKnobs(kernel, legacy, sched, iosched, bfq)


def _parse_legacy(text: str) -> frozenset:
    """'shadow_wait+write_handle', 'all' or 'none' -> the set of legacy items."""
    accepted = f"none, all, or items joined by '+' from: {', '.join(LEGACY_ITEMS)}"
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(_FIELD.format("legacy"), text, accepted)
    if text.strip() in ("none", "all"):
        return frozenset(LEGACY_ITEMS) if text.strip() == "all" else frozenset()
    names = [n.strip() for n in text.split("+")]
    for name in names:
        if name not in LEGACY_ITEMS:
            raise ConfigError(_FIELD.format("legacy"), text, accepted)
    return frozenset(names)


def _parse_bfq(text, iosched: str) -> tuple:
    """'slice_idle=0+low_latency=0' or 'default' -> ((tunable, value), ...) in
    BFQ_TUNABLES' order; only with the bfq elevator."""
    ranges = ", ".join(f"{k}={lo}..{hi}" for k, (lo, hi) in BFQ_TUNABLES.items())
    accepted = f"default, or name=value joined by '+' (slice_idle or slice_idle_us): {ranges}"
    if iosched != "bfq":
        raise ConfigError(_FIELD.format("bfq"), text,
                          f"BFQ tunables only with iosched=bfq (this spec's elevator: {iosched})")
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(_FIELD.format("bfq"), text, accepted)
    if text.strip() == "default":
        return ()
    got = {}
    for item in text.split("+"):
        name, eq, value = (p.strip() for p in item.partition("="))
        if name not in BFQ_TUNABLES or not eq or name in got or not (value.isascii() and value.isdigit()):
            raise ConfigError(_FIELD.format("bfq"), text, accepted)
        lo, hi = BFQ_TUNABLES[name]
        if not lo <= int(value) <= hi:
            raise ConfigError(_FIELD.format("bfq"), text, accepted)
        got[name] = str(int(value))
    if {"slice_idle", "slice_idle_us"} <= set(got):  # one variable in two units
        raise ConfigError(_FIELD.format("bfq"), text, accepted)
    return tuple((k, got[k]) for k in BFQ_TUNABLES if k in got)


def _choose(key: str, value, accepted: tuple, why: str = "") -> str:
    if value not in accepted:
        raise ConfigError(_FIELD.format(key), value, " | ".join(accepted) + why)
    return value


def shell_script(knobs: KernelKnobs, dev: str, record: str = "/out/knobs",
                 root: str = "") -> str:
    """POSIX sh that mounts debugfs if needed, writes knobs.writes(dev) in order (exit 97
    naming the path when a write fails) and appends 'path=value read back' to record.
    root prefixes every path and drops the debugfs mount (tests run it on a fake tree)."""
    lines = [] if root else [  # a fake tree is never mounted over
        'grep -q " /sys/kernel/debug debugfs " /proc/mounts ||'
        ' mount -t debugfs debugfs /sys/kernel/debug || true']
    for path, value in knobs.writes(dev):
        p = f"{root}{path}"
        lines.append(f'echo {value} > {p} || {{ echo "kernel knob: cannot write {value} '
                     f'to {path}" >&2; exit 97; }}')
        lines.append(f'echo "{path}=$(cat {p})" >> {record}')
    return "\n".join(lines) + "\n"


def parse_readback(text: str) -> dict:
    """The record shell_script wrote: path -> the value read back."""
    out = {}
    for line in text.splitlines():
        path, sep, value = line.partition("=")
        if sep:
            out[path] = value.strip()
    return out
