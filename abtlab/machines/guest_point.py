"""A workload point run inside the qemu guest (`--machine guest...`), giving the same
RunResult as on the host: op records, the tracefs per-commit table (parsed by
abtlab.system.tracefs from the guest's own trace, on the guest's CLOCK_MONOTONIC),
jbd2_info_commits, the patched kernel's shadow waits, delayJC batches, plus the machine's attrs.

`guest_run()` turns (point, ctx) into a GuestRun, `to_result()` a guest PointResult
into a RunResult; `run_batch()` runs a group of abtlab's workloads in one boot and
`run_tool_batch()` a group of a third-party tool's points. Which points come here, and on
which Machine, is abtlab.machines.dispatch's choice: the Machine arrives parsed.
"""
from __future__ import annotations

import re
import time
import uuid
from pathlib import Path, PurePosixPath

import numpy as np

from .. import policies, trace
from ..data.result import RunResult
from ..errors import AbtError, ConfigError, RunError, UnavailableError
from ..model.waits import switch_measures
from ..policies.delayjc import load_batches, preload_env
from ..progress import phase
from ..system.geometry import parse_dumpe2fs
from ..system.sleeps import comm_of
from ..system.tracefs import EVENTS, commits_table, marker_between, parse_line
from . import guest, guest_disk, guest_stall
from .guest import DEFAULT_TRACE_KB
from .host import ToolOutput, deadline_us, from_first_op, image_mb, mount_options_of, no_commits, scratch_geometry
from .kernels import KERNELS, GuestKernel
from .programs import check_exit
from .spec import VIRTUAL_REF_GHZ, Machine

__all__ = ["guest_run", "to_result", "run_batch", "run_tool_batch", "clock_samples",
           "guest_events", "shadow_waits", "DELAYJC_KNOBS", "BootWatch"]

_DATA = PurePosixPath("/mnt/data")
_OUT = "/out/p{}"        # point N's results in the guest (backends/kernel/init.sh)
_JBD2 = "/sys/module/jbd2/parameters/"
DELAYJC_KNOBS = (_JBD2 + "delayjc_max_resets", _JBD2 + "delayjc_window_us")
FREQ_MODES = ("native", "emulated", "virtual")


def _mkfs_args(pol, ctx, seed: int, row: GuestKernel = KERNELS["6.1"]) -> list:
    """The host's geometry (abtlab.system.geometry) plus a UUID and directory hash seed
    drawn from the run's seed, so the same seed makes the same filesystem. Every point
    gets a fresh disk, whose unwritten blocks read as zeros; the kernel gets the ext4
    features it mounts (3.4.2: geometry.FEATURES_342)."""
    args = scratch_geometry(ctx.options).mkfs_args(pol.journal, zeroed=True,
                                                   features=row.mkfs_features)
    fs_uuid = str(uuid.UUID(int=(seed * 0x9E3779B97F4A7C15 + 1) % 2 ** 128, version=4))
    i = args.index("-E")
    args[i + 1] += f",hash_seed={fs_uuid}"
    return args + ["-U", fs_uuid]


def _knobs(pol, machine: Machine, index: int):
    """(writes, resets): delayjc knobs of a kdelayjc policy, then the machine's kernel
    knobs."""
    writes = [(_JBD2 + name, value) for name, value in pol.kernel_knobs()]
    resets = [(DELAYJC_KNOBS[1], 0)] if writes else []    # the window back to 0: stock jbd2
    writes += list(machine.kernel_knobs.writes(machine.guest_kernel.disk_name(index)))
    return writes, resets


def _dilate(point, ctx) -> float:
    if ctx.freq_mode not in FREQ_MODES:
        raise ConfigError("freq", ctx.freq_mode, "emulated:..., virtual:... or native in the "
                          "guest (TCG has no P-states)")
    return ctx.f_ref_ghz / float(point["freq_ghz"]) if ctx.freq_mode == "emulated" else 1.0


