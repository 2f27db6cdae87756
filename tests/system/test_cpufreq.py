"""cpufreq on fake sysfs trees (acpi-cpufreq-like and intel_pstate-like): listing, pinning,
and restoring after normal exit, an exception and SIGTERM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from abtlab.errors import ConfigError, UnavailableError
from abtlab.system.cpufreq import FrequencyPin, available, cpus, frequencies

ROOT = Path(__file__).resolve().parents[2]
SAVED = ("scaling_governor", "scaling_min_freq", "scaling_max_freq")


def make_tree(root: Path, kind: str, ncpu=2) -> Path:
    """A sysfs cpu directory: 'acpi' (frequency table, userspace governor) or 'pstate'."""
    for cpu in range(ncpu):
        cf = root / f"cpu{cpu}" / "cpufreq"
        cf.mkdir(parents=True)
        files = {"cpuinfo_min_freq": "800000", "cpuinfo_max_freq": "3300000",
                 "scaling_min_freq": "800000", "scaling_max_freq": "3300000"}
        if kind == "acpi":
            files |= {"scaling_driver": "acpi-cpufreq", "scaling_governor": "ondemand",
                      "scaling_available_governors":
                          "conservative ondemand userspace powersave performance schedutil",
                      "scaling_available_frequencies": "3300000 2600000 2000000 1600000 800000",
                      "scaling_setspeed": "<unsupported>"}
        else:
            files |= {"scaling_driver": "intel_pstate", "scaling_governor": "powersave",
                      "scaling_available_governors": "performance powersave",
                      "scaling_setspeed": "<unsupported>"}
        for name, text in files.items():
            (cf / name).write_text(text + "\n")
    (root / "cpu2").mkdir()  # a CPU without cpufreq is ignored
    return root


def state(root: Path):
    return {c: tuple((root / f"cpu{c}/cpufreq" / k).read_text().strip() for k in SAVED)
            for c in cpus(root)}


def test_no_cpufreq_is_reported_and_refused(tmp_path):
    ok, why = available(tmp_path)
    assert not ok and "no cpufreq" in why
    with pytest.raises(UnavailableError):
        FrequencyPin(2000000, root=tmp_path)


def test_frequencies_from_table_and_from_range(tmp_path):
    acpi = make_tree(tmp_path / "a", "acpi")
    pstate = make_tree(tmp_path / "p", "pstate")
    assert frequencies(acpi) == [800000, 1600000, 2000000, 2600000, 3300000]
    f = frequencies(pstate)
    assert f[0] == 800000 and f[-1] == 3300000 and f[1] - f[0] == 100000
    assert available(acpi) == (True,
                               "cpufreq acpi-cpufreq on 2 CPUs, pinning by userspace governor")
    assert "min=max" in available(pstate)[1]


def test_userspace_pin_and_restore(tmp_path):
    root = make_tree(tmp_path, "acpi")
    before = state(root)
    with FrequencyPin(2000000, root=root) as pin:
        for c in (0, 1):
            cf = root / f"cpu{c}/cpufreq"
            assert (cf / "scaling_governor").read_text() == "userspace"
            assert (cf / "scaling_setspeed").read_text() == "2000000"
        assert pin.describe()["cpufreq_method"] == "userspace"
        assert pin.describe()["freq_mode"] == "real"
    assert state(root) == before


def test_intel_pstate_pins_with_min_max_and_restores_after_exception(tmp_path):
    root = make_tree(tmp_path, "pstate")
    before = state(root)
    with pytest.raises(RuntimeError):
        with FrequencyPin(1600000, root=root, cpus=[1]) as pin:
            cf = root / "cpu1/cpufreq"
            assert (cf / "scaling_governor").read_text() == "performance"
            assert (cf / "scaling_min_freq").read_text() == "1600000"
            assert (cf / "scaling_max_freq").read_text() == "1600000"
            assert (root / "cpu0/cpufreq/scaling_governor").read_text().strip() == "powersave"
            assert pin.methods == {1: "min=max"}
            raise RuntimeError("mid-run failure")
    assert state(root) == before


@pytest.mark.parametrize("kind,freq,field", [("acpi", 2100000, "freq"), ("pstate", 5000000, "freq"),
                                             ("acpi", "2GHz", "freq"), ("acpi", 2000000, "cpus")])
def test_bad_frequency_or_cpu_names_the_field(tmp_path, kind, freq, field):
    root = make_tree(tmp_path, kind)
    with pytest.raises(ConfigError) as err:
        FrequencyPin(freq, root=root, cpus=[7] if field == "cpus" else None)
    assert err.value.field == field
    assert state(root)[0][0] in ("ondemand", "powersave")


@pytest.mark.parametrize("kind", ["acpi", "pstate"])
def test_restored_after_sigterm_in_a_child(tmp_path, kind):
    root = make_tree(tmp_path, kind)
    before = state(root)
    code = (f"import time\nfrom abtlab.system import cleanup\n"
            f"from abtlab.system.cpufreq import FrequencyPin\ncleanup.installed()\n"
            f"with FrequencyPin(2600000 if {kind!r} == 'acpi' else 2500000, root={str(root)!r}):\n"
            f"    print('READY', flush=True)\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert proc.stdout.readline().startswith("READY"), proc.stderr.read()
        assert state(root) != before
        proc.send_signal(signal.SIGTERM)
        # generous: on a loaded 2-core CI machine a child's exit can take seconds
        _, err = proc.communicate(timeout=120)
        assert proc.returncode != 0, err
    finally:
        proc.kill()
    assert state(root) == before


@pytest.mark.parametrize("start,target", [(("800000", "800000"), 3300000),
                                          (("3300000", "3300000"), 800000),
                                          (("1200000", "2000000"), 2500000)])
def test_limits_never_cross_like_the_kernel_demands(tmp_path, monkeypatch, start, target):
    from abtlab.system import cpufreq
    root = make_tree(tmp_path, "pstate", ncpu=1)
    cf = root / "cpu0/cpufreq"
    (cf / "scaling_min_freq").write_text(start[0])
    (cf / "scaling_max_freq").write_text(start[1])
    real_write = cpufreq.write

    def strict(path, value):  # EINVAL, as the kernel answers min > max
        other = {"scaling_min_freq": "scaling_max_freq", "scaling_max_freq": "scaling_min_freq"}
        name = Path(path).name
        if name in other:
            cur = int((Path(path).parent / other[name]).read_text())
            if (name == "scaling_min_freq" and int(value) > cur) or \
                    (name == "scaling_max_freq" and int(value) < cur):
                raise OSError(22, f"{name}={value} crosses {cur}")
        real_write(path, value)

    monkeypatch.setattr(cpufreq, "write", strict)
    before = state(root)
    with FrequencyPin(target, root=root):
        assert state(root)[0][1:] == (str(target), str(target))
    assert state(root) == before
