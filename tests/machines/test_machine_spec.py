"""--machine: specs parsed once into a frozen Machine; bad keys and values name the key."""
import dataclasses

import pytest

from abtlab.machines import guest_disk, spec as machine
from abtlab.errors import ConfigError
from abtlab.sweep.runner import build_levels


def test_host_is_the_default_and_guest_has_defaults():
    assert machine.parse_machine("host") is machine.HOST and not machine.HOST.is_guest
    g = machine.parse_machine("guest")
    assert (g.kind, g.clock, g.cpus, g.kernel, g.shift, g.mem, g.depth) == \
        ("guest", "virtual", 1, "6.1", 0, 1024, 1)
    assert g.label == "guest" and g.ns_per_insn == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.cpus = 3


def test_keys_round_trip_through_the_label():
    g = machine.parse_machine(" guest: shift=2 ,depth=32,mem=2048")
    assert (g.cpus, g.shift, g.depth, g.mem) == (1, 2, 32, 2048)
    assert g.label == "guest:shift=2,mem=2048,depth=32"
    assert machine.parse_machine(g.label) == g and g.ns_per_insn == 4
    h = machine.parse_machine("guest:clock=host,cpus=3")
    assert h.label == "guest:clock=host,cpus=3" and h.ns_per_insn == 0
    assert h.attrs()["clock"] == "host" and "icount" not in h.attrs()
    assert "one guest instruction = 4 ns" in g.attrs()["icount"]


def test_datasets_say_whether_a_rerun_repeats():
    """One vCPU in virtual time repeats exactly; several share qemu's round-robin, which
    the host can force to switch vCPUs; the host clock never repeats."""
    rep = {spec: machine.parse_machine(spec).attrs()["repeatable"]
           for spec in ("guest", "guest:cpus=2", "guest:clock=host")}
    assert rep["guest"].startswith("exact")
    assert rep["guest:cpus=2"].startswith("usually") and "round-robin" in rep["guest:cpus=2"]
    assert rep["guest:clock=host"].startswith("no")


@pytest.mark.parametrize("spec,key", [
    ("vm", ""), ("guest:cpus=9", "cpus"), ("guest:cpus=two", "cpus"), ("guest:clock=wall", "clock"),
    ("guest:shift=11", "shift"), ("guest:kernel=5.4", "kernel"), ("guest:color=red", "color"),
    ("guest:cpus", "cpus"), ("guest:cpus=2,cpus=3", "cpus"), ("guest:clock=host,shift=2", "shift"),
    ("guest:depth=0", "depth"), ("guest:mem=64", "mem"), ("host:cpus=2", "")])
def test_bad_specs_name_machine_and_the_key(spec, key):
    with pytest.raises(ConfigError) as err:
        machine.parse_machine(spec)
    assert err.value.field == ("--machine" + (f" guest:{key}" if key else ""))


def test_lists_split_on_semicolons_and_plain_commas():
    ms = machine.parse_machines("host;guest:clock=host,cpus=4")
    assert [m.label for m in ms] == ["host", "guest:clock=host,cpus=4"]
    assert [m.label for m in machine.parse_machines("host,guest")] == ["host", "guest"]
    assert [m.label for m in machine.parse_machines(["guest", "host"])] == ["guest", "host"]
    with pytest.raises(ConfigError, match="distinct"):
        machine.parse_machines("guest;guest:cpus=1")
    with pytest.raises(ConfigError):
        machine.parse_machines(" ; ")


def test_machine_is_a_factor_of_the_real_backends():
    levels, _ = build_levels("iozone", machine="host;guest:shift=1")
    assert list(map(str, levels["machine"])) == ["host", "guest:shift=1"]   # Machine values
    assert build_levels("metarates")[0]["machine"] == ["host"]
    with pytest.raises(ConfigError) as err:
        build_levels("iozone", machine="guest:shift=x")
    assert err.value.field == "--machine guest:shift"


def test_old_guest_option_is_gone():
    with pytest.raises(ConfigError) as err:
        build_levels("iozone", guest=True)
    assert err.value.field == "guest"


def test_coords_give_each_level_its_clock_and_kernel():
    c = machine.machine_coords(["host", "guest:clock=host,cpus=2", "guest"])
    assert c["clock"] == ("machine", ["host", "host", "virtual"])
    assert c["kernel"] == ("machine", ["host", "6.1", "6.1"])


def test_knob_items_need_the_knobs_module_or_reach_it():
    try:
        import abtlab.machines.kernel_knobs  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError) as err:
            machine.parse_machine("guest:legacy=shadow_wait")
        assert err.value.field == "--machine guest:legacy"
    else:
        assert machine.parse_machine("guest:sched=default").knobs == (("sched", "default"),)


def test_virtual_frequency_is_an_icount_shift_of_guests_only():
    from abtlab.backends.base import RunContext
    from abtlab.machines.dispatch import machine_for
    from abtlab.factors.levels import parse_freq
    assert parse_freq("virtual:1,0.5,0.125").levels == [1.0, 0.5, 0.125]
    with pytest.raises(ConfigError) as err:     # not an icount shift: refused for clock=virtual
        build_levels("iozone", freq="virtual:0.3", machine="guest")
    assert err.value.field == "freq" and "1/2^S" in str(err.value)
    levels, opts = build_levels("iozone", freq="virtual:1,0.25", machine="guest")
    assert opts["freq_mode"] == "virtual" and levels["freq_ghz"] == [1.0, 0.25]
    ctx = RunContext(workdir=".", freq_mode="virtual")
    assert machine_for({"machine": "guest", "freq_ghz": 0.25}, ctx).shift == 2
    assert machine_for({"machine": "guest", "freq_ghz": 1.0}, ctx).label == "guest"
    for bad in ("host;guest", "guest:shift=1", "guest:clock=host"):
        with pytest.raises(ConfigError) as err:
            build_levels("iozone", freq="virtual:1,0.5", machine=bad)
        assert err.value.field == "freq"


