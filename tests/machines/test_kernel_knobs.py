"""The guest kernel's legacy knobs: presets, spec items, what the guest writes, the attrs."""
import pytest

from abtlab.machines.guest_point import shadow_waits
from abtlab.errors import ConfigError
from abtlab.data.schema import ATTR_BFQ, ATTR_KERNEL_PRESET, ATTR_IOSCHED, ATTR_LEGACY, ATTR_SCHED
from abtlab.machines import kernel_knobs as kk
from abtlab.machines.kernels import LEGACY_KNOBS

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
    assert knobs.legacy == {"shadow_wait", "write_handle", "dioread_lock"}
    assert dict(knobs.writes("nullb0")) == {
        SHADOW: "1", HANDLE: "1",
        "/sys/kernel/debug/sched/latency_ns": "18000000",
        "/sys/kernel/debug/sched/min_granularity_ns": "2250000",
        "/sys/kernel/debug/sched/wakeup_granularity_ns": "3000000",
        "/sys/block/nullb0/queue/scheduler": "bfq"}
    assert knobs.label == "6.1-legacy(dioread_lock+shadow_wait+write_handle,cfs34,bfq)"
    assert knobs.attrs() == {ATTR_KERNEL_PRESET: "6.1-legacy",
                             ATTR_LEGACY: "dioread_lock+shadow_wait+write_handle",
                             ATTR_SCHED: "cfs34", ATTR_IOSCHED: "bfq", ATTR_BFQ: "default"}


def test_items_override_the_preset_one_knob_at_a_time():
    one = kk.parse_knobs("6.1", legacy="shadow_wait")
    assert dict(one.writes("vda"))[SHADOW] == "1" and dict(one.writes("vda"))[HANDLE] == "0"
    assert one.label == "6.1(shadow_wait,default,none)"
    less = kk.parse_knobs("6.1-legacy", legacy="none", iosched="mq-deadline")
    assert (less.legacy, less.sched, less.iosched) == (frozenset(), "cfs34", "mq-deadline")
    assert less.attrs()[ATTR_LEGACY] == "none"
    assert kk.parse_knobs(legacy="write_handle+shadow_wait").legacy == set(LEGACY_KNOBS)
    assert kk.parse_knobs(legacy="all") == kk.parse_knobs(legacy="shadow_wait+write_handle+dioread_lock")


def test_dioread_lock_is_a_mount_option_of_the_legacy_items():
    """3.4's write-back (blocks allocated when write-back starts) is ext4's dioread_lock:
    a mount option, not a switch the guest writes."""
    assert kk.parse_knobs("6.1-legacy").mount_options() == "dioread_lock"
    assert kk.parse_knobs("6.1", legacy="dioread_lock").mount_options() == "dioread_lock"
    assert kk.parse_knobs("6.1", legacy="shadow_wait+write_handle").mount_options() == ""
    assert kk.parse_knobs("6.1-legacy", legacy="shadow_wait").mount_options() == ""
    assert not any("dioread" in p for p, _ in kk.parse_knobs("6.1-legacy").writes("vda"))
    with pytest.raises(ConfigError, match="dioread_lock"):     # the accepted list names it
        kk.parse_knobs(legacy="dioread")


def test_writes_keep_legacy_switches_before_the_elevator():
    paths = [p for p, _ in kk.parse_knobs("6.1-legacy").writes("vda")]
    assert paths[:2] == [SHADOW, HANDLE] and paths[-1] == "/sys/block/vda/queue/scheduler"


IOSCHED_DIR = "/sys/block/nullb1/queue/iosched"


