"""The one place that sends a point to its machine: the host (host), the host with the
kernel delayJC knobs (kernel_delayjc), or a qemu guest (guest_point), chosen by the
point's machine and its policy's needs (`route`). The point's Machine is parsed here,
once, and passed down.

Two kinds of work travel this road, one point at a time or a guest machine's group in
one boot: an abtlab program (a driver's `Prepared`: run_program, run_programs, which add
the model's measures) and a third-party tool (a `tool_runner.ToolJob`: run_tool,
run_tools, which return its `ToolRun`).
"""
from __future__ import annotations

from .. import policies
from ..data.result import RunResult
from ..errors import AbtError, ConfigError
from . import guest_point, host, kernel_delayjc, tool_runner
from .host import Prepared, add_measures
from .spec import Machine, at_virtual_freq, parse_machine
from .tool_runner import ToolJob, ToolRun

__all__ = ["HOST", "KERNEL", "GUEST", "machine_for", "route", "group_key", "run_program",
           "run_programs", "run_tool", "run_tools", "run_any",
           "run_kdelayjc", "run_in_guest", "check_tool_policy"]

HOST, KERNEL, GUEST = "host", "host with the kernel delayJC knobs", "guest"


def machine_for(point, ctx=None, machine=None) -> Machine:
    """The point's machine (`machine`, else its machine factor, else the host); a guest
    under `--freq virtual:F` gets F's icount shift (ctx None: before any run, where only
    the machine's kind and clock are asked)."""
    m = parse_machine(machine or point.get("machine") or "host")
    virtual = ctx is not None and ctx.freq_mode == "virtual"
    return at_virtual_freq(m, point["freq_ghz"]) if m.is_guest and virtual else m


def route(point, ctx=None, machine: Machine | None = None) -> tuple[str, Machine]:
    """Where the point runs, and on which machine (the point's own by default): a guest
    machine in its guest; on the host, a policy that needs the patched kernel under the
    host kernel's knobs when it has them, else in the default guest (labelled so in the
    machine attrs). The only statement of where a point runs: the sweep's questions
    (abtlab.machines.placement) and the tools' policy check ask it."""
    machine = machine if machine is not None else machine_for(point, ctx)
    if machine.is_guest:
        return GUEST, machine
    if policies.parse(point["policy"]).needs_patched_kernel:
        if kernel_delayjc.knobs_present():
            return KERNEL, machine
        return GUEST, machine_for(point, ctx, "guest")
    return HOST, machine


def group_key(point, ctx):
    """The guest machine label a point runs on (its icount shift included): consecutive
    points with one key share a boot. None on the host."""
    where, m = route(point, ctx)
    return m.label if where == GUEST else None


# -- abtlab's programs --------------------------------------------------------------------
def run_program(prep: Prepared, point, ctx, machine=None) -> RunResult:
    """One point of a program on its machine, with the model's measures and the delayJC
    batch count."""
    return add_measures(run_any(prep.argv_for, point, ctx, prep.data_bytes, machine,
                                prep.trace_from_go), prep)


def run_programs(preps: list, runs: list, workdir) -> list:
    """runs: [(point, ctx)] of one group, preps their Prepared: a guest machine's points in
    one boot; any other group point by point. A RunResult or the AbtError of each."""
    where, machine = route(*runs[0], machine_for(*runs[0]))
    if where != GUEST:
        return [_caught(run_program, pr, p, c) for pr, (p, c) in zip(preps, runs)]
    items = [(pr.argv_for, p, c, pr.data_bytes, pr.trace_from_go) for pr, (p, c) in zip(preps, runs)]
    return [r if isinstance(r, Exception) else _caught(add_measures, r, pr)
            for r, pr in zip(guest_point.run_batch(items, machine, workdir), preps)]


def run_any(argv_for, point, ctx, data_bytes, machine=None, trace_from_go=False) -> RunResult:
    """One point of a program on its machine (route), without the model's measures.
    trace_from_go: the driver's Prepared.trace_from_go (a guest traces from the go)."""
    where, machine = route(point, ctx, machine_for(point, ctx, machine))
    if where == GUEST:
        return run_in_guest(argv_for, point, ctx, data_bytes, machine, trace_from_go=trace_from_go)
    if where == KERNEL:
        return run_kdelayjc(argv_for, point, ctx, data_bytes)
    res = host.run_workload(argv_for, point, ctx, data_bytes)
    res.attrs.update(machine.attrs())   # machine=host, clock=host: mixed datasets say both
    return res