def test_plot_panels_and_provenance_say_the_clock():
    import xarray as xr
    from abtlab.present.plots import _panel_title
    from abtlab.stats.values import provenance_label
    ds = xr.Dataset(coords={"machine": ["host", "guest"]},
                    attrs={"freq_mode": "emulated", "clock": "host | virtual"})
    ds = ds.assign_coords(machine.machine_coords(["host", "guest"]))
    assert _panel_title(ds, "machine", "guest") == "machine=guest [virtual clock]"
    assert _panel_title(ds, "machine", "host") == "machine=host [host clock]"
    assert "VIRTUAL time" in provenance_label(ds)
    assert "VIRTUAL" not in provenance_label(ds.assign_attrs(clock="host"))


def test_a_machine_carries_what_it_implies():
    host, g, k342 = (machine.parse_machine(s) for s in ("host", "guest:clock=host", "guest:kernel=3.4.2"))
    assert host.guest_kernel is None and host.kernel_knobs is None
    assert not host.is_guest and not host.isolated_clock
    assert g.is_guest and not g.isolated_clock    # timed by the host's clock
    assert k342.isolated_clock and k342.guest_kernel.disk is guest_disk.Brd and k342.guest_kernel.max_depth == 1
    assert k342.kernel_knobs.iosched == "cfq" and k342.kernel_knobs is k342.kernel_knobs   # once
    assert host.available()


def test_every_kernel_name_is_one_row_of_the_table():
    from abtlab.machines import kernels
    assert set(machine.KERNELS) == set(kernels.KERNELS)
    for name, row in kernels.KERNELS.items():
        m = machine.parse_machine(f"guest:kernel={name}")
        assert m.guest_kernel is row and row.boot_cmdline(256).startswith("console=ttyS0")


def test_lockstep_is_the_papers_clock_in_ghz():
    """clock=lockstep: every vCPU at mhz= (one instruction a cycle); `--freq virtual:F` is F
    GHz itself; mhz= and quantum= belong to it alone."""
    from abtlab.backends.base import RunContext
    from abtlab.machines.dispatch import machine_for
    from abtlab.machines.guest import Qemu, qemu_argv
    m = machine.parse_machine("guest:clock=lockstep,cpus=4,kernel=3.4.2")
    assert (m.mhz, m.quantum, m.lockstep, m.isolated_clock) == (1000, 10000, True, True)
    assert m.label == "guest:clock=lockstep,cpus=4,kernel=3.4.2"
    f = machine.parse_machine("guest:clock=lockstep,cpus=4,mhz=3300,quantum=2000")
    assert f.label == "guest:clock=lockstep,cpus=4,mhz=3300,quantum=2000" and machine.parse_machine(f.label) == f
    assert f.ns_per_insn == pytest.approx(1000 / 3300)
    attrs = f.attrs()
    assert attrs["cpu_clock_ghz"] == "3.3" and attrs["lockstep_quantum_insns"] == "2000"
    assert "3.3 GHz" in attrs["lockstep"] and attrs["repeatable"].startswith("exact")
    argv = qemu_argv(f, "bz", "rd", "c", "r", Qemu("q"))
    assert argv[argv.index("-icount") + 1] == "shift=0,sleep=off,lockstep=2000,mhz=3300"
    levels, opts = build_levels("iozone", freq="virtual:1.6,2.4,3.3", machine=m.label)
    assert levels["freq_ghz"] == [1.6, 2.4, 3.3]
    ctx = RunContext(workdir=".", freq_mode="virtual")
    at = machine_for({"machine": m.label, "freq_ghz": 3.3}, ctx)
    assert (at.mhz, at.shift) == (3300, 0)
    assert machine.parse_machine("guest").label == "guest"      # defaults stay out of labels


@pytest.mark.parametrize("spec,key", [
    ("guest:mhz=3300", "mhz"), ("guest:clock=host,quantum=500", "quantum"),
    ("guest:clock=lockstep,shift=1", "shift"), ("guest:clock=lockstep,mhz=20", "mhz"),
    ("guest:clock=lockstep,quantum=10", "quantum")])
def test_lockstep_keys_are_refused_elsewhere_and_out_of_range(spec, key):
    with pytest.raises(ConfigError) as err:
        machine.parse_machine(spec)
    assert err.value.field == f"--machine guest:{key}"


def test_virtual_levels_follow_the_machines_clock():
    with pytest.raises(ConfigError) as err:    # lock-step: 0.05-10 GHz
        build_levels("iozone", freq="virtual:12", machine="guest:clock=lockstep")
    assert err.value.field == "freq"
    with pytest.raises(ConfigError) as err:    # the frequency axis sets mhz=
        build_levels("iozone", freq="virtual:1.6", machine="guest:clock=lockstep,mhz=2000")
    assert err.value.field == "freq" and "mhz" in str(err.value)
