"""Kernel delayJC: the delayjc jbd2 patch (backends/kernel/delayjc.patch) as a policy.

Spec: `kdelayjc:window=2ms,max_resets=8` (window 0 = the stock kernel). Where the running
kernel carries the patch, `KernelKnobs` writes /sys/module/jbd2/parameters/delayjc_*
and restores them on exit; elsewhere `run_in_guest` runs the point inside the qemu
guest (abtlab.system.guest) and labels the run's kernel so. Commits are counted from
/proc/fs/jbd2/<dev>/info inside the guest (the guest kernel has no tracefs).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from .. import policies, trace
from ..errors import ConfigError, RunError
from ..policies import Policy, parse_duration_us
from ..system import cleanup
from .base import RunResult

__all__ = ["KernelPolicy", "parse_kdelayjc", "KernelKnobs", "knobs_present", "run_in_guest",
           "run_kdelayjc", "run_any", "mask_commit_measures", "guest_policy", "SYSFS_KNOBS", "KIND"]

KIND = "kdelayjc"
SYSFS_KNOBS = Path("/sys/module/jbd2/parameters")
_KNOBS = ("delayjc_window_us", "delayjc_max_resets")
_GUEST_DATA = PurePosixPath("/mnt/data")
_GUEST_TRACE = PurePosixPath("/out/ops.trace")
_GUEST_BATCHES = PurePosixPath("/out/batches.trace")


@dataclass(frozen=True)
class KernelPolicy(Policy):
    """kind 'kdelayjc', params window_us (int us) and max_resets (int)."""

    @property
    def label(self) -> str:
        p = self.params
        return f"kdelayjc:window={policies._dur(p['window_us'])},max_resets={p['max_resets']}"

    @property
    def journal(self) -> bool:
        return True

    def mount_options(self) -> str:
        return ""

    def preload_env(self) -> dict:
        return {}


def parse_kdelayjc(spec) -> KernelPolicy:
    """Parse `kdelayjc:window=DURATION[,max_resets=N]`; ConfigError names the field."""
    if isinstance(spec, KernelPolicy):
        return spec
    kind, _, body = str(spec).strip().partition(":")
    if kind.strip().lower() != KIND:
        raise ConfigError("policy", spec, "kdelayjc:window=DURATION[,max_resets=N]")
    kv = policies._kv(body, spec)
    unknown = set(kv) - {"window", "max_resets"}
    if unknown:
        raise ConfigError(f"policy kdelayjc.{sorted(unknown)[0]}", spec, "window, max_resets")
    if "window" not in kv or kv["window"] is True:
        raise ConfigError("policy kdelayjc.window", None, "window=DURATION, e.g. 2ms (0 = stock)")
    window = parse_duration_us(kv["window"], "policy kdelayjc.window")
    if window != int(window) or window >= 2 ** 32:
        raise ConfigError("policy kdelayjc.window", kv["window"], "whole microseconds below 4295 s")
    resets = kv.get("max_resets", "0")
    if resets is True or not str(resets).isdigit() or int(resets) >= 2 ** 32:
        raise ConfigError("policy kdelayjc.max_resets", resets, "an integer >= 0")
    return KernelPolicy(KIND, {"window_us": int(window), "max_resets": int(resets)})


def guest_policy(spec) -> Policy:
    """Any policy the guest can run: kdelayjc, ext4, batch, or the LD_PRELOAD delayjc."""
    if str(getattr(spec, "kind", spec)).strip().lower().startswith(KIND):
        return parse_kdelayjc(spec)
    pol = policies.parse(spec)
    if pol.kind == "nojc":
        raise ConfigError("policy", pol.label, "kdelayjc, ext4, batch or delayjc in the guest")
    return pol


def knobs_present(root=None) -> bool:
    """True when the running kernel (or the tree at root) carries the delayjc knobs."""
    return all((Path(root or SYSFS_KNOBS) / k).is_file() for k in _KNOBS)


class KernelKnobs(cleanup.Undoable):
    """Set delayjc_window_us and delayjc_max_resets under `root`; restore on every exit."""

    def __init__(self, policy, root=None):
        self.policy = parse_kdelayjc(policy)
        self.root = Path(root or SYSFS_KNOBS)
        self._tokens = []

    def _setup(self):
        if not knobs_present(self.root):
            raise RunError(f"{self.root} has no delayjc knobs: the kernel lacks the delayjc patch")
        old = {k: (self.root / k).read_text().strip() for k in _KNOBS}
        self._undo(lambda: self._write(old), f"restore delayjc knobs in {self.root}")
        p = self.policy.params
        # max_resets first, so the window never runs with a stale bound
        self._write({"delayjc_max_resets": p["max_resets"], "delayjc_window_us": p["window_us"]})

    def _write(self, values: dict):
        for k, v in values.items():
            (self.root / k).write_text(f"{v}\n")


def run_any(argv_for, point, ctx, data_bytes) -> RunResult:
    """What a driver calls instead of realfs.run_workload: kdelayjc policies (and any
    policy with the run option guest=True) go to the kernel delayjc path, others to the host."""
    kind = str(getattr(point["policy"], "kind", point["policy"])).strip().lower()
    if ctx.options.get("guest"):
        return run_in_guest(argv_for, point, ctx, data_bytes)
    if kind.startswith(KIND):
        return run_kdelayjc(argv_for, point, ctx, data_bytes)
    from .realfs import run_workload
    return run_workload(argv_for, point, ctx, data_bytes)


def run_kdelayjc(argv_for, point, ctx, data_bytes) -> RunResult:
    """A kdelayjc point: on the host when its kernel has the knobs, else in the guest."""
    if knobs_present():
        from .realfs import run_workload
        with KernelKnobs(point["policy"]):
            res = run_workload(argv_for, {**point, "policy": "ext4"}, ctx, data_bytes)
        res.attrs["policy_mechanism"] = "kernel delayjc (host kernel carries the patch)"
        return res
    return run_in_guest(argv_for, point, ctx, data_bytes)


def _guest_run(argv_for, pol, ctx):
    from ..system.guest import GuestRun
    argv = [str(a) for a in argv_for(_GUEST_DATA, 1.0, _GUEST_TRACE)]
    name = PurePosixPath(argv[0]).name
    run = GuestRun(argv=[f"/abt/{name}"] + argv[1:], mount_options=pol.mount_options())
    if pol.kind == KIND:
        run.window_us, run.max_resets = pol.params["window_us"], pol.params["max_resets"]
    elif pol.kind == "delayjc":  # the preload needs the dynamically linked build
        run.argv[0] += "-dyn"
        run.env = {"LD_PRELOAD": "/abt/libdelayjc.so", "ABT_DELAYJC_STATS": str(_GUEST_BATCHES),
                   **pol.preload_env()}
    return run


def _guest_iops(point, ctx) -> int:
    """qemu throttling.iops-total: option guest_iops, else a throttle profile's write IOPS."""
    if ctx.options.get("guest_iops") is not None:
        return int(ctx.options["guest_iops"])
    from ..system.device import parse_profile
    prof = parse_profile(point.get("device", "none"))
    if prof.kind != "throttle":
        raise ConfigError("device", prof.name, "none or a throttle profile in the guest "
                          "(qemu throttling.iops-total), or the option guest_iops=N")
    return int(prof.write_iops or prof.read_iops)


