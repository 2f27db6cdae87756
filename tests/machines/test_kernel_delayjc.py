"""Kernel delayJC policy: spec parsing, sysfs knobs (on a fake tree), machine dispatch."""

import pytest

from abtlab.machines import dispatch, kernel_delayjc
from abtlab.backends.base import RunContext
from abtlab.policies.kdelayjc import parse_kdelayjc
from abtlab.errors import ConfigError, RunError
from abtlab.system import cleanup


def test_parse_spec_and_label_round_trip():
    pol = parse_kdelayjc("kdelayjc:window=2ms,max_resets=8")
    assert pol.kind == "kdelayjc"
    assert pol.params == {"window_us": 2000, "max_resets": 8}
    assert pol.label == "kdelayjc:window=2ms,max_resets=8"
    assert parse_kdelayjc(pol.label) == pol
    assert parse_kdelayjc("kdelayjc:window=1500us").params == {"window_us": 1500, "max_resets": 0}
    assert parse_kdelayjc("kdelayjc:window=0").params["window_us"] == 0
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
        parse_kdelayjc(spec)
    assert err.value.field == field


def _fake_sysfs(tmp_path, window="0", resets="0"):
    root = tmp_path / "parameters"
    root.mkdir()
    (root / "delayjc_window_us").write_text(window + "\n")
    (root / "delayjc_max_resets").write_text(resets + "\n")
    return root


def test_knobs_written_and_restored(tmp_path):
    root = _fake_sysfs(tmp_path, "7", "3")
    assert kernel_delayjc.knobs_present(root)
    with kernel_delayjc.KernelKnobs("kdelayjc:window=2ms,max_resets=8", root):
        assert (root / "delayjc_window_us").read_text() == "2000\n"
        assert (root / "delayjc_max_resets").read_text() == "8\n"
        assert any("delayjc knobs" in p for p in cleanup.pending())
    assert (root / "delayjc_window_us").read_text().strip() == "7"
    assert (root / "delayjc_max_resets").read_text().strip() == "3"
    assert not any("delayjc knobs" in p for p in cleanup.pending())


def test_knobs_restored_when_the_run_fails(tmp_path):
    root = _fake_sysfs(tmp_path)
    with pytest.raises(ValueError):
        with kernel_delayjc.KernelKnobs("kdelayjc:window=5ms,max_resets=1", root):
            raise ValueError("workload failed")
    assert (root / "delayjc_window_us").read_text().strip() == "0"


def test_knobs_refused_on_an_unpatched_kernel(tmp_path):
    assert not kernel_delayjc.knobs_present(tmp_path)
    with pytest.raises(RunError, match="lacks the delayjc patch"):
        with kernel_delayjc.KernelKnobs("kdelayjc:window=2ms", tmp_path):
            pass


def _argv(data_dir, dilate, tpath):
    return ["/x/backends/iozone/abt-iozone", "--threads", 4, "--dir", data_dir, "--trace", tpath]


def test_bare_metal_kernel_sets_knobs_around_the_host_run(tmp_path, monkeypatch):
    from abtlab.machines import host
    root = _fake_sysfs(tmp_path, "0", "0")
    monkeypatch.setattr(kernel_delayjc, "SYSFS_KNOBS", root)
    during = {}

    def fake_run_workload(argv_for, point, ctx, data_bytes):
        during.update(point=point, window=(root / "delayjc_window_us").read_text().strip(),
                      resets=(root / "delayjc_max_resets").read_text().strip())
        return host.RunResult(scalars={"jbd2_info_commits": 3.0})
    monkeypatch.setattr(host, "run_workload", fake_run_workload)
    res = dispatch.run_any(_argv, {"policy": "kdelayjc:window=10ms,max_resets=8"},
                           RunContext(workdir=tmp_path), 1)
    assert during == {"point": {"policy": "ext4"}, "window": "10000", "resets": "8"}
    assert "host kernel" in res.attrs["policy_mechanism"]
    assert (root / "delayjc_window_us").read_text().strip() == "0"


def test_run_any_sends_kdelayjc_to_the_guest_without_knobs(tmp_path, monkeypatch):
    from abtlab.machines import host
    monkeypatch.setattr(kernel_delayjc, "SYSFS_KNOBS", tmp_path / "absent")
    calls = []
    monkeypatch.setattr(host, "run_workload",
                        lambda *a, **k: calls.append("host") or host.RunResult(scalars={}))
    monkeypatch.setattr(dispatch, "run_in_guest", lambda *a, **k: calls.append(a[4]) or "g")
    ctx = RunContext(workdir=tmp_path)
    assert dispatch.run_any(_argv, {"policy": "kdelayjc:window=2ms"}, ctx, 1) == "g"
    assert dispatch.run_any(_argv, {"policy": "ext4"}, ctx, 1).attrs["clock"] == "host"
    assert dispatch.run_any(_argv, {"policy": "ext4", "machine": "host"}, ctx, 1).attrs["machine"] == "host"
    assert dispatch.run_any(_argv, {"policy": "ext4", "machine": "guest:shift=1"}, ctx, 1) == "g"
    assert [getattr(c, "label", c) for c in calls] == ["guest", "host", "host", "guest:shift=1"]
