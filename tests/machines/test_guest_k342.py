"""Linux 3.4.2, the paper's kernel, as the guest machine `guest:kernel=3.4.2`: the spec and
every refusal, the disk (brd in request mode), the boot arguments, the mkfs features, the
trace's rounded times, the missing-source error before any point; then (slow, needs the
3.4.2 source or its cached build) one tiny point run on it."""
import os
import subprocess

import numpy as np
import pytest

from abtlab.machines import guest_point
from abtlab.errors import ConfigError
from abtlab.machines.spec import parse_machine
from abtlab.machines import guest, guest_disk, kernels, kernel_knobs as kk
from abtlab.system import tracefs
from abtlab.system.geometry import FEATURES_342, Geometry
from guest_builds import assert_same_guest_build

SYSCTL = "/proc/sys/kernel/sched_"


# -- the spec ------------------------------------------------------------------------------
def test_kernel_342_is_a_guest_machine_with_cfq_and_no_legacy_knobs():
    m = parse_machine("guest:kernel=3.4.2")
    assert m.kernel == "3.4.2" and m.label == "guest:kernel=3.4.2"
    knobs = kk.parse_knobs("3.4.2")
    assert (knobs.sched, knobs.iosched, knobs.label) == ("default", "cfq", "3.4.2")
    # no legacy switch is written: 3.4 has no such parameter, its code is the legacy one
    assert knobs.writes("ram0") == [("/sys/block/ram0/queue/scheduler", "cfq")]
    assert knobs.attrs()["kernel_legacy"] == "native" and knobs.mount_options() == ""


def test_cfs34_on_342_writes_3_4s_sysctls_with_the_values_of_6_1_legacy():
    on342 = dict(kk.parse_knobs("3.4.2", sched="cfs34").writes("ram0"))
    on61 = dict(kk.parse_knobs("6.1-legacy").writes("nullb1"))
    for name in ("latency_ns", "min_granularity_ns", "wakeup_granularity_ns"):
        assert on342[SYSCTL + name] == on61[f"/sys/kernel/debug/sched/{name}"]
    assert on342[SYSCTL + "latency_ns"] == "18000000"
    assert kk.parse_knobs("3.4.2", sched="cfs34", iosched="deadline").label == "3.4.2(cfs34,deadline)"


@pytest.mark.parametrize("spec, field, says", [
    ("guest:kernel=3.4.2,legacy=shadow_wait", "--machine guest:legacy", "it is Linux 3.4"),
    ("guest:kernel=3.4.2,legacy=none", "--machine guest:legacy", "it is Linux 3.4"),
    ("guest:kernel=3.4.2,iosched=bfq", "--machine guest:iosched", "cfq | noop | deadline"),
    ("guest:kernel=3.4.2,iosched=mq-deadline", "--machine guest:iosched", "cfq | noop | deadline"),
    ("guest:kernel=3.4.2,iosched=none", "--machine guest:iosched", "cfq | noop | deadline"),
    ("guest:kernel=3.4.2,bfq=slice_idle=0", "--machine guest:bfq", "iosched=bfq"),
    ("guest:kernel=3.4.2,sched=cfs", "--machine guest:sched", "default | cfs34"),
    ("guest:kernel=3.4.2,depth=4", "--machine guest:depth", "depth=1 with kernel=3.4.2"),
    ("guest:kernel=3.4", "--machine guest:kernel", "3.4.2"),
    ("guest:iosched=cfq", "--machine guest:iosched", "none | mq-deadline | bfq"),
])
def test_refusals_name_the_field_and_what_is_accepted(spec, field, says):
    with pytest.raises(ConfigError) as err:
        parse_machine(spec)
    assert err.value.field == field
    assert says in str(err.value.accepted)


