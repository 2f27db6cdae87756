"""The sweep's questions about where its points run, answered from route alone."""
import os

import pytest

import abtlab
from abtlab import backends
from abtlab.errors import ConfigError, RunError
from abtlab.machines import dispatch, guest, guest_point, kernel_delayjc, placement
from abtlab.machines.spec import parse_machine
from abtlab.sweep import loop
from abtlab.sweep.plan import RunSettings

KDELAYJC = "kdelayjc:window=2ms,max_resets=8"


@pytest.fixture
def non_root_without_knobs(monkeypatch, tmp_path):
    """A user who is not root, on a host kernel without the delayJC knobs, where qemu can
    boot a guest."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(kernel_delayjc, "SYSFS_KNOBS", tmp_path / "absent")
    monkeypatch.setattr(guest, "available", lambda: (True, "qemu 8.2"))


def test_a_host_kdelayjc_sweep_of_a_non_root_user_goes_to_the_guest(non_root_without_knobs):
    levels = {"machine": [parse_machine("host")], "policy": [KDELAYJC]}
    assert placement.routes(levels) == [(dispatch.GUEST, parse_machine("guest"))]
    be = backends.get("iozone")
    assert not be.available()                  # the host run would need root
    assert be.available_for(levels)            # the guest's answer: qemu runs unprivileged
    assert not be.holds_host_devices(levels)
    task = loop.Task(RunSettings("iozone"), {"policy": KDELAYJC, "machine": "host"}, 0, 0, 1)
    assert be.group_key(task) == "guest"


def test_the_sweep_is_not_refused_for_root_and_reaches_the_guest(non_root_without_knobs,
                                                                  monkeypatch):
    """The whole sweep: checked, not holding the machine, its point sent to a guest boot
    (faked: the boot's place is where the sweep ends)."""
    booted, locked = [], []
    monkeypatch.setattr(loop, "MachineLock", lambda *a, **k: locked.append(a))

    def run_batch(items, machine, workdir, *a):
        booted.append((machine.label, [(p["policy"].kind, go) for _, p, _, _, go in items]))
        return [RunError("the guest's boot is faked here") for _ in items]
    monkeypatch.setattr(guest_point, "run_batch", run_batch)
    with pytest.raises(RunError, match="faked"):
        abtlab.run("iozone", machine="host", policy=KDELAYJC, threads=2, file_size="64k",
                   record_size="32k", reps=1, quiet=True)
    # the barrier start (the default off the lock-step clock): traced from the program's start
    assert booted == [("guest", [("kdelayjc", False)])] and locked == []


def test_a_host_sweep_of_a_non_root_user_is_refused_for_root(non_root_without_knobs):
    with pytest.raises(ConfigError, match="root"):
        abtlab.run("iozone", machine="host", policy=["ext4", KDELAYJC], threads=2, reps=1,
                   quiet=True)


def test_with_the_knobs_a_host_kdelayjc_point_stays_on_the_host(monkeypatch, tmp_path):
    knobs = tmp_path / "knobs"
    knobs.mkdir()
    for k in ("delayjc_window_us", "delayjc_max_resets"):
        (knobs / k).write_text("0\n")
    monkeypatch.setattr(kernel_delayjc, "SYSFS_KNOBS", knobs)
    levels = {"machine": ["host"], "policy": [KDELAYJC]}
    assert [w for w, _ in placement.routes(levels)] == [dispatch.KERNEL]
    assert backends.get("iozone").holds_host_devices(levels)


def test_isolated_clock_and_coords_come_from_the_routed_machine(monkeypatch, tmp_path):
    monkeypatch.setattr(kernel_delayjc, "SYSFS_KNOBS", tmp_path / "absent")
    be, sim = backends.get("iozone"), backends.get("sim")
    point = {"policy": "ext4", "machine": "guest"}
    ctx = type("Ctx", (), {"freq_mode": "native"})()
    assert be.isolated_clock(point, ctx) and not sim.isolated_clock(point, ctx)
    assert not be.isolated_clock({**point, "machine": "guest:clock=host"}, ctx)
    assert not be.isolated_clock({**point, "machine": "host"}, ctx)
    assert be.isolated_clock({"policy": KDELAYJC, "machine": "host"}, ctx)   # in the guest
    assert set(be.dataset_coords({"machine": ["host", "guest"]})) == {"clock", "kernel"}
    assert be.dataset_coords({"policy": ["ext4"]}) == {} == sim.dataset_coords({"machine": ["host"]})


def test_virtual_frequencies_are_refused_where_no_guest_clock_runs():
    with pytest.raises(ConfigError, match="guest"):
        backends.get("iozone").check_virtual_freq({"machine": ["host"], "freq_ghz": [1.0]})
    backends.get("iozone").check_virtual_freq({"machine": ["guest"], "freq_ghz": [1.0, 0.5]})
    with pytest.raises(ConfigError, match="guest"):
        backends.get("bps").check_virtual_freq({"freq_ghz": [1.0]})