def run_kdelayjc(argv_for, point, ctx, data_bytes) -> RunResult:
    """A kdelayjc point on a host kernel that carries the knobs."""
    return _under_kernel_knobs(point, lambda p: host.run_workload(argv_for, p, ctx, data_bytes))


def run_in_guest(argv_for, point, ctx, data_bytes, machine="guest", timeout=None,
                 trace_from_go=False) -> RunResult:
    """One point, one boot: RunError if anything failed inside the guest. machine: a
    Machine from machine_for, or a spec to resolve for this point."""
    if not isinstance(machine, Machine):
        machine = machine_for(point, ctx, machine)
    res = guest_point.run_batch([(argv_for, point, ctx, data_bytes, trace_from_go)], machine,
                                ctx.workdir, timeout)[0]
    if isinstance(res, Exception):
        raise res
    return res


# -- third-party tools --------------------------------------------------------------------
def run_tool(job: ToolJob, point, ctx, machine=None) -> ToolRun:
    """One point of a tool on its machine (route). What the machine cannot run is refused
    before any set-up."""
    where, machine = route(point, ctx, machine_for(point, ctx, machine))
    if where == GUEST:
        out = _tools_in_guest([job], [(point, ctx)], ctx.workdir, machine)[0]
        if isinstance(out, Exception):
            raise out
        return out
    tool_runner.check_on_host(ctx)
    argv_for = tool_runner.host_argv_for(job)

    def on_host(p):
        return host.run_tool(argv_for, p, ctx, job.data_bytes, tool_runner.TRACED_EVENTS, job.timeout)
    if where == KERNEL:
        return tool_runner.read(job, _under_kernel_knobs(point, on_host))
    run = tool_runner.read(job, on_host(point))
    run.attrs.update(machine.attrs())   # machine=host, clock=host: mixed datasets say both
    return run


def run_tools(jobs: list, runs: list, workdir) -> list:
    """runs: [(point, ctx)] of one group, jobs their ToolJobs: a guest machine's points in
    one boot (one tool, one overlay); any other group point by point. A ToolRun or the
    AbtError of each."""
    where, machine = route(*runs[0], machine_for(*runs[0]))
    if where != GUEST:
        return [_caught(run_tool, job, p, c) for job, (p, c) in zip(jobs, runs)]
    return _tools_in_guest(jobs, runs, workdir, machine)


def _tools_in_guest(jobs, runs, workdir, machine: Machine) -> list:
    for job, (_, ctx) in zip(jobs, runs):
        tool_runner.check_in_guest(job, ctx)
    items = [(lambda d, j=job: j.argv_for(j.guest.exe, d), p, c, job.data_bytes)
             for job, (p, c) in zip(jobs, runs)]
    outs = guest_point.run_tool_batch(items, machine, workdir, jobs[0].guest, tool_runner.TRACED_EVENTS)
    return [out if isinstance(out, Exception) else _caught(tool_runner.read, job, out)
            for job, out in zip(jobs, outs)]


# -- shared --------------------------------------------------------------------------------
def _under_kernel_knobs(point, run_on_host):
    """run_on_host(point as plain ext4) under the host kernel's delayJC knobs, labelled so."""
    with kernel_delayjc.KernelKnobs(point["policy"]):
        res = run_on_host({**point, "policy": "ext4"})
    res.attrs["policy_mechanism"] = "kernel delayjc (host kernel carries the patch)"
    return res


def _caught(fn, *args):
    """fn(*args), or the AbtError it raised: a failed point does not stop its group."""
    try:
        return fn(*args)
    except AbtError as exc:
        return exc


def check_tool_policy(point: dict, name: str, guest: bool = False):
    """The point's policy, for a third-party tool: a tool runs on the point's own machine
    as it is, so a policy that route would send to the host kernel's knobs or to the
    default guest (kdelayjc on a host machine) is refused; guest: the tool runs on a guest
    machine too (fio)."""
    pol = policies.parse(point["policy"])
    own = machine_for(point)
    where, machine = route(point, None, own)
    if where == KERNEL or machine != own:
        place = "on the host; kdelayjc with --machine guest" if guest else "(runs on the host)"
        raise ConfigError("policy", point["policy"], f"ext4, nojc, delayjc or batch for {name} "
                          f"{place}: kdelayjc needs the guest kernel")
    return pol