def guest_run(argv_for, point, ctx, data_bytes, machine: Machine, index: int = 1, exe=None,
              trace_from_go: bool = False):
    """The GuestRun of one point (index: its place in the batch, its null_blk index).
    exe: the program's path in the guest when it is not one of abtlab's /abt/NAME (a
    dynamically linked tool, which the delayJC preload needs no -dyn build of).
    trace_from_go (the driver's Prepared.trace_from_go: IOzone's polling start): the
    program writes the go file when its workers start and the trace begins there, not
    at its first poll (256 pollers switch every ~51 us: 3.4.2 took over 60 s of the
    guest's clock, one vCPU in the trace file's reader, to print the start's switches
    and stacks)."""
    pol = policies.parse(point["policy"])
    out = PurePosixPath(_OUT.format(index))
    argv = [str(a) for a in argv_for(_DATA, _dilate(point, ctx), out / "ops.trace")]
    disk = guest_disk.for_profile(point.get("device", "none"), image_mb(ctx.options, data_bytes),
                                  machine.depth, machine.mem, machine.guest_kernel)
    writes, resets = _knobs(pol, machine, index)
    mount = ",".join(o for o in (mount_options_of(pol, ctx), machine.kernel_knobs.mount_options()) if o)
    prog = str(exe) if exe else f"/abt/{PurePosixPath(argv[0]).name}"
    if trace_from_go:
        argv += ["--go-file", guest.GO_FILE]
    run = guest.GuestRun(argv=[prog] + argv[1:], disk=disk,
                         mkfs_args=_mkfs_args(pol, ctx, ctx.seed, machine.guest_kernel), env={},
                         mount_options=mount, knobs=writes, knobs_reset=resets,
                         pre_sleep_us=start_phase_us(ctx, machine), deadline_us=deadline_us(ctx.options),
                         trace_at_go=trace_from_go)
    if pol.needs_preload:  # the preload needs the dynamically linked build
        if exe is None:
            run.argv[0] += "-dyn"
        run.env = {**preload_env(pol, out / "batches.trace"), "LD_PRELOAD": "/abt/libdelayjc.so"}
    return run, pol


TURN_US = 8333     # one turn of a 7200 rpm drive


def start_phase_us(ctx, machine: Machine) -> int:
    """A repetition's seeded wait before its workload (0 without start_phase=seeded, the
    default on the lock-step clock only): virtual time repeats exactly, so without it
    repetitions with other seeds can be one run; with it each starts at its own phase of
    the drive's rotation (abt_disk.h: the angle is the clock mod one turn), the timer
    ticks and the journal's commit timer."""
    mode = ctx.options.get("start_phase", "seeded" if machine.lockstep else "none")
    if mode != "seeded":
        return 0
    return int(np.random.default_rng([int(ctx.seed) & 0xFFFFFFFF, int(ctx.rep) & 0xFFFFFFFF, 0x5EED]).integers(0, TURN_US))


# the guest kernel has no kallsyms, so a trace marker's caller prints as an address
# ("0xffffffff810a48ac: msg") where the host prints "tracing_mark_write: msg"
_MARK = re.compile(r"(\]\s+\S*\s+\d+\.\d+:) 0x[0-9a-f]+: ")


def trace_lines(files: dict) -> list:
    """The guest's trace file as lines abtlab.system.tracefs.parse_line reads."""
    text = files.get("trace", b"").decode(errors="replace")
    return [_MARK.sub(r"\1 tracing_mark_write: ", ln) for ln in text.splitlines()]


def clock_samples(files: dict) -> list:
    """(before_ns, trace_ns, after_ns) of each marker abt-clockmark wrote (trace_ns -1 if
    the trace lacks it): the proof that op records and tracefs share the guest's clock."""
    seen = {e["msg"]: e["ts"] for e in map(parse_line, trace_lines(files)) if e and "msg" in e}
    out = []
    for name in ("clock.before", "clock.after"):
        for line in files.get(name, b"").decode().splitlines():
            tag, before, after = line.split()
            out.append((int(before), seen.get(tag, -1), int(after)))
    return out


