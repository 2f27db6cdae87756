"""Kernel delayJC policy: spec parsing, sysfs knobs (on a fake tree), guest run mapping."""

import numpy as np
import pytest

from abtlab import trace
from abtlab.backends import kdelayjc
from abtlab.backends.base import RunContext
from abtlab.errors import ConfigError, RunError
from abtlab.system import cleanup, guest


def test_parse_spec_and_label_round_trip():
    pol = kdelayjc.parse_kdelayjc("kdelayjc:window=2ms,max_resets=8")
    assert pol.kind == "kdelayjc"
    assert pol.params == {"window_us": 2000, "max_resets": 8}
    assert pol.label == "kdelayjc:window=2ms,max_resets=8"
    assert kdelayjc.parse_kdelayjc(pol.label) == pol
    assert kdelayjc.parse_kdelayjc("kdelayjc:window=1500us").params == {"window_us": 1500, "max_resets": 0}
    assert kdelayjc.parse_kdelayjc("kdelayjc:window=0").params["window_us"] == 0
    assert pol.journal and pol.mount_options() == "" and pol.preload_env() == {}


@pytest.mark.parametrize("spec, field", [
    ("kdelayjc", "policy kdelayjc.window"),
    ("kdelayjc:max_resets=3", "policy kdelayjc.window"),
    ("kdelayjc:window=fast", "policy kdelayjc.window"),
    ("kdelayjc:window=1.5us", "policy kdelayjc.window"),
    ("kdelayjc:window=2ms,max_resets=-1", "policy kdelayjc.max_resets"),
    ("kdelayjc:window=2ms,max_resets", "policy kdelayjc.max_resets"),
    ("kdelayjc:window=2ms,max_age=1s", "policy kdelayjc.max_age"),
    ("delayjc:window=2ms", "policy"),
])
def test_bad_specs_name_the_field(spec, field):
    with pytest.raises(ConfigError) as err:
        kdelayjc.parse_kdelayjc(spec)
    assert err.value.field == field


def test_guest_policy_accepts_stock_and_preload_but_not_nojc():
    assert kdelayjc.guest_policy("ext4").kind == "ext4"
    assert kdelayjc.guest_policy("delayjc:window=2ms").kind == "delayjc"
    assert kdelayjc.guest_policy("kdelayjc:window=2ms").kind == "kdelayjc"
    with pytest.raises(ConfigError):
        kdelayjc.guest_policy("nojc")


def _fake_sysfs(tmp_path, window="0", resets="0"):
    root = tmp_path / "parameters"
    root.mkdir()
    (root / "delayjc_window_us").write_text(window + "\n")
    (root / "delayjc_max_resets").write_text(resets + "\n")
    return root


def test_knobs_written_and_restored(tmp_path):
    root = _fake_sysfs(tmp_path, "7", "3")
    assert kdelayjc.knobs_present(root)
    with kdelayjc.KernelKnobs("kdelayjc:window=2ms,max_resets=8", root):
        assert (root / "delayjc_window_us").read_text() == "2000\n"
        assert (root / "delayjc_max_resets").read_text() == "8\n"
        assert any("delayjc knobs" in p for p in cleanup.pending())
    assert (root / "delayjc_window_us").read_text().strip() == "7"
    assert (root / "delayjc_max_resets").read_text().strip() == "3"
    assert not any("delayjc knobs" in p for p in cleanup.pending())


def test_knobs_restored_when_the_run_fails(tmp_path):
    root = _fake_sysfs(tmp_path)
    with pytest.raises(ValueError):
        with kdelayjc.KernelKnobs("kdelayjc:window=5ms,max_resets=1", root):
            raise ValueError("workload failed")
    assert (root / "delayjc_window_us").read_text().strip() == "0"


def test_knobs_refused_on_an_unpatched_kernel(tmp_path):
    assert not kdelayjc.knobs_present(tmp_path)
    with pytest.raises(RunError, match="lacks the delayjc patch"):
        with kdelayjc.KernelKnobs("kdelayjc:window=2ms", tmp_path):
            pass


def _argv(data_dir, dilate, tpath):
    return ["/x/backends/iozone/abt-iozone", "--threads", 4, "--dir", data_dir, "--trace", tpath]


def test_guest_run_maps_programs_knobs_and_preload():
    ctx = RunContext(workdir=".")
    run = kdelayjc._guest_run(_argv, kdelayjc.guest_policy("kdelayjc:window=5ms,max_resets=8"), ctx)
    assert run.argv == ["/abt/abt-iozone", "--threads", "4", "--dir", "/mnt/data", "--trace", "/out/ops.trace"]
    assert (run.window_us, run.max_resets, run.env) == (5000, 8, {})
    pre = kdelayjc._guest_run(_argv, kdelayjc.guest_policy("delayjc:window=2ms,max_resets=8"), ctx)
    assert pre.argv[0] == "/abt/abt-iozone-dyn" and pre.window_us == 0
    assert pre.env["LD_PRELOAD"] == "/abt/libdelayjc.so"
    assert pre.env["ABT_DELAYJC_WINDOW_US"] == "2000"