def test_kernel_delayjc_on_342_writes_the_ported_patchs_knobs(tmp_path):
    from abtlab.backends.base import RunContext
    ctx = RunContext(options={}, freq_mode="emulated", f_ref_ghz=3.3, seed=3, workdir=tmp_path)
    run, pol = guest_point.guest_run(lambda d, f, t: ["/x/abt-iozone", "--dir", d, "--trace", t],
                                     {"policy": "kdelayjc:window=5ms,max_resets=8",
                                      "freq_ghz": 3.3, "device": "hdd7200"},
                                     ctx, 1 << 20, parse_machine("guest:kernel=3.4.2"))
    knobs = dict(run.knobs)
    assert knobs[guest_point.DELAYJC_KNOBS[1]] == 5000 and knobs[guest_point.DELAYJC_KNOBS[0]] == 8
    assert run.knobs_reset == [(guest_point.DELAYJC_KNOBS[1], 0)]
    # 3.4's /proc info with the port's second line
    info = "9 transaction, each up to 8192 blocks\n2 delayjc windows, 5 delayjc resets\n"
    assert guest.parse_info(info) == {"transactions": 9, "delayjc_windows": 2, "delayjc_resets": 5}


# -- the disk, the boot, mkfs ---------------------------------------------------------------
def test_342_disk_is_brd_with_the_drive_model_at_depth_1():
    # brd runs abt_disk.h's model as 6.1's null_blk does (k342/09-brd-disk-model.patch)
    brd = guest_disk.for_profile("hdd7200", 256, row=kernels.KERNELS["3.4.2"])
    assert isinstance(brd, guest_disk.Brd)
    assert dict(brd.settings(1))["disk_model"] == "hdd7200"
    assert brd.fs_size == "256M"
    desc = brd.describe()
    assert "max_sectors=1024" in desc["guest_disk"] and "queue_depth=1" in desc["guest_disk"]
    assert "disk_model=hdd7200 disk_fixed_ns=0" in desc["guest_disk"]
    # fixed:<time> is brd's own timer, as it is null_blk's on 6.1
    fixed = guest_disk.for_profile("fixed:12.67ms", 256, row=kernels.KERNELS["3.4.2"])
    assert (fixed.completion_nsec, fixed.mbps, fixed.disk_model) == (12_670_000, 0, "")
    with pytest.raises(ConfigError) as err:
        guest_disk.for_profile("hdd7200", 256, depth=2, row=kernels.KERNELS["3.4.2"])
    assert err.value.field == "--machine guest:depth"


def test_boot_arguments_make_one_brd_disk_as_large_as_the_largest_point():
    m = parse_machine("guest:kernel=3.4.2")
    runs = [guest.GuestRun(["x"], disk=guest_disk.Brd(mb)) for mb in (256, 300)]
    line = guest.boot_cmdline(m, runs)
    assert "brd.rq_mode=1" in line and "brd.rd_nr=1" in line and "brd.rd_size=307200" in line
    assert "null_blk" not in line
    assert guest.boot_cmdline(parse_machine("guest"), runs) == kernels.CMDLINE