def clock_slack_ns(machine: Machine) -> int:
    """How far apart a marker's trace time and the CLOCK_MONOTONIC reads around it may be.
    0, except on the lock-step clock: two of its rounds (quantum instructions each at mhz).
    Linux 3.4.2 there once stamped all three after-run markers 7.8-8.4 us after the reads
    around them at 1.6 GHz (IOzone's polling start, 256 writers; the barrier start's points
    and the 3.3 GHz point agreed to the printed microsecond): its trace clock, ktime_get(),
    and the vDSO's read the HPET at different points of a round."""
    return int(2 * machine.quantum * 1000 / machine.mhz) if machine.lockstep else 0


def guest_events(files: dict, printed: str = "truncated", slack_ns: int = 0) -> list:
    """The point's trace events in time order; RunError when events were lost (trace.stats:
    `overrun:` and, after 3.4, `dropped events:` per CPU) or the trace's clock is not the
    guest's CLOCK_MONOTONIC (to slack_ns, clock_slack_ns). printed: how the kernel prints
    microseconds (tracefs.PRINTED)."""
    lost = sum(int(ln.split(":")[1]) for ln in files.get("trace.stats", b"").decode().splitlines())
    if lost:
        raise RunError(f"{lost} trace events lost in the guest: raise the run option guest_trace_kb "
                       f"(-o guest_trace_kb=KiB, a buffer per vCPU; default {DEFAULT_TRACE_KB})")
    in_order = list(filter(None, map(parse_line, trace_lines(files))))
    if (back := cpu_step_back(in_order, slack_ns)) is not None:
        raise RunError(back)
    events = sorted(in_order, key=lambda e: e["ts"])
    samples = clock_samples(files)
    if not samples or not all(marker_between(b - slack_ns, t, a + slack_ns, printed)
                              for b, t, a in samples):
        raise RunError(f"guest trace clock and CLOCK_MONOTONIC disagree: {samples}")
    return events


def cpu_step_back(events: list, slack_ns: int = 0) -> str | None:
    """Why the trace's times cannot be trusted, or None. The trace file gives each CPU's
    events in the order they were written (it merges the CPUs' buffers by time), so one
    CPU's times must not step back by more than slack_ns: Linux 3.4's ring buffer put
    the first event on a new buffer page, and every later one on that page, late by the
    gap before it (k342/10-ring-buffer-first-event.patch); the next page steps back."""
    latest = {}
    for e in events:
        cpu, ts = e["cpu"], e["ts"]
        if ts < latest.get(cpu, ts) - slack_ns:
            return (f"the guest's trace steps back {(latest[cpu] - ts) / 1e3:.1f} us on CPU {cpu} "
                    f"at {ts / 1e9:.6f} s (a buffer page's events stamped late; the clock's "
                    f"slack: {slack_ns / 1e3:.1f} us)")
        latest[cpu] = max(latest.get(cpu, ts), ts)
    return None


def _commits(files, ops, printed: str = "truncated", slack_ns: int = 0):
    """Commits from the first op on; all of them for a program without op records."""
    table = in_phase_order(commits_table(guest_events(files, printed, slack_ns)), slack_ns)
    return table if ops is None else from_first_op(table, ops)


_PHASE_ORDER = ("start", "locking", "flushing", "logging", "end")


def in_phase_order(table: dict, slack_ns: int) -> dict:
    """A commit's phase events in their order. On the lock-step clock each vCPU's clock
    runs from its round's start, so an event a journal thread stamps after moving to
    another vCPU may read up to a round earlier than the one before it (Metarates on
    3.4.2: an end before its start); such an event is set to its predecessor's time when
    it is within slack_ns, and further apart the run fails (RunError)."""
    prev = table["start"].copy()
    for name in _PHASE_ORDER[1:]:
        col = table[name]
        back = (col >= 0) & (prev >= 0) & (col < prev)
        if (prev[back] - col[back] > slack_ns).any():
            i = int(np.flatnonzero(back & (prev - col > slack_ns))[0])
            raise RunError(f"commit {int(table['tid'][i])}: its {name} event is {(prev[i] - col[i]) / 1e3:.1f} us "
                           f"before the event it follows (the clock's slack: {slack_ns / 1e3:.1f} us)")
        col[back] = prev[back]
        prev = np.where(col >= 0, col, prev)
    return table