def test_bfq_tunables_are_written_after_the_elevator_strict_guarantees_first():
    knobs = kk.parse_knobs(iosched="bfq", bfq="slice_idle=0+low_latency=0+strict_guarantees=1")
    assert knobs.bfq == (("strict_guarantees", "1"), ("low_latency", "0"), ("slice_idle", "0"))
    paths = [p for p, _ in knobs.writes("nullb1")]
    # switching strict_guarantees on raises slice_idle to 8 ms: slice_idle must come after it
    assert paths[-4:] == ["/sys/block/nullb1/queue/scheduler", f"{IOSCHED_DIR}/strict_guarantees",
                          f"{IOSCHED_DIR}/low_latency", f"{IOSCHED_DIR}/slice_idle"]
    assert knobs.attrs()[ATTR_BFQ] == "strict_guarantees=1+low_latency=0+slice_idle=0"
    assert knobs.label == "6.1(none,default,bfq:strict_guarantees=1+low_latency=0+slice_idle=0)"


def test_bfq_tunables_ride_on_the_legacy_preset_and_default_writes_none():
    knobs = kk.parse_knobs("6.1-legacy", bfq="slice_idle_us=500")
    assert dict(knobs.writes("nullb1"))[f"{IOSCHED_DIR}/slice_idle_us"] == "500"
    assert kk.parse_knobs(iosched="bfq", bfq="default") == kk.parse_knobs(iosched="bfq")
    assert kk.parse_knobs(iosched="bfq").attrs()[ATTR_BFQ] == "default"
    assert kk.parse_knobs(iosched="bfq").label == "6.1(none,default,bfq)"
    assert not any("/iosched/" in p for p, _ in kk.parse_knobs("6.1-legacy").writes("vda"))


def test_a_machine_spec_carries_bfq_tunables_to_the_knobs():
    from abtlab.machines.spec import parse_machine
    m = parse_machine("guest:cpus=4,iosched=bfq,bfq=low_latency=0+slice_idle=0")
    assert dict(m.knobs)["bfq"] == "low_latency=0+slice_idle=0"
    knobs = kk.parse_knobs(m.kernel, **dict(m.knobs))
    assert knobs.bfq == (("low_latency", "0"), ("slice_idle", "0"))
    with pytest.raises(ConfigError) as err:
        parse_machine("guest:bfq=slice_idle=0")
    assert err.value.field == "--machine guest:bfq" and "iosched=bfq" in err.value.accepted


def test_the_bfq_example_spec_names_one_tunable_a_machine():
    from pathlib import Path
    from abtlab.machines.spec import parse_machines
    from abtlab.sweep.spec import load_spec
    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / "bfq_tunables.toml")
    knobs = [kk.parse_knobs(m.kernel, **dict(m.knobs)) for m in parse_machines(spec.factors["machine"])]
    assert [k.iosched for k in knobs] == ["none"] + ["bfq"] * (len(knobs) - 1)
    assert [len(k.bfq) for k in knobs] == [0, 0] + [1] * (len(knobs) - 2)


@pytest.mark.parametrize("items", [
    {"bfq": "slice_idle=0"},                                  # elevator none
    {"iosched": "mq-deadline", "bfq": "slice_idle=0"},
    {"kernel": "6.1-legacy", "iosched": "none", "bfq": "low_latency=0"},
    {"iosched": "bfq", "bfq": ""},
    {"iosched": "bfq", "bfq": "slice_idle"},
    {"iosched": "bfq", "bfq": "slice_idle=-1"},
    {"iosched": "bfq", "bfq": "slice_idle=8ms"},
    {"iosched": "bfq", "bfq": "slice_idle=\u00b2"},                # a digit to isdigit, not to int
    {"iosched": "bfq", "bfq": "low_latency=2"},               # the kernel would keep 1
    {"iosched": "bfq", "bfq": "back_seek_penalty=0"},         # the kernel would keep 1
    {"iosched": "bfq", "bfq": "fifo_expire_sync=0"},
    {"iosched": "bfq", "bfq": "slice_idle=0+slice_idle=8"},
    {"iosched": "bfq", "bfq": "slice_idle=0+slice_idle_us=0"},  # one variable, two units
    {"iosched": "bfq", "bfq": "quantum=4"},                   # CFQ's, not BFQ's
    {"iosched": "bfq", "bfq": "slice_idle=0,low_latency=0"},
])
def test_bad_bfq_tunables_name_the_spec_field_and_what_is_accepted(items):
    items = dict(items)
    with pytest.raises(ConfigError) as err:
        kk.parse_knobs(items.pop("kernel", "6.1"), **items)
    assert err.value.field == "--machine guest:bfq"
    assert "slice_idle" in err.value.accepted or "iosched=bfq" in err.value.accepted