def test_guest_iops_from_option_or_throttle_profile():
    assert kdelayjc._guest_iops({"device": "none"}, RunContext(workdir=".")) == 0
    assert kdelayjc._guest_iops({"device": "none"}, RunContext(workdir=".", options={"guest_iops": 50})) == 50
    assert kdelayjc._guest_iops({"device": "hdd7200-throttle"}, RunContext(workdir=".")) == 120
    with pytest.raises(ConfigError) as err:
        kdelayjc._guest_iops({"device": "hdd7200"}, RunContext(workdir="."))
    assert err.value.field == "device"


def _guest_files(tmp_path, before, after):
    ops = np.zeros(2, trace.RECORD_DTYPE)
    ops["op"] = int(trace.Op.FSYNC)
    ops["t_start_ns"], ops["t_end_ns"] = [10, 20], [15, 40]
    trace.write(tmp_path / "ops.trace", ops)
    return {"status": b"ok\n", "rc": b"0\n", "stdout": b"", "stderr": b"", "dmesg": b"",
            "info.before": before.encode(), "info.after": after.encode(),
            "ops.trace": (tmp_path / "ops.trace").read_bytes()}


def test_run_in_guest_builds_the_result_from_guest_files(tmp_path, monkeypatch):
    files = _guest_files(tmp_path, "3 transactions (1 requested), each up to 1024 blocks\n"
                         "0 delayjc windows, 0 delayjc resets\n",
                         "9 transactions (7 requested), each up to 1024 blocks\n"
                         "4 delayjc windows, 11 delayjc resets\n")
    seen = {}

    def fake_boot(run, workdir, **kw):
        seen.update(run=run, **kw)
        return guest._result(files, "console\n", 1.0)
    monkeypatch.setattr(guest, "boot", fake_boot)
    ctx = RunContext(workdir=tmp_path, options={"guest_iops": 40})
    res = kdelayjc.run_in_guest(_argv, {"policy": "kdelayjc:window=2ms,max_resets=8", "device": "none"},
                                ctx, data_bytes=1 << 20)
    assert seen["iops"] == 40 and seen["run"].window_us == 2000
    assert res.scalars["jbd2_info_commits"] == 6.0
    assert res.ops.size == 2 and res.ops["t_end_ns"].tolist() == [15, 40]
    assert res.attrs["kernel"] == guest.KERNEL_LABEL and "TCG" in res.attrs["kernel"]
    assert (res.attrs["delayjc_windows"], res.attrs["delayjc_resets"]) == (4, 11)
    assert not list(tmp_path.glob("guest-*"))
    res.scalars.update({"commits": 0.0, "nonblocked_threads": 4.0, "throughput": 5.0})
    kdelayjc.mask_commit_measures(res)
    assert np.isnan(res.scalars["commits"]) and np.isnan(res.scalars["nonblocked_threads"])
    assert res.scalars["throughput"] == 5.0 and res.scalars["jbd2_info_commits"] == 6.0


def test_run_in_guest_refuses_frequency_emulation(tmp_path):
    ctx = RunContext(workdir=tmp_path, freq_mode="emulated", f_ref_ghz=2.0)
    with pytest.raises(ConfigError) as err:
        kdelayjc.run_in_guest(_argv, {"policy": "ext4", "device": "none"}, ctx, data_bytes=1)
    assert err.value.field == "freq_mode"


def test_bare_metal_kernel_sets_knobs_around_the_host_run(tmp_path, monkeypatch):
    from abtlab.backends import realfs
    root = _fake_sysfs(tmp_path, "0", "0")
    monkeypatch.setattr(kdelayjc, "SYSFS_KNOBS", root)
    during = {}

    def fake_run_workload(argv_for, point, ctx, data_bytes):
        during.update(point=point, window=(root / "delayjc_window_us").read_text().strip(),
                      resets=(root / "delayjc_max_resets").read_text().strip())
        return realfs.RunResult(scalars={"jbd2_info_commits": 3.0})
    monkeypatch.setattr(realfs, "run_workload", fake_run_workload)
    res = kdelayjc.run_any(_argv, {"policy": "kdelayjc:window=10ms,max_resets=8"},
                           RunContext(workdir=tmp_path), 1)
    assert during == {"point": {"policy": "ext4"}, "window": "10000", "resets": "8"}
    assert "host kernel" in res.attrs["policy_mechanism"]
    assert (root / "delayjc_window_us").read_text().strip() == "0"


def test_run_any_sends_kdelayjc_to_the_guest_without_knobs(tmp_path, monkeypatch):
    from abtlab.backends import realfs
    monkeypatch.setattr(kdelayjc, "SYSFS_KNOBS", tmp_path / "absent")
    calls = []
    monkeypatch.setattr(kdelayjc, "run_in_guest", lambda *a, **k: calls.append("guest") or "g")
    monkeypatch.setattr(realfs, "run_workload", lambda *a, **k: calls.append("host") or "h")
    ctx = RunContext(workdir=tmp_path)
    assert kdelayjc.run_any(_argv, {"policy": "kdelayjc:window=2ms"}, ctx, 1) == "g"
    assert kdelayjc.run_any(_argv, {"policy": "ext4"}, ctx, 1) == "h"
    ctx.options["guest"] = True
    assert kdelayjc.run_any(_argv, {"policy": "ext4"}, ctx, 1) == "g"
    assert calls == ["guest", "host", "guest"]