def _save_outputs(files: dict, workdir: Path, stem: str) -> list:
    """Write the guest's /out files named stem* into workdir; return the paths."""
    paths = []
    for name, data in files.items():
        if name.startswith(stem):
            p = workdir / f"guest-{name}"
            p.write_bytes(data)
            paths.append(p)
    return paths


def run_in_guest(argv_for, point, ctx, data_bytes, timeout=None) -> RunResult:
    """Run one point in the qemu guest. argv_for(data_dir, dilate, trace_path) -> argv is
    the same builder realfs.run_workload takes; argv[0]'s name picks /abt/<name>.
    Returns the RunResult with ops, no commit records (the guest has no tracefs) and
    jbd2_info_commits from /proc/fs/jbd2/vda-8/info; the driver adds the model's scalars."""
    from ..delayjc import load_batches
    from ..system import guest
    pol = guest_policy(point["policy"])
    if ctx.freq_mode != "native":
        raise ConfigError("freq_mode", ctx.freq_mode, "native in the guest (TCG has no P-states)")
    image_mb = int(ctx.options.get("image_mb") or max(256, 3 * data_bytes // 2 ** 20 + 128))
    iops = _guest_iops(point, ctx)
    workdir = Path(ctx.workdir)
    run = _guest_run(argv_for, pol, ctx)
    res = guest.boot(run, workdir, image_mb=image_mb, iops=iops,
                     smp=int(ctx.options.get("guest_smp", 2)),
                     timeout=float(timeout or ctx.options.get("guest_timeout", 600)))
    if res.rc != 0:
        raise RunError(f"{run.argv[0]} exited {res.rc} in the guest: {res.stderr.strip()[-500:]}")
    saved = _save_outputs(res.files, workdir, "ops.trace") + _save_outputs(res.files, workdir, "batches.trace")
    try:
        ops = trace.read(workdir / "guest-ops.trace", kind=trace.Kind.OPS)
        batches = load_batches(workdir / "guest-batches.trace") if pol.kind == "delayjc" else None
    finally:
        for p in saved:
            p.unlink(missing_ok=True)
    return RunResult(scalars=_scalars(res), ops=ops, commits=_no_commits(), batches=batches,
                     attrs=_attrs(res, pol, iops))


def _scalars(res) -> dict:
    b, a = res.info_before, res.info_after
    return {"jbd2_info_commits": float(a["transactions"] - b["transactions"])}


def _attrs(res, pol, iops) -> dict:
    from ..system.guest import KERNEL_LABEL
    b, a = res.info_before, res.info_after
    return {"kernel": KERNEL_LABEL, "guest_kernel": KERNEL_LABEL, "freq_mode": "real",
            "filesystem": "ext4 data=ordered on a virtio disk in a qemu TCG guest",
            "mount_options": pol.mount_options() or "defaults",
            "device": f"qemu throttling.iops-total={iops}" if iops else "qemu virtio, cache=unsafe, unthrottled",
            "policy_mechanism": {KIND: "kernel delayjc (jbd2 patch)",
                                 "delayjc": "LD_PRELOAD libdelayjc.so"}.get(pol.kind, "stock jbd2"),
            "commit_records": "none",
            "delayjc_windows": a.get("delayjc_windows", 0) - b.get("delayjc_windows", 0),
            "delayjc_resets": a.get("delayjc_resets", 0) - b.get("delayjc_resets", 0)}


# model measures that need per-commit records, which the guest (no tracefs) lacks
_NEEDS_COMMITS = ("commits", "nonblocked_threads", "blocked_full", "blocked_partial",
                  "mean_commit_wait")


def mask_commit_measures(res: RunResult) -> RunResult:
    """After the driver adds model.measures: a guest run has no commit records, so the
    measures built on them are NaN (jbd2_info_commits still counts the commits)."""
    if res.attrs.get("commit_records") == "none":
        for k in _NEEDS_COMMITS:
            if k in res.scalars:
                res.scalars[k] = float("nan")
    return res


def _no_commits() -> dict:
    z = np.zeros(0, np.int64)
    return {k: z for k in ("tid", "start", "locking", "flushing", "logging", "end", "handles", "blocks")}
