"""libsera.so on a fake cpufreq tree: decisions, writes, restore after exit and SIGTERM;
SIGKILL leaves the last setting (FrequencyPin in the parent restores governor/limits)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import abtlab.sera as sera
from abtlab.system.cpufreq import FrequencyPin
from abtlab.trace import Flag

REF = Path(__file__).resolve().parents[2] / "data" / "reference"
HIGH, READ_KHZ = 2500000, 1800000     # Table II: contiguous individual blocking read 1-2MB
pytestmark = pytest.mark.skipif(not shutil.which("dd"), reason="needs dd")


def fake_cpus(root: Path, acpi=False) -> Path:
    for cpu in range(os.cpu_count()):
        cf = root / f"cpu{cpu}" / "cpufreq"
        cf.mkdir(parents=True)
        files = {"scaling_setspeed": str(HIGH)}
        if acpi:
            files |= {"scaling_governor": "ondemand", "scaling_min_freq": "800000",
                      "scaling_max_freq": "2500000", "cpuinfo_min_freq": "800000",
                      "cpuinfo_max_freq": "2500000", "scaling_driver": "acpi-cpufreq",
                      "scaling_available_governors": "ondemand userspace performance",
                      "scaling_available_frequencies": "2500000 1800000 1300000 800000",
                      "scaling_setspeed": "<unsupported>"}
        for name, text in files.items():
            (cf / name).write_text(text + "\n")
    return root


def speeds(root):
    return sorted({(root / f"cpu{c}/cpufreq/scaling_setspeed").read_text().strip()
                   for c in range(os.cpu_count())})


def table_file(tmp_path, **kw):
    t = sera.load(REF / "sera_target_table_example.csv")
    return sera.write_table(t, tmp_path / "libsera.txt", **{"guard_ns": 0, **kw})


def run_dd(tmp_path, env, count=3, out=None, **kw):
    argv = ["dd", "if=/dev/zero", f"of={out or tmp_path / 'data'}", "bs=2M", "status=none"]
    argv += [f"count={count}", "conv=fsync"] if count else []
    return subprocess.Popen(argv, env={**os.environ, **env}, **kw)


def test_switches_around_each_matching_call_and_restores(built_native, tmp_path):
    root = fake_cpus(tmp_path / "cpu")
    env = sera.environment(table_file(tmp_path), tmp_path / "dec", root)
    assert run_dd(tmp_path, env).wait(30) == 0
    d = sera.read_decisions(tmp_path / "dec")
    # 3 reads of 2 MB match the 1.8 GHz entry; writes have no entry (-> highest, no switch)
    assert list(d["bytes"]) == [READ_KHZ, HIGH] * 3
    assert not (d["flags"] & Flag.ERROR).any()          # applied to the fake tree
    assert (d["t_end_ns"] >= d["t_start_ns"]).all()
    assert speeds(root) == [str(HIGH)]


def test_hold_gives_one_switch_down_for_a_dense_run(built_native, tmp_path):
    """Reads and writes of 2 MB both map to 1.3 GHz: without hold each call switches down
    and up; with a long hold the run switches down once per CPU and up once at exit."""
    root = fake_cpus(tmp_path / "cpu")
    entries = [sera.TableEntry(op, "contiguous", False, True, 1 << 20, 4 << 20, 1.3)
               for op in ("read", "write")]
    table = sera.FrequencyTable(entries, (0.8, 1.3, 1.8, 2.5))
    counts = {}
    for hold in (0, 600 * 10**9):
        path = sera.write_table(table, tmp_path / f"t{hold}.txt", guard_ns=0, hold_ns=hold)
        env = sera.environment(path, tmp_path / f"dec{hold}", root)
        assert run_dd(tmp_path, env, count=4).wait(30) == 0
        d = sera.read_decisions(tmp_path / f"dec{hold}")
        counts[hold] = int((d["bytes"] == 1300000).sum()), int((d["bytes"] == HIGH).sum())
        assert speeds(root) == [str(HIGH)]
    assert counts[0] == (8, 8)
    down, up = counts[600 * 10**9]
    assert 1 <= down <= os.cpu_count() and up == down


def test_guard_skips_calls_predicted_short(built_native, tmp_path):
    root = fake_cpus(tmp_path / "cpu")
    env = sera.environment(table_file(tmp_path, guard_ns=10**12), tmp_path / "dec", root)
    assert run_dd(tmp_path, env).wait(30) == 0
    assert len(sera.read_decisions(tmp_path / "dec")) == 0
    assert speeds(root) == [str(HIGH)]


def test_without_cpufreq_decisions_are_recorded_not_applied(built_native, tmp_path):
    root = tmp_path / "nocpufreq"
    root.mkdir()
    env = sera.environment(table_file(tmp_path), tmp_path / "dec", root)
    assert run_dd(tmp_path, env).wait(30) == 0
    d = sera.read_decisions(tmp_path / "dec")
    assert list(d["bytes"]) == [READ_KHZ, HIGH] * 3
    assert (d["flags"] & Flag.ERROR).all()
    assert list(root.iterdir()) == []


def wait_for(cond, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def endless_low(tmp_path, root):
    """dd reading /dev/zero forever, held at the low frequency; returns the process."""
    env = sera.environment(table_file(tmp_path, hold_ns=600 * 10**9), tmp_path / "dec", root)
    proc = run_dd(tmp_path, env, count=0, out="/dev/null")
    if not wait_for(lambda: str(READ_KHZ) in speeds(root)):
        proc.kill()
        pytest.fail("libsera never switched the fake CPU down")
    return proc


def endless_reads(tmp_path, root):
    """A program that, once started, makes only 2 MB reads (dd alternates reads with
    writes, which switch back to the highest frequency): after the first switch down the
    setting stays low, so what a SIGKILL leaves behind is known."""
    env = sera.environment(table_file(tmp_path, hold_ns=600 * 10**9), tmp_path / "dec", root)
    code = "import os\nfd = os.open('/dev/zero', os.O_RDONLY)\nwhile True:\n    os.read(fd, 2 << 20)\n"
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **env})
    if not wait_for(lambda: str(READ_KHZ) in speeds(root)):
        proc.kill()
        pytest.fail("libsera never switched the fake CPU down")
    return proc


def test_sigterm_restores(built_native, tmp_path):
    root = fake_cpus(tmp_path / "cpu")
    proc = endless_low(tmp_path, root)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == -signal.SIGTERM
    finally:
        proc.kill()
    assert speeds(root) == [str(HIGH)]
    assert sera.read_decisions(tmp_path / "dec")["bytes"][-1] == HIGH


def test_sigkill_leaves_last_setting_and_frequency_pin_restores(built_native, tmp_path):
    root = fake_cpus(tmp_path / "cpu", acpi=True)
    cf0 = root / "cpu0" / "cpufreq"
    with FrequencyPin(HIGH, root=str(root)):
        assert (cf0 / "scaling_governor").read_text().strip() == "userspace"
        proc = endless_reads(tmp_path, root)
        proc.kill()
        proc.wait(30)
        assert str(READ_KHZ) in speeds(root)       # SIGKILL cannot be caught
    assert (cf0 / "scaling_governor").read_text().strip() == "ondemand"
    assert (cf0 / "scaling_min_freq").read_text().strip() == "800000"
    assert (cf0 / "scaling_max_freq").read_text().strip() == "2500000"


def test_bad_table_refuses_to_run(built_native, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("highest 2500000\nrule erase 0 10 800000\n")
    proc = run_dd(tmp_path, sera.environment(bad), stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "table line 2" in err
    assert err.startswith(f"libsera: ABT_SERA_TABLE: given '{bad}'; accepted: ")
