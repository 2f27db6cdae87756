"""What a sweep asks its driver about where its points run, answered from `route`
(abtlab.machines.dispatch) for a driver whose points run on a machine (ProgramBackend,
ToolBackend): can they run here, is every guest kernel buildable, do they hold this
machine's devices, is a point's clock its own, and the dataset's machine coordinates.

The sweep knows none of this: it asks its Backend, whose base class answers for a
model (nowhere real) and whose machine-bound subclasses answer here, from the one rule.
"""
from __future__ import annotations

from .availability import Availability
from .dispatch import GUEST, route
from .spec import check_virtual_freq as _check_virtual_freq, machine_coords

__all__ = ["routes", "available", "check", "holds_host_devices", "isolated_clock", "coords",
           "check_virtual_freq"]


def routes(levels: dict) -> list:
    """route's (where, machine) for each machine x policy level of a sweep."""
    return [route({"policy": p, "machine": m})
            for m in levels.get("machine") or ["host"] for p in levels.get("policy") or ["ext4"]]


def available(levels: dict, driver: Availability) -> Availability:
    """driver: the driver's own answer (root, loop devices, its program). Runs that all go
    to a qemu guest need neither root nor loop devices here (qemu runs unprivileged): the
    guest's answer instead."""
    placed = routes(levels)
    if all(where == GUEST for where, _ in placed):
        return placed[0][1].available()
    return driver


def check(levels: dict) -> None:
    """Before any point runs: ConfigError when a guest kernel the points boot cannot be
    built here."""
    for _, machine in routes(levels):
        machine.check()


def holds_host_devices(levels: dict) -> bool:
    """Whether any point uses this machine's loop devices, mounts and tracefs (every one
    that does not run in a guest, which has its own disk)."""
    return any(where != GUEST for where, _ in routes(levels))


def isolated_clock(point: dict, ctx) -> bool:
    """Whether nothing else running on the host changes what the point measures: it runs
    in a guest on the virtual or lock-step clock."""
    where, machine = route(point, ctx)
    return where == GUEST and machine.isolated_clock


def coords(levels: dict) -> dict:
    """The dataset's coordinates along its machine dim (each level's clock and kernel)."""
    return machine_coords(levels["machine"]) if "machine" in levels else {}


def check_virtual_freq(levels: dict) -> None:
    """`--freq virtual:...` sets each guest's clock: ConfigError unless every machine can."""
    _check_virtual_freq(levels.get("machine", ["host"]), levels.get("freq_ghz", ()))