@pytest.mark.parametrize("kernel, items, field", [
    ("2.6.32", {}, "--machine guest:kernel"),
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
    every_bfq = "+".join(f"{k}=1" for k in kk.BFQ_TUNABLES if k != "slice_idle_us")
    for path, _ in (kk.parse_knobs().writes(dev) + kk.parse_knobs("6.1-legacy").writes(dev)
                    + kk.parse_knobs("6.1-legacy", bfq=every_bfq).writes(dev)):
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


def test_shell_script_writes_bfq_tunables_and_a_clamped_value_fails_the_readback(tmp_path):
    import subprocess
    _fake_tree(tmp_path, "vda")
    knobs = kk.parse_knobs("6.1-legacy", bfq="strict_guarantees=1+slice_idle=0")
    script = kk.shell_script(knobs, "vda", record=tmp_path / "rec", root=str(tmp_path))
    subprocess.run(["sh", "-c", script], check=True, capture_output=True)
    readback = kk.parse_readback((tmp_path / "rec").read_text())
    assert list(readback)[-2:] == ["/sys/block/vda/queue/iosched/strict_guarantees",
                                   "/sys/block/vda/queue/iosched/slice_idle"]
    assert knobs.readback_ok(readback, "vda")
    readback["/sys/block/vda/queue/iosched/slice_idle"] = "8"   # what the wrong order leaves
    assert not knobs.readback_ok(readback, "vda")


def test_shell_script_fails_naming_the_path_it_could_not_write(tmp_path):
    import subprocess
    _fake_tree(tmp_path, "vda")
    (tmp_path / "sys/module/ext4/parameters/legacy_write_handle").unlink()
    (tmp_path / "sys/module/ext4/parameters").rmdir()
    script = kk.shell_script(kk.parse_knobs(), "vda", record=tmp_path / "rec", root=str(tmp_path))
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 97
    assert "/sys/module/ext4/parameters/legacy_write_handle" in proc.stderr


def test_shadow_waits_are_the_info_counter_delta_and_absent_on_an_older_kernel():
    info = ("12 transactions (10 requested), each up to 1024 blocks\n"
            "0 delayjc windows, 0 delayjc resets\n{} shadow waits, {} us shadow wait\naverage:\n")
    files = {"info.before": info.format(3, 1500).encode(),
             "info.after": info.format(10, 701500).encode()}
    assert shadow_waits(files) == {"jbd2_shadow_waits": 7.0, "jbd2_shadow_wait": 0.7}
    files["info.after"] = b"12 transactions (10 requested), each up to 1024 blocks\n"
    assert shadow_waits(files) == {}


# --- on the guest machine (slow): each knob reaches the kernel and changes what it records ---
# Guest runs are in virtual time (qemu -icount): the same seed gives the same numbers, so
# the relations below are exact for these points (docs/journal/kernel-history.md has them all).
import os  # noqa: E402
import re  # noqa: E402

import abtlab  # noqa: E402
from abtlab.machines.spec import parse_machine  # noqa: E402
from abtlab.machines import guest, guest_disk  # noqa: E402

slow_guest = [pytest.mark.slow, pytest.mark.timeout(2400),
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for the guest build")]


def _mark(f):
    for m in slow_guest:
        f = m(f)
    return f


# Probes the sweep's backends cannot run (in-place overwrites, busy loops, a streaming
# writer beside fsyncers): sh points of one boot of the guest machine (1 vCPU, virtual
# clock), each on its own null_blk nullbN with its results in /out/pN.
JINFO = "$(ls -d /proc/fs/jbd2/nullb*-8)/info"
OVERWRITE = ("dd if=/dev/zero of=/mnt/data/f bs=4k count=1024 2>/dev/null && sync && "
             f"cat {JINFO} > {{o}}/info.mid && "
             "dd if=/dev/zero of=/mnt/data/f bs=4k count=1024 conv=notrunc 2>/dev/null && sync && "
             f"cat {JINFO} > {{o}}/info.end")
# 16 threads create, write 4 KiB, fsync and unlink 4 files each while dd streams 32 MiB
STREAM = ("dd if=/dev/zero of=/mnt/data/big bs=1M count=32 2>/dev/null & d=$!; "
          "/abt/abt-fsyncers --threads 16 --files 4 --size 4096 --dir /mnt/data "
          "--trace /tmp/fsyncers.trace > {o}/fsyncers && wait $d && sync")
# two CPU-bound loops share the vCPU for 1 s of virtual time
BUSY = ("(while :; do :; done) & a=$!; (while :; do :; done) & b=$!; sleep 1; "
        "grep nonvoluntary_ctxt_switches /proc/$a/status > {o}/switches; kill $a $b; "
        "cat /sys/kernel/debug/sched/latency_ns > {o}/latency_ns")
ELEVATOR = "ls /sys/block/nullb*/queue/iosched > {o}/iosched"
BAD_VALUE = ("if echo 2 > /sys/module/jbd2/parameters/legacy_shadow_wait 2>/dev/null; "
             "then echo accepted; else echo refused; fi > {o}/bad; " + ELEVATOR)
# the shadow-wait probes need a disk whose log write is slow enough for the ordered data
# to queue behind it: fixed:12.67ms (each request a full positioning, depth 1). On the
# drive model's hdd7200 the journal writes land in its cache and both waits are short
# (0.46 vs 1.23 ms a wait, docs/device.md): the knob's mechanism has nothing to show there
MEMORY, HDD = guest_disk.NullBlk(256), guest_disk.for_profile("fixed:12.67ms", 256)
# the CFS settings stay for the rest of the boot ("default" writes nothing): they come last
PROBES = [("overwrite.off", kk.parse_knobs(), OVERWRITE, MEMORY),
          ("overwrite.on", kk.parse_knobs(legacy="write_handle"), OVERWRITE, MEMORY),
          *[(f"stream.{k}{n}", kk.parse_knobs(legacy=v), STREAM, HDD)
            for n in range(3) for k, v in (("off", "none"), ("on", "shadow_wait"))],
          ("mq-deadline", kk.parse_knobs(iosched="mq-deadline"), ELEVATOR, MEMORY),
          ("busy.default", kk.parse_knobs(), BUSY, MEMORY),
          ("busy.cfs34", kk.parse_knobs(sched="cfs34"), BUSY, MEMORY),
          ("preset", kk.parse_knobs("6.1-legacy"), BAD_VALUE, MEMORY)]


@pytest.fixture(scope="module")
def probes(tmp_path_factory, built_guest):
    """name -> PointResult of PROBES, all in one boot of `guest`; every knob read back."""
    runs = [guest.GuestRun(argv=["sh", "-c", sh.format(o=f"/out/p{i}")], disk=disk,
                           knobs=knobs.writes(f"nullb{i}"))
            for i, (_, knobs, sh, disk) in enumerate(PROBES, 1)]
    res = guest.boot_batch(runs, parse_machine("guest"), tmp_path_factory.mktemp("probes"),
                           timeout=900)   # RunError on a BUG/WARNING in the console
    out = {}
    for i, ((name, knobs, _, _), point) in enumerate(zip(PROBES, res.points), 1):
        assert (point.status, point.rc) == ("ok", 0), (name, point.status, point.stderr)
        assert knobs.readback_ok(_readback(point.files["knobs"].decode()), f"nullb{i}"), name
        out[name] = point
    return out


def _readback(text: str) -> dict:
    """init.sh's record of the knobs ('path value' a line, or '; '-joined in the attrs)."""
    return dict(ln.split(" ", 1) for ln in re.split(r"\n|; ", text.strip()) if " " in ln)


def _handles(info: bytes) -> int:
    """Handles of every committed transaction (average x transactions, as jbd2 prints)."""
    tx = int(info.split()[0])
    m = re.search(rb"(\d+) handles per transaction", info)
    return int(m[1]) * tx if m else 0


@_mark
def test_write_handle_starts_a_handle_per_page(probes):
    """Overwriting 1024 pages in place: stock 6.1 starts a handle only when the mtime
    changes; 3.4's delalloc write_begin started one per page. (IOzone's appends show no
    difference: each appended page already dirties the inode in a handle of its own.)"""
    handles = {k: _handles(p.files["info.end"]) - _handles(p.files["info.mid"])
               for k, p in probes.items() if k.startswith("overwrite.")}
    print("handles for 1024 page overwrites:", handles)
    assert handles["overwrite.on"] >= 1024 - 16      # one per page (jbd2 prints an integer average)
    assert handles["overwrite.off"] < handles["overwrite.on"] / 4, handles


@_mark
def test_cfs34_gives_longer_slices(probes):
    """1 vCPU: stock latency 6 ms gives two busy loops 3 ms slices, 3.4's 18 ms gives 9;
    the settings read back (fixture) and the stock latency is the 1-CPU default."""
    switches = {k: int(p.files["switches"].split()[-1]) for k, p in probes.items()
                if k.startswith("busy.")}
    print("involuntary switches of one loop in 1 s:", switches)
    assert int(probes["busy.default"].files["latency_ns"]) == 6000000
    assert int(probes["busy.cfs34"].files["latency_ns"]) == 18000000
    assert switches["busy.cfs34"] * 1.5 < switches["busy.default"], switches


@_mark
def test_shadow_wait_lasts_until_the_commit_refiles(probes):
    """Stock 6.1 sleeps on a shadowed buffer until its own log write completes; 3.4's wait
    lasts until the commit refiles it, after the ordered data it waits for, which a
    streaming writer keeps queueing behind the log write on a one-request-at-a-time disk.
    Three off/on pairs in one boot, pooled: the stock wait is not always the short one
    (streaming 16 MiB in this batch on qemu 7.2 gave 96 ms a wait, on and off alike)."""
    waits = {k: shadow_waits(p.files) for k, p in probes.items() if k.startswith("stream.")}
    print("shadow waits, s:", waits)
    assert all(w["jbd2_shadow_waits"] >= 5 for w in waits.values()), waits
    per_wait = {}
    for side in ("off", "on"):
        mine = [w for k, w in waits.items() if k.startswith(f"stream.{side}")]
        per_wait[side] = (sum(w["jbd2_shadow_wait"] for w in mine)
                          / sum(w["jbd2_shadow_waits"] for w in mine))
    # measured 46.7 vs 97.7 ms a wait here; 8-point batches: 46.6-62.6 vs 90-103 ms
    assert per_wait["on"] > 1.5 * per_wait["off"], per_wait


def _iozone(tmp_path, machine, threads):
    """IOzone's initial write with fsync on the in-guest hdd7200: one point, one boot."""
    return abtlab.run("iozone", out=tmp_path / "run.nc", machine=machine, threads=str(threads),
                      file_size="128k", record_size="32k", policy="ext4", freq="emulated:3.3",
                      device="hdd7200", reps=1, seed=1, quiet=True)


@_mark
def test_iosched_is_in_force_and_recorded(tmp_path, probes):
    """The elevator reads back in brackets, its own tunables are there (the probe), and
    the dataset records it; the run is clean (a BUG/WARNING fails the boot)."""
    assert b"fifo_batch" in probes["mq-deadline"].files["iosched"]   # mq-deadline's, not bfq's
    ds = _iozone(tmp_path, "guest:iosched=mq-deadline", 16)
    back = _readback(ds.attrs["guest_knobs_read_back"])
    assert back["/sys/block/nullb1/queue/scheduler"].split().count("[mq-deadline]") == 1
    assert ds.attrs["kernel_iosched"] == "mq-deadline"
    assert int(ds["commits"].item()) > 0 and ds["throughput"].item() > 0


@_mark
def test_legacy_preset_sets_every_knob_and_runs_clean(tmp_path, probes):
    """6.1-legacy: every knob read back in force in the dataset, bfq's own tunables
    present, the kernel refuses a bad value, and a fsync workload runs with no BUG/WARNING."""
    assert b"slice_idle" in probes["preset"].files["iosched"]     # bfq's (and not mq-deadline's)
    assert probes["preset"].files["bad"].strip() == b"refused"
    ds = _iozone(tmp_path, "guest:kernel=6.1-legacy", 16)
    knobs = kk.parse_knobs("6.1-legacy")
    assert knobs.readback_ok(_readback(ds.attrs["guest_knobs_read_back"]), "nullb1")
    assert ds.attrs[ATTR_KERNEL_PRESET] == "6.1-legacy" and ds.attrs[ATTR_SCHED] == "cfs34"
    assert ds["jbd2_shadow_waits"].item() >= 0 and ds["jbd2_shadow_wait"].attrs["units"] == "s"
    assert ds["commits"].item() > 0 and ds["commits"].item() == ds["jbd2_info_commits"].item()


@_mark
def test_bfq_tunables_read_back_in_force_and_are_recorded(tmp_path):
    """BFQ's tunables written after the elevator, in order: strict_guarantees=1 (which
    raises slice_idle to 8 ms) before slice_idle=0, so slice_idle reads back 0."""
    spec = "bfq=strict_guarantees=1+slice_idle=0+low_latency=0+timeout_sync=50"
    ds = _iozone(tmp_path, f"guest:iosched=bfq,{spec}", 16)
    back = _readback(ds.attrs["guest_knobs_read_back"])
    print("read back:", back)
    knobs = kk.parse_knobs(iosched="bfq", bfq=spec.partition("=")[2])
    assert knobs.readback_ok(back, "nullb1")
    assert back[f"{IOSCHED_DIR}/slice_idle"] == "0" and back[f"{IOSCHED_DIR}/timeout_sync"] == "50"
    assert ds.attrs[ATTR_BFQ] == "strict_guarantees=1+low_latency=0+slice_idle=0+timeout_sync=50"
    assert ds.attrs["kernel"].endswith(knobs.label)
    assert int(ds["commits"].item()) > 0 and ds["throughput"].item() > 0


def test_sched_scaled_presets_write_three_four_times_k_and_refuse_others():
    knobs = kk.parse_knobs("6.1-legacy", sched="cfs34x8")
    got = {p: v for p, v in knobs.writes("vda") if "/sched/" in p}
    assert got == {"/sys/kernel/debug/sched/latency_ns": "144000000",
                   "/sys/kernel/debug/sched/min_granularity_ns": "18000000",
                   "/sys/kernel/debug/sched/wakeup_granularity_ns": "24000000"}
    assert knobs.label == "6.1-legacy(dioread_lock+shadow_wait+write_handle,cfs34x8,bfq)"
    k342 = dict(kk.parse_knobs("3.4.2", sched="cfs34x2").writes("vda"))
    assert k342["/proc/sys/kernel/sched_latency_ns"] == "36000000"
    for bad in ("cfs34x1", "cfs34x33", "cfs34x", "cfsx4", "fast", 4):
        with pytest.raises(ConfigError) as err:
            kk.parse_knobs("6.1", sched=bad)
        assert err.value.field == "--machine guest:sched" and "cfs34xK" in err.value.accepted