def to_result(pres, pol, machine: Machine, ctx, workdir, argv=("workload",)) -> RunResult:
    """A guest PointResult -> RunResult (RunError naming the step that failed; the
    workload's own exit as on the host: machines.programs.check_exit)."""
    argv0 = PurePosixPath(str(argv[0])).name
    if guest_stall.is_stalled(pres.files):
        raise RunError(_stalled(pres, ctx, argv0))
    if pres.status != "ok":
        log = {"mkfs": pres.files.get("mkfs.log", b""), "knobs": pres.files.get("where", b"")
               }.get(pres.status, b"").decode(errors="replace")
        raise RunError(f"guest point failed at '{pres.status}': {(log or pres.stderr).strip()[-500:]}")
    if pres.rc != 0:   # the host's exit convention (2: bad argument, 3: unavailable)
        check_exit([f"{argv0} (in the guest)"] + list(argv[1:]), pres.rc, pres.stderr.strip()[-500:])
    saved = []
    try:
        for name in ("ops.trace", "batches.trace"):
            if name in pres.files:
                saved.append(Path(workdir) / f"guest-{name}")
                saved[-1].write_bytes(pres.files[name])
        # a third-party tool (fio) writes no op records
        ops = (trace.read(Path(workdir) / "guest-ops.trace", kind=trace.Kind.OPS)
               if "ops.trace" in pres.files else None)
        batches = (load_batches(Path(workdir) / "guest-batches.trace")
                   if pol.needs_preload and "batches.trace" in pres.files else None)
    finally:
        for p in saved:
            p.unlink(missing_ok=True)
    printed = machine.guest_kernel.printed
    commits = (_commits(pres.files, ops, printed, clock_slack_ns(machine)) if pol.journal
               else no_commits())
    waits = _waits(pres.files, ops, commits, argv0)
    b, a = pres.info_before, pres.info_after
    scalars = {"jbd2_info_commits": float(a["transactions"] - b["transactions"]) if a else 0.0}
    scalars.update(shadow_waits(pres.files))
    scalars.update(waits)
    attrs = _attrs(pres, pol, machine, ctx)
    attrs.update(parse_dumpe2fs(pres.files.get("dumpe2fs", b"").decode()))
    if pol.needs_patched_kernel:    # the patch's own counters
        attrs["delayjc_windows"] = a.get("delayjc_windows", 0) - b.get("delayjc_windows", 0)
        attrs["delayjc_resets"] = a.get("delayjc_resets", 0) - b.get("delayjc_resets", 0)
    return RunResult(scalars=scalars, ops=ops, commits=commits, batches=batches, attrs=attrs)


def _stalled(pres, ctx, argv0: str) -> str:
    """The error of a point its guest_deadline stopped."""
    return (f"the workload did not end within guest_deadline={ctx.options['guest_deadline']} "
            f"of the guest's clock and was killed: {guest_stall.summary(pres.files, comm_of(argv0))}")


def _waits(files, ops, commits, argv0: str) -> dict:
    """Why the workload's writes slept (model.waits) and its CPU time inside the timing
    terms (model.terms.cpu_terms), when the trace has its switches."""
    if ops is None or b"sched_switch" not in files.get("trace", b""):
        return {}
    return switch_measures(ops, trace_lines(files), comm_of(argv0), commits)


# legacy.patch's third line of /proc/fs/jbd2/<dev>/info (both kinds of shadow wait)
_SHADOW = re.compile(rb"^(\d+) shadow waits, (\d+) us shadow wait$", re.M)


def shadow_waits(files: dict) -> dict:
    """The point's jbd2 shadow waits and their total time (info.after - info.before), or {}
    on a kernel without the counter."""
    seen = [_SHADOW.search(files.get(f"info.{k}", b"")) for k in ("before", "after")]
    if not all(seen):
        return {}
    (n0, us0), (n1, us1) = (map(int, m.groups()) for m in seen)
    return {"jbd2_shadow_waits": float(n1 - n0), "jbd2_shadow_wait": (us1 - us0) / 1e6}


