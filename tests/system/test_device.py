"""Device profiles: parsing, the throttle files they write, and a real slowdown of fsync."""
from __future__ import annotations

from pathlib import Path

import pytest

from abtlab.errors import ConfigError
from abtlab.system.device import PROFILES, DeviceThrottle, Profile, parse_profile
from test_slowdisk import _fsyncs   # tests/system: a 4 KiB write and fsync per file

V1 = Path("/sys/fs/cgroup/blkio")


def test_named_profiles_have_values_and_sources():
    assert set(PROFILES) == {"none", "hdd7200", "hdd7200-nocache", "ssd-sata", "hdd7200-throttle",
                             "ssd-sata-throttle"}
    hdd, ssd = PROFILES["hdd7200-throttle"], PROFILES["ssd-sata-throttle"]
    assert 75 <= hdd.write_iops <= 150 and 100e6 <= hdd.write_bps <= 160e6
    assert ssd.write_iops > hdd.write_iops * 10 and ssd.read_bps > hdd.read_bps
    assert all(p.source for p in PROFILES.values())
    assert PROFILES["none"].limits() == {}
    # The latency kind (values checked in tests/system/test_slowdisk.py) writes no throttle limits.
    assert {n for n, p in PROFILES.items() if p.kind == "latency"} == {"hdd7200", "hdd7200-nocache",
                                                                       "ssd-sata"}
    assert PROFILES["hdd7200"].limits() == {} and PROFILES["hdd7200"].latency()


@pytest.mark.parametrize("text,expect", [
    ("hdd7200-throttle", PROFILES["hdd7200-throttle"]),
    ("iops=120,bps=120M", Profile("iops=120,bps=120M", 120, 120, 120_000_000, 120_000_000,
                                  "explicit limits")),
    ("wiops=50", Profile("wiops=50", write_iops=50, source="explicit limits")),
    ("rbps=1Mi, wbps=2K", Profile("rbps=1Mi, wbps=2K", read_bps=2**20, write_bps=2000,
                                  source="explicit limits")),
])
def test_parse_profile(text, expect):
    assert parse_profile(text) == expect


@pytest.mark.parametrize("bad", ["", "hdd5400", "iops=", "iops=-1", "iops=0", "iops=12M",
                                 "speed=3", "bps=1T", 120, None, "iops=1,,bps=2", "fixed:",
                                 "fixed:12", "fixed:0ms", "fixed:20s", "fixed:10001ms",
                                 "fixed:-1ms", "fixed:1.5ns"])
def test_bad_profiles_name_the_device_field(bad):
    with pytest.raises(ConfigError) as err:
        parse_profile(bad)
    assert err.value.field == "device"


@pytest.mark.parametrize("text,ns", [("fixed:12.67ms", 12_670_000), ("fixed:500us", 500_000),
                                     ("fixed:1us", 1000), ("fixed:10000ms", 10**10)])
def test_fixed_profile_is_one_cost_per_request(text, ns):
    p = parse_profile(text)
    assert (p.kind, p.disk, p.fixed_ns, p.label) == ("latency", "fixed", ns, text)
    assert p.latency() == {"disk": "fixed", "fixed_ns": ns} and p.limits() == {}


def test_named_latency_profiles_run_the_drive_model():
    assert {n: p.disk for n, p in PROFILES.items() if p.kind == "latency"} == {
        "hdd7200": "hdd7200", "hdd7200-nocache": "hdd7200-nocache", "ssd-sata": "ssd-sata"}


def test_bad_major_minor_is_refused():
    with pytest.raises(ConfigError) as err:
        DeviceThrottle("hdd7200-throttle", "loop0")
    assert err.value.field == "major_minor"


def _fake_v1(tmp_path):
    for op in ("read", "write"):
        for unit in ("iops", "bps"):
            (tmp_path / f"blkio.throttle.{op}_{unit}_device").write_text("8:0 500\n")
    return tmp_path


def test_v1_limits_written_then_put_back(tmp_path):
    root = _fake_v1(tmp_path)
    with pytest.raises(RuntimeError):
        with DeviceThrottle("iops=77,wbps=5M", "7:3", v1_root=root) as t:
            assert (root / "blkio.throttle.write_iops_device").read_text() == "7:3 77"
            assert (root / "blkio.throttle.read_iops_device").read_text() == "7:3 77"
            assert (root / "blkio.throttle.write_bps_device").read_text() == "7:3 5000000"
            assert (root / "blkio.throttle.read_bps_device").read_text() == "8:0 500\n"
            assert t.describe()["device_write_iops"] == 77
            raise RuntimeError("mid-run failure")
    # A fake file keeps only the last write: the undo wrote "no limit" for our device.
    for name in ("write_iops", "read_iops", "write_bps"):
        assert (root / f"blkio.throttle.{name}_device").read_text() == "7:3 0"


def test_none_profile_touches_nothing(tmp_path):
    root = _fake_v1(tmp_path)
    with DeviceThrottle("none", "7:3", v1_root=root) as t:
        assert t.describe()["device_throttle"] == "none"
    assert all(f.read_text() == "8:0 500\n" for f in root.iterdir())


def _lines_for(mm):
    return [line for f in V1.glob("blkio.throttle.*_device")
            for line in f.read_text().splitlines() if line.split()[0] == mm]


@pytest.mark.root
def test_hdd_throttle_is_set_on_the_device_then_goes_away(scratch_ext4):
    """The rule is on the scratch device while the profile is active and gone after; how
    much it slows fsync is measured side by side by `python -m benchmarks.device`."""
    fs = scratch_ext4
    with DeviceThrottle("hdd7200-throttle", fs.major_minor) as t:
        if t.backend == "v1":
            assert f"{fs.major_minor} 120" in _lines_for(fs.major_minor)
        else:
            assert (t.cgroup / "io.max").read_text().startswith(fs.major_minor)
        assert len(_fsyncs(fs.mountpoint, 2)) == 2   # I/O under the rule still completes
        cg = t.cgroup
    assert _lines_for(fs.major_minor) == []
    assert cg is None or not cg.exists()


def test_latency_profile_is_not_a_throttle():
    with pytest.raises(ConfigError) as err:
        DeviceThrottle("hdd7200", "7:3")
    assert err.value.field == "device"


def test_existing_limit_is_reported_and_restored(tmp_path):
    root = _fake_v1(tmp_path)
    (root / "blkio.throttle.write_iops_device").write_text("7:3 33\n")
    with pytest.warns(RuntimeWarning, match="already limits 7:3 to 33"):
        with DeviceThrottle("wiops=50", "7:3", v1_root=root):
            assert (root / "blkio.throttle.write_iops_device").read_text() == "7:3 50"
    assert (root / "blkio.throttle.write_iops_device").read_text() == "7:3 33"
