"""The guest kernel's legacy knobs: presets, spec items, what the guest writes, the attrs."""
import pytest

from abtlab.errors import ConfigError
from abtlab.schema import ATTR_KERNEL_PRESET, ATTR_IOSCHED, ATTR_LEGACY, ATTR_SCHED
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
    assert knobs.attrs() == {ATTR_KERNEL_PRESET: "6.1-legacy",
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


# --- in the guest (slow): each knob reaches the kernel and changes what it records ---
import os  # noqa: E402
import re  # noqa: E402

from abtlab.system import guest  # noqa: E402

JINFO = "/proc/fs/jbd2/vda-8/info"
# 64 writers append 128 KiB in 32 KiB records and fsync, on a disk of 200 requests/s
IOZONE = "/abt/abt-iozone --threads 64 --file-size 128k --record-size 32k --dir /mnt/data " \
         "--no-record\n"


@pytest.fixture
def booted(tmp_path, request):
    """boot(knobs, workload sh, **boot kwargs) -> GuestResult, knobs written first."""
    if not hasattr(guest, "boot"):  # the one-point harness these were measured with
        pytest.skip("written for guest.boot (one point a boot); not yet ported to "
                    "guest.boot_batch and the null_blk disk")
    request.getfixturevalue("built_guest")

    def boot(knobs, workload, name, **kw):
        run = guest.GuestRun(argv=["sh", "-c", kk.shell_script(knobs, "vda") + workload])
        res = guest.boot(run, tmp_path / name, image_mb=128, timeout=600, **kw)
        assert res.rc == 0, res.stderr
        assert knobs.readback_ok(kk.parse_readback(res.files["knobs"].decode()), "vda")
        return res
    return boot


def _shadow(info: bytes) -> tuple:
    """(waits, us) of legacy.patch's third jbd2 info line."""
    m = re.search(rb"(\d+) shadow waits, (\d+) us shadow wait", info)
    assert m, info[:300]
    return int(m[1]), int(m[2])


def _handles(info: bytes) -> int:
    """Handles of every committed transaction (average x transactions, as jbd2 prints)."""
    tx = int(info.split()[0])
    m = re.search(rb"(\d+) handles per transaction", info)
    return int(m[1]) * tx if m else 0


slow_guest = [pytest.mark.slow, pytest.mark.timeout(2400),
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for the guest build")]


def _mark(f):
    for m in slow_guest:
        f = m(f)
    return f


@pytest.mark.xfail(strict=False, reason="on qemu's one-queue throttled disk the stock wait "
                   "already queues behind the ordered data: per-wait means overlap between "
                   "boots (docs/kernel-history.md)")
@_mark
def test_shadow_wait_blocks_writers_for_the_whole_commit(booted):
    """Stock 6.1 waits on a shadowed buffer for its own log write only; 3.4's wait lasts
    until the commit refiled it, after the ordered data and every log block."""
    waits = {}
    for name, knobs in (("off", kk.parse_knobs()), ("on", kk.parse_knobs(legacy="shadow_wait"))):
        res = booted(knobs, IOZONE, name, iops=200)
        n0, us0 = _shadow(res.files["info.before"])
        n1, us1 = _shadow(res.files["info.after"])
        waits[name] = (n1 - n0, us1 - us0)
    print("shadow waits, us:", waits)
    assert waits["on"][0] > 0 and waits["off"][0] > 0
    # per wait: stock ends at the buffer's own log write, 3.4 at the refile after the
    # ordered data and every log block (one boot pair: 25 vs 81 ms a wait, another 28 vs 27)
    assert waits["on"][1] / waits["on"][0] > 1.5 * waits["off"][1] / waits["off"][0], waits


OVERWRITE = ("dd if=/dev/zero of=/mnt/data/f bs=4k count=1024 2>/dev/null && sync && "
             f"cat {JINFO} > /out/info.mid && "
             "dd if=/dev/zero of=/mnt/data/f bs=4k count=1024 conv=notrunc 2>/dev/null && sync && "
             f"cat {JINFO} > /out/info.end\n")


@_mark
def test_write_handle_starts_a_handle_per_page(booted):
    """Overwriting 1024 pages in place: stock 6.1 starts a handle only when the mtime
    changes; 3.4's delalloc write_begin started one per page."""
    handles = {}
    for name, knobs in (("off", kk.parse_knobs()), ("on", kk.parse_knobs(legacy="write_handle"))):
        res = booted(knobs, OVERWRITE, name)
        handles[name] = _handles(res.files["info.end"]) - _handles(res.files["info.mid"])
    print("handles for 1024 page overwrites:", handles)
    assert handles["on"] >= 1024 - 16      # one per page (jbd2 prints an integer average)
    assert handles["off"] < handles["on"] / 4, handles


# two CPU-bound loops share the one CPU for 2 s; CFS switches them every slice
BUSY = ("(while :; do :; done) & a=$!; (while :; do :; done) & b=$!; sleep 2; "
        "grep nonvoluntary_ctxt_switches /proc/$a/status > /out/switches; kill $a $b\n")


@_mark
def test_cfs34_gives_longer_slices(booted):
    """1 CPU: stock latency 6 ms gives 3 ms slices to two busy loops, 3.4's 18 ms gives 9."""
    switches = {}
    for name, knobs in (("default", kk.parse_knobs()), ("cfs34", kk.parse_knobs(sched="cfs34"))):
        res = booted(knobs, BUSY, name, smp=1)
        switches[name] = int(res.files["switches"].split()[-1])
    print("involuntary switches of one loop in 2 s:", switches)
    assert switches["cfs34"] * 1.5 < switches["default"], switches


PRESET_CHECKS = ("ls /sys/block/vda/queue/iosched > /out/iosched; "
                 "if echo 2 > /sys/module/jbd2/parameters/legacy_shadow_wait 2>/dev/null; "
                 "then echo accepted; else echo refused; fi > /out/bad; " + IOZONE)


@_mark
def test_legacy_preset_sets_every_knob_and_runs_clean(booted):
    """6.1-legacy: every knob read back in force, bfq's own tunables present, the kernel
    refuses a bad value, and a fsync workload runs with no BUG/WARNING (boot checks)."""
    res = booted(kk.parse_knobs("6.1-legacy"), PRESET_CHECKS, "preset", iops=200)
    assert b"slice_idle" in res.files["iosched"]       # bfq's (and not mq-deadline's) tunable
    assert res.files["bad"].strip() == b"refused"
    assert res.info_after["transactions"] > res.info_before["transactions"]