def _attrs(pres, pol, machine: Machine, ctx) -> dict:
    gk = machine.guest_kernel
    label = gk.label
    attrs = {**machine.attrs(), "kernel": f"{label} {machine.kernel}", "qemu": guest.qemu_for(machine).describe(),
             "guest_kernel_build": guest.kernel_build(gk),
             "guest_initramfs_build": guest.initramfs_build(),
             "freq_mode": ctx.freq_mode if ctx.freq_mode in ("emulated", "virtual") else "native",
             "filesystem": f"ext4 on {gk.disk.DRIVER} in a qemu TCG guest",
             "policy_mechanism": pol.mechanism,
             "commit_records": gk.commit_records,
             "time_base": _TIME_BASE[machine.clock]}
    if machine.lockstep:
        attrs["trace_clock_slack_ns"] = clock_slack_ns(machine)
    kk = machine.kernel_knobs
    attrs.update(kk.attrs())
    attrs["kernel"] = f"{label} {kk.label}"
    knobs = pres.files.get("knobs", b"").decode().strip()
    if knobs:
        attrs["guest_knobs_read_back"] = "; ".join(knobs.splitlines())
    if ctx.freq_mode == "emulated":
        attrs["f_ref_ghz"] = ctx.f_ref_ghz
        attrs["freq_emulation"] = ("each op's thread CPU time dilated by f_ref/f with spinning "
                                   "right after the call (guest CPU time); device and blocked "
                                   "time not dilated")
    if ctx.freq_mode == "virtual" and machine.lockstep:
        attrs["freq_emulation"] = ("virtual, lock-step: F GHz = every vCPU executes one instruction "
                                   "every 1/F ns whatever the others do, for all guest code (kernel "
                                   "threads too); instructions, not cycles: F GHz at one "
                                   "instruction per cycle")
    elif ctx.freq_mode == "virtual":
        attrs["freq_emulation"] = (f"virtual: F GHz = icount shift log2({VIRTUAL_REF_GHZ:g}/F), one "
                                   "guest instruction every 1/F ns, for all guest code (kernel "
                                   "threads too); instructions, not cycles: 1 GHz at one "
                                   "instruction per cycle")
    return attrs


_TIME_BASE = {"virtual": "virtual: guest CLOCK_MONOTONIC under qemu -icount",
              "lockstep": "virtual: guest CLOCK_MONOTONIC under qemu -icount, lock-step vCPUs",
              "host": "guest CLOCK_MONOTONIC on the host clock (multi-threaded TCG)"}


def run_batch(items, machine: Machine, workdir, timeout=None) -> list:
    """items: (argv_for, point, ctx, data_bytes, trace_from_go) each (the last from the
    driver's Prepared); one boot runs them all in order. Returns a RunResult or the
    RunError of each point."""
    built = [guest_run(a, p, c, d, machine, i, trace_from_go=g)
             for i, (a, p, c, d, g) in enumerate(items, 1)]
    res = _boot(built, machine, workdir, items[0][2], _events(), timeout=timeout)
    out = []
    for (run, pol), pres, (_, _, ctx, _, _) in zip(built, res.points, items):
        try:
            out.append(_point_result(pres, run, pol, machine, ctx, workdir))
        except AbtError as exc:     # RunError, or ConfigError for a bad argument
            out.append(exc)
    return out


def run_tool_batch(items, machine: Machine, workdir, tool, events) -> list:
    """items: (argv_for(data_dir), point, ctx, data_bytes) of one third-party tool, run as
    the guest's tool.exe (carried by the overlay tool.overlay beside the initramfs;
    UnavailableError(tool.missing) when the build made none), with `events` traced; one
    boot runs them all in order. Returns a ToolOutput or the RunError of each point."""
    archive = guest.ensure_built()[1].with_name(tool.overlay)
    if not archive.exists():
        raise UnavailableError(tool.missing)
    built = [guest_run(lambda d, _dilate, _trace, a=a: a(d), p, c, d, machine, i, exe=tool.exe)
             for i, (a, p, c, d) in enumerate(items, 1)]
    res = _boot(built, machine, workdir, items[0][2], events, overlays=[archive])
    out = []
    for (run, pol), pres, (_, _, ctx, _) in zip(built, res.points, items):
        try:
            base = _point_result(pres, run, pol, machine, ctx, workdir)   # raises for a failed point
            extra = {k: v for k, v in base.scalars.items() if k != "jbd2_info_commits"}
            out.append(ToolOutput(pres.stdout, run.argv,
                                  guest_events(pres.files, machine.guest_kernel.printed,
                                               clock_slack_ns(machine)),
                                  base.scalars["jbd2_info_commits"], base.attrs, base.batches, extra))
        except AbtError as exc:
            out.append(exc)
    return out


