"""Where a point of a real workload runs: on the host (host), on the host with the
kernel delayJC knobs (kernel_delayjc), or in the qemu guest (guest_point), by its machine and
policy; then the model's measures are added."""
from __future__ import annotations

from ..data.result import RunResult
from .spec import parse_machine
from .. import policies
from . import guest_point, host, kernel_delayjc

__all__ = ["run_and_measure", "run_any", "run_kdelayjc", "run_in_guest", "touches_host_devices"]


def run_and_measure(argv_for, point, ctx, data_bytes, workload, **measure_kw) -> RunResult:
    """Run the workload on its machine (host, or the guest: --machine), then add the
    model's measures and the delayJC batch count."""
    res = run_any(argv_for, point, ctx, data_bytes)
    return host.add_measures(res, host.Prepared(argv_for, data_bytes, workload, measure_kw))


def run_any(argv_for, point, ctx, data_bytes) -> RunResult:
    """What a driver calls instead of host.run_workload: a guest machine runs the point
    in the qemu guest; on the host, kdelayjc policies go to the kernel delayjc path."""
    machine = parse_machine(point.get("machine", "host"))
    if machine.is_guest:
        return run_in_guest(argv_for, point, ctx, data_bytes, machine)
    if policies.parse(point["policy"]).needs_patched_kernel:
        return run_kdelayjc(argv_for, point, ctx, data_bytes)
    res = host.run_workload(argv_for, point, ctx, data_bytes)
    res.attrs.update(machine.attrs())   # machine=host, clock=host: mixed datasets say both
    return res


def run_kdelayjc(argv_for, point, ctx, data_bytes) -> RunResult:
    """A kdelayjc point on the host: with the host kernel's knobs when it has them, else
    in the default guest (labelled so in the machine attrs)."""
    if kernel_delayjc.knobs_present():
        with kernel_delayjc.KernelKnobs(point["policy"]):
            res = host.run_workload(argv_for, {**point, "policy": "ext4"}, ctx, data_bytes)
        res.attrs["policy_mechanism"] = "kernel delayjc (host kernel carries the patch)"
        return res
    return run_in_guest(argv_for, point, ctx, data_bytes, "guest")


def run_in_guest(argv_for, point, ctx, data_bytes, machine="guest", timeout=None) -> RunResult:
    """One point in the qemu guest (abtlab.machines.guest_point)."""
    return guest_point.run_in_guest(argv_for, point, ctx, data_bytes, machine, timeout)


def touches_host_devices(machines, policy_levels) -> bool:
    """Whether points of these machines and policies use this machine's loop devices,
    mounts and tracefs: a host machine's do, except kdelayjc points on a host kernel
    without the knobs (run_kdelayjc sends those to the guest)."""
    if not any(parse_machine(m).touches_host_devices for m in machines):
        return False
    patched = [policies.parse(p).needs_patched_kernel for p in policy_levels]
    return kernel_delayjc.knobs_present() or not all(patched)