def test_point_env_gives_brd_its_settings_and_mkfs_the_points_size():
    run = guest.GuestRun(["x"], disk=guest_disk.Brd(300, 12_667_000, 125))
    out = subprocess.run(["sh", "-c", guest.point_env(run, 2) + 'echo "$DISK_SIZE|$DISK_ATTRS"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == "300M|completion_nsec=12667000 mbps=125 disk_fixed_ns=0 disk_model=\n"
    # a null_blk point sets no size: its device is the point's own
    assert "DISK_SIZE" not in guest.point_env(guest.GuestRun(["x"]), 1)


def test_mkfs_gets_3_4s_features_and_6_1s_arguments_are_unchanged():
    g = Geometry()
    assert g.mkfs_args(True, zeroed=True)[-2:] == ["-J", "size=32"]
    assert g.mkfs_args(False)[-2:] == ["-O", "^has_journal"]
    assert g.mkfs_args(True, features=FEATURES_342)[-4:] == ["-J", "size=32", "-O", FEATURES_342]
    assert g.mkfs_args(False, features=FEATURES_342)[-2:] == ["-O", "^has_journal," + FEATURES_342]
    assert "^metadata_csum" in FEATURES_342 and "uninit_bg" in FEATURES_342


def test_a_342_point_is_brd_with_its_features_knobs_and_mount(tmp_path):
    from abtlab.backends.base import RunContext
    ctx = RunContext(options={}, freq_mode="emulated", f_ref_ghz=3.3, seed=3, workdir=tmp_path)
    m = parse_machine("guest:kernel=3.4.2,sched=cfs34")
    run, pol = guest_point.guest_run(lambda d, f, t: ["/x/abt-iozone", "--dir", d, "--trace", t],
                                     {"policy": "ext4", "freq_ghz": 3.3, "device": "hdd7200"},
                                     ctx, 1 << 20, m)
    assert isinstance(run.disk, guest_disk.Brd)
    assert run.mkfs_args[run.mkfs_args.index("-O") + 1] == FEATURES_342
    assert dict(run.knobs)["/sys/block/ram0/queue/scheduler"] == "cfq"
    assert dict(run.knobs)[SYSCTL + "min_granularity_ns"] == "2250000"
    assert run.mount_options == ""


# -- what the guest sends back --------------------------------------------------------------
def test_jbd2_info_of_3_4_has_no_requested_count():
    assert guest.parse_info("9 transaction, each up to 8192 blocks\naverage: \n") == {"transactions": 9}


def test_3_4s_rounded_trace_times_pass_the_clock_check_truncated_ones_would_not():
    before, after = 1_000_000_100, 1_000_000_400       # one marker written in between
    printed = 1_000_000_000                            # 3.4 rounds its time (~.3 us) down to .0
    assert tracefs.marker_between(before, printed, after, "rounded")
    assert not tracefs.marker_between(before, printed - 1000, after, "rounded")
    assert tracefs.marker_between(before, printed, after, "truncated")
    late = 1_000_001_000                               # rounded up past `after`: only 3.4 may
    assert tracefs.marker_between(900_000_600, late, 1_000_000_600, "rounded")
    assert not tracefs.marker_between(900_000_600, late, 1_000_000_600, "truncated")
    assert kernels.KERNELS["3.4.2"].printed == "rounded" and kernels.KERNELS["6.1"].printed == "truncated"
    with pytest.raises(ConfigError):
        tracefs.marker_between(0, 0, 0, "nearest")


def test_a_3_4_trace_with_overrun_only_stats_gives_its_events():
    files = {"trace": b"  abt-clockmark-9 [000] ...1  1.000100: tracing_mark_write: abtlab-clock-9-0\n",
             "trace.stats": b"overrun: 0\n", "clock.before": b"abtlab-clock-9-0 1000099600 1000099900\n"}
    assert [e["ts"] for e in guest_point.guest_events(files, "rounded")] == [1_000_100_000]
    with pytest.raises(Exception, match="disagree"):
        guest_point.guest_events(files, "truncated")
    with pytest.raises(Exception, match="lost"):
        guest_point.guest_events({**files, "trace.stats": b"overrun: 3\n"}, "rounded")


# -- the source ------------------------------------------------------------------------------
@pytest.fixture
def no_source(tmp_path, monkeypatch):
    monkeypatch.setenv("ABTLAB_K342_SRC", str(tmp_path / "no-source"))
    monkeypatch.setenv("ABTLAB_K342_CACHE", str(tmp_path / "no-cache"))
    monkeypatch.delenv("ABTLAB_K342_GIT", raising=False)


def test_missing_source_is_a_config_error_naming_the_kernel_and_what_to_provide(no_source):
    with pytest.raises(ConfigError) as err:
        kernels.check_kernels([parse_machine("guest:kernel=3.4.2")])
    assert err.value.field == "--machine guest:kernel"
    assert "ABTLAB_K342_SRC" in err.value.accepted and "ABTLAB_K342_GIT" in err.value.accepted
    kernels.check_kernels([parse_machine("guest"), parse_machine("host")])   # 6.1 needs none


def test_missing_source_stops_a_run_before_any_point(no_source, monkeypatch, tmp_path):
    import abtlab
    monkeypatch.setattr(guest, "available", lambda: (True, ""))
    booted = []
    monkeypatch.setattr(guest, "boot_batch", lambda *a, **k: booted.append(a))
    with pytest.raises(ConfigError) as err:
        abtlab.run("iozone", out=tmp_path / "r.nc", machine="guest;guest:kernel=3.4.2",
                   threads="2", file_size="64k", record_size="32k", reps=1, warmup=0, quiet=True)
    assert err.value.field == "--machine guest:kernel" and booted == []
    assert not (tmp_path / "r.nc").exists()


# -- on the kernel itself --------------------------------------------------------------------
def _source_reason() -> str:
    try:
        kernels.check_kernels([parse_machine("guest:kernel=3.4.2")])
    except ConfigError as exc:
        return f"no Linux 3.4.2 source or build here ({exc.accepted[:120]}...)"
    return ""


@pytest.mark.slow
@pytest.mark.timeout(1800)   # a first 3.4.2 build takes ~5 min on a busy 2-core machine
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install the guest's Debian packages")
def test_a_tiny_point_on_342_has_op_records_commits_and_a_clock_that_agrees(tmp_path):
    """...and repeats exactly: one vCPU in virtual time, the same build and inputs."""
    if (why := _source_reason()):
        pytest.skip(why)
    import abtlab

    def run(name):
        return abtlab.run("iozone", out=tmp_path / name, machine="guest:kernel=3.4.2",
                          threads="4", file_size="64k", record_size="32k",
                          policy="ext4;nojc;kdelayjc:window=5ms,max_resets=8",
                          device="hdd7200", reps=1, warmup=0, quiet=True, seed=2)
    ds, again = run("k.nc"), run("k2.nc")
    assert_same_guest_build(ds, again)
    for v in ("throughput", "commits", "op_t_start", "op_t_end", "commit_end"):
        np.testing.assert_array_equal(ds[v].values, again[v].values, err_msg=v)
    assert ds.attrs["kernel"].startswith(kernels.K342_LABEL) and ds.attrs["kernel_iosched"] == "cfq"
    assert ds.attrs["guest_disk"].startswith("brd rq_mode=1 disk_model=hdd7200 disk_fixed_ns=0")
    assert "max_sectors_kb=512" in ds.attrs["guest_disk"]
    assert "metadata_csum" not in ds.attrs["fs_features"] and "uninit_bg" in ds.attrs["fs_features"]
    # 3 policies x 4 threads x 2 records of 32 KiB, each timed on the guest's CLOCK_MONOTONIC
    assert int((ds["op_bytes"] == 32768).sum()) == 24
    assert (ds["op_t_end"] >= ds["op_t_start"]).all() and (ds["throughput"] > 0).all()
    # the trace's commits (clock-checked against CLOCK_MONOTONIC, else the run had failed)
    # are the journal's own count; the commits end after the ops began
    ext4 = ds.sel(policy="ext4").squeeze()
    assert int(ext4["commits"]) >= 1
    np.testing.assert_array_equal(ds["commits"].values, ds["jbd2_info_commits"].values)
    assert int(ds.sel(policy="nojc")["commits"].squeeze()) == 0
    assert int(ds["commit_end"].min()) > int(ds["op_t_start"].min())
    # the ported kernel delayJC (k342/08) opened its window: one commit for the 4 fsyncs
    assert "delayjc_windows" in ds.attrs
    assert int(ds.sel(policy=[p for p in ds.policy.values if p.startswith("kdelayjc")][0])
               ["commits"].squeeze()) == 1