def _boot(built, machine: Machine, workdir, ctx0, events, overlays=(), timeout=None):
    """One guest boot for the built (GuestRun, policy) points, watched (BootWatch)."""
    with phase(BootWatch(workdir, len(built), machine.label), runs=len(built)):
        return guest.boot_batch([r for r, _ in built], machine, workdir, events=events,
                                timeout=float(timeout or ctx0.options.get("guest_timeout") or 600),
                                trace_kb=int(ctx0.options.get("guest_trace_kb") or DEFAULT_TRACE_KB),
                                overlays=list(overlays))


def _point_result(pres, run, pol, machine: Machine, ctx, workdir) -> RunResult:
    """to_result, with the guest disk and mount options the point was given."""
    try:
        r = to_result(pres, pol, machine, ctx, workdir, run.argv)
    except RunError as exc:
        where = ctx.options.get("guest_failed_dir")
        if not where:
            raise
        label = f"seed{ctx.seed}-rep{ctx.rep}-{time.strftime('%Y%m%dT%H%M%S')}"
        raise RunError(f"{exc}; its files: {guest_stall.keep(pres.files, where, label)}") from None
    r.attrs.update({**run.disk.describe(), "mount_options": run.mount_options or "defaults"})
    if run.pre_sleep_us:
        r.scalars["start_phase"] = run.pre_sleep_us / 1e6
    if run.trace_at_go:
        r.attrs["trace_from"] = "the go (IOzone's polling start is not traced)"
    _disk_read_back(r.attrs, pres.files)
    return r


class BootWatch:
    """The phase of one boot, read each second from the files abtlab.machines.guest writes
    in its workdir: no initramfs yet (make checks, or builds, the guest kernel and
    initramfs), then the results port, where each point's slot ends as soon as the point
    does. The console says nothing while it boots (`quiet`), so the boot and the first
    point are one phase."""

    def __init__(self, workdir, npoints: int, label: str):
        self.dir, self.n, self.label = Path(workdir), npoints, label
        self._off, self._done, self._started = 0, 0, False

    def __call__(self):
        self._started = self._started or (self.dir / "guest-initrd.gz").exists()
        if not self._started:
            return "kernel build: make of the guest kernel and initramfs", 0
        self._done = min(self.n, self._done + self._new_points())
        if self._done == 0:
            return f"boot of the guest ({self.label}) and point 1/{self.n}", 0
        if self._done >= self.n:
            return f"in the guest: {self.n} points done, shutting down", self.n
        return f"in the guest: point {self._done + 1}/{self.n}", self._done

    def _new_points(self) -> int:
        """Points whose slot ended since the last look (slot 0, the boot's, comes last)."""
        try:
            with open(self.dir / "guest-results.txt", "rb") as f:
                f.seek(self._off)
                chunk = f.read()
        except FileNotFoundError:
            return 0
        cut = chunk.rfind(b"\n") + 1          # whole lines only
        self._off += cut
        return len(re.findall(rb"^abtlab-end [1-9]\d*\r?$", chunk[:cut], re.M))


def _disk_read_back(attrs: dict, files: dict) -> None:
    """What the guest's disk really took (brd: its queue's request size), beside what was asked."""
    kb = files.get("max_sectors_kb", b"").decode().strip()
    if kb:
        attrs["guest_disk"] += f" (read back: max_sectors_kb={kb})"


def _events():
    # the workload's switch-outs with their stacks: why its writes slept (model.waits)
    return EVENTS + ("sched/sched_switch",)
