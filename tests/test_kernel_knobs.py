"""The guest kernel's legacy knobs: presets, spec items, what the guest writes, the attrs."""
import pytest

from abtlab.errors import ConfigError
from abtlab.schema import ATTR_GUEST_KERNEL, ATTR_IOSCHED, ATTR_LEGACY, ATTR_SCHED
from abtlab.system import kernel_knobs as kk

SHADOW = "/sys/module/jbd2/parameters/legacy_shadow_wait"
HANDLE = "/sys/module/ext4/parameters/legacy_write_handle"


def test_stock_kernel_writes_every_legacy_switch_off_and_no_cfs_setting():
    knobs = kk.parse_knobs()
    assert knobs == kk.KernelKnobs("6.1", frozenset(), "default", "none")
    assert knobs.writes("vda") == [(SHADOW, "0"), (HANDLE, "0"),
                                   ("/sys/block/vda/queue/scheduler", "none")]
    assert knobs.label == "6.1"


def test_legacy_preset_turns_every_knob_on():
    knobs = kk.parse_knobs("6.1-legacy")
    assert knobs.legacy == {"shadow_wait", "write_handle"}
    assert dict(knobs.writes("nullb0")) == {
        SHADOW: "1", HANDLE: "1",
        "/sys/kernel/debug/sched/latency_ns": "18000000",
        "/sys/kernel/debug/sched/min_granularity_ns": "2250000",
        "/sys/kernel/debug/sched/wakeup_granularity_ns": "3000000",
        "/sys/block/nullb0/queue/scheduler": "bfq"}
    assert knobs.label == "6.1-legacy(shadow_wait+write_handle,cfs34,bfq)"
    assert knobs.attrs() == {ATTR_GUEST_KERNEL: "6.1-legacy",
                             ATTR_LEGACY: "shadow_wait+write_handle",
                             ATTR_SCHED: "cfs34", ATTR_IOSCHED: "bfq"}


def test_items_override_the_preset_one_knob_at_a_time():
    one = kk.parse_knobs("6.1", legacy="shadow_wait")
    assert dict(one.writes("vda"))[SHADOW] == "1" and dict(one.writes("vda"))[HANDLE] == "0"
    assert one.label == "6.1(shadow_wait,default,none)"
    less = kk.parse_knobs("6.1-legacy", legacy="none", iosched="mq-deadline")
    assert (less.legacy, less.sched, less.iosched) == (frozenset(), "cfs34", "mq-deadline")
    assert less.attrs()[ATTR_LEGACY] == "none"
    assert kk.parse_knobs(legacy="write_handle+shadow_wait").legacy == set(kk.LEGACY_KNOBS)
    assert kk.parse_knobs(legacy="all") == kk.parse_knobs(legacy="shadow_wait+write_handle")


def test_writes_keep_legacy_switches_before_the_elevator():
    paths = [p for p, _ in kk.parse_knobs("6.1-legacy").writes("vda")]
    assert paths[:2] == [SHADOW, HANDLE] and paths[-1] == "/sys/block/vda/queue/scheduler"


@pytest.mark.parametrize("kernel, items, field", [
    ("3.4.2", {}, "--machine guest:kernel"),
    ("6.1", {"legacy": "shadow"}, "--machine guest:legacy"),
    ("6.1", {"legacy": "shadow_wait+"}, "--machine guest:legacy"),
    ("6.1", {"legacy": ""}, "--machine guest:legacy"),
    ("6.1", {"sched": "cfs"}, "--machine guest:sched"),
    ("6.1", {"iosched": "cfq"}, "--machine guest:iosched"),
    ("6.1", {"elevator": "bfq"}, "--machine guest:elevator"),
])
def test_bad_values_name_the_spec_field_and_what_is_accepted(kernel, items, field):
    with pytest.raises(ConfigError) as err:
        kk.parse_knobs(kernel, **items)
    assert err.value.field == field
    assert str(err.value.accepted)


def test_bad_device_name_is_refused():
    with pytest.raises(ConfigError, match="guest block device"):
        kk.parse_knobs().writes("../vda")


def _fake_tree(root, dev):
    for path, _ in kk.parse_knobs().writes(dev) + kk.parse_knobs("6.1-legacy").writes(dev):
        f = root / path.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("0\n")


def test_shell_script_writes_in_order_and_records_what_it_read_back(tmp_path):
    import subprocess
    _fake_tree(tmp_path, "vda")
    knobs = kk.parse_knobs("6.1-legacy")
    script = kk.shell_script(knobs, "vda", record=tmp_path / "rec", root=str(tmp_path))
    subprocess.run(["sh", "-c", script], check=True, capture_output=True)
    readback = kk.parse_readback((tmp_path / "rec").read_text())
    assert list(readback) == [p for p, _ in knobs.writes("vda")]
    assert knobs.readback_ok(readback, "vda")
    assert not kk.parse_knobs().readback_ok(readback, "vda")
    # the kernel's elevator file lists every scheduler, the active one in brackets
    readback["/sys/block/vda/queue/scheduler"] = "mq-deadline [bfq] none"
    assert knobs.readback_ok(readback, "vda")


def test_shell_script_fails_naming_the_path_it_could_not_write(tmp_path):
    import subprocess
    _fake_tree(tmp_path, "vda")
    (tmp_path / "sys/module/ext4/parameters/legacy_write_handle").unlink()
    (tmp_path / "sys/module/ext4/parameters").rmdir()
    script = kk.shell_script(kk.parse_knobs(), "vda", record=tmp_path / "rec", root=str(tmp_path))
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 97
    assert "/sys/module/ext4/parameters/legacy_write_handle" in proc.stderr
