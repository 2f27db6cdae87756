"""The qemu guest harness: its pieces without qemu, then (slow) a real boot that shows
the kernel delayJC direction: a 5 ms window gives fewer jbd2 commits than none."""
import os
import shutil
import base64
import io
import subprocess
import tarfile

import pytest

from abtlab.errors import ConfigError, RunError
from abtlab.machines import guest
from abtlab.system import cleanup
from guest_builds import assert_same_guest_build

INFO = ("12 transactions (10 requested), each up to 2048 blocks\n"
        "3 delayjc windows, 5 delayjc resets\naverage: \n  0ms waiting for transaction\n")


def test_parse_info_reads_stock_and_patched_counters():
    assert guest.parse_info(INFO) == {"transactions": 12, "requested": 10,
                                      "delayjc_windows": 3, "delayjc_resets": 5}
    stock = "7 transactions (0 requested), each up to 2048 blocks\naverage: \n"
    assert guest.parse_info(stock) == {"transactions": 7, "requested": 0}
    with pytest.raises(RunError):
        guest.parse_info("garbage")


@pytest.mark.skipif(not shutil.which("cpio"), reason="cpio (Debian package cpio) not installed")
def test_run_cpio_unpacks_with_cpio(tmp_path):
    blob = guest.run_cpio({"run.env": b"A=1\n", "odd": b"12345"})
    (tmp_path / "r.gz").write_bytes(blob)
    subprocess.run("zcat r.gz | cpio -id --quiet", shell=True, cwd=tmp_path, check=True)
    assert (tmp_path / "abt" / "run.env").read_bytes() == b"A=1\n"
    assert (tmp_path / "abt" / "odd").read_bytes() == b"12345"


def test_point_env_quotes_every_word_and_sets_the_disk(tmp_path):
    from abtlab.machines.guest_disk import NullBlk
    run = guest.GuestRun(argv=["printf", "%s|", "a b", "it's", "$HOME"], env={"X": "y z"},
                         disk=NullBlk(128, 12_667_000, 125, 1, 16), mkfs_args=["-E", "a=1,b=2"],
                         knobs=[("/sys/x", 5)], knobs_reset=[("/sys/x", 0)])
    script = guest.point_env(run, 3) + (
        'echo "$MOUNT_OPTS|$KNOBS|$KNOBS_RESET|$MKFS_ARGS"\necho "$DISK_ATTRS"\nrun_workload\n')
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "defaults|/sys/x=5|/sys/x=0|-E a=1,b=2"
    assert lines[1].startswith("index=3 size=128 blocksize=4096 memory_backed=1 ")
    assert "irqmode=2 completion_nsec=12667000 mbps=125 cache_size=16" in lines[1]
    assert lines[2] == "a b|it's|$HOME|"
    with pytest.raises(ConfigError):
        guest.point_env(guest.GuestRun(argv=["x"], knobs=[("/sys/a b", 1)]), 1)


def test_batch_env_lists_points_and_events():
    text = guest.batch_env(4, ("jbd2/jbd2_end_commit", "ext4/ext4_sync_file_enter"), 8192)
    out = subprocess.run(["sh", "-c", text + 'echo "$NPOINTS $TRACE_KB $TRACE_EVENTS"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == "4 8192 jbd2/jbd2_end_commit ext4/ext4_sync_file_enter\n"


def test_qemu_argv_virtual_clock_uses_icount_on_one_thread():
    from abtlab.machines.spec import parse_machine
    argv = guest.qemu_argv(parse_machine("guest:shift=3,mem=2048"), "bz", "rd", "c.log", "r.txt")
    assert argv[:2] == [guest.QEMU, "-accel"] and argv[2] == "tcg,thread=single"
    assert argv[argv.index("-icount") + 1] == "shift=3,sleep=off"
    assert "align=on" not in " ".join(argv)          # refused by qemu with sleep=off
    assert argv[argv.index("-smp") + 1] == "1" and argv[argv.index("-m") + 1] == "2048"
    assert "clock=vm" in argv[argv.index("-rtc") + 1] and "-no-reboot" in argv
    assert "null_blk.nr_devices=0" in argv[argv.index("-append") + 1]
    # no disk on the host: the console and the results are the two serial ports
    assert [a for a in argv if a.startswith("file:")] == ["file:c.log", "file:r.txt"]
    assert "-drive" not in argv
    # a qemu unpacked outside the system brings its own firmware
    q = guest.Qemu("/c/qemu/root/usr/bin/qemu-system-x86_64", "/c/qemu/root/usr/share", "10.0.2")
    own = guest.qemu_argv(parse_machine("guest:cpus=4"), "bz", "rd", "c.log", "r.txt", q)
    assert own[:5] == [q.binary, "-L", "/c/qemu/root/usr/share/qemu", "-L", "/c/qemu/root/usr/share/seabios"]
    assert own[own.index("-smp") + 1] == "4" and "-icount" in own
    host = guest.qemu_argv(parse_machine("guest:clock=host"), "bz", "rd", "c.log", "r.txt")
    assert "tcg,thread=multi" in host and "-icount" not in host
    with pytest.raises(ConfigError) as err:
        guest.qemu_argv(parse_machine("host"), "bz", "rd", "c.log", "r.txt")
    assert err.value.field == "--machine"


def test_disk_profiles_map_to_null_blk():
    from abtlab.machines import guest_disk
    # the paper's drive: abt_disk.h's model times each request (null_blk's latency off,
    # the model is the write cache); fixed:<time> is the guests' older disk
    hdd = guest_disk.for_profile("hdd7200", 256, depth=1)
    assert (hdd.disk_model, hdd.completion_nsec, hdd.mbps, hdd.hw_queue_depth, hdd.cache_mb) == \
        ("hdd7200", 0, 0, 1, 0)
    assert dict(hdd.configfs(1))["disk_model"] == "hdd7200" and dict(hdd.configfs(1))["irqmode"] == "2"
    assert "disk_model=hdd7200" in hdd.describe()["guest_disk"]
    fixed = guest_disk.for_profile("fixed:12.67ms", 256)
    assert (fixed.disk_model, fixed.completion_nsec, fixed.cache_mb) == ("", 12_670_000, 16)
    assert guest_disk.for_profile("ssd-sata", 256, depth=32).hw_queue_depth == 32
    none = guest_disk.for_profile("none", 256)
    assert dict(none.configfs(1))["irqmode"] == "0" and none.cache_mb == 0
    # 1280 KiB a request as 6.1 gives a SATA disk: a 128 KiB write-back is one request
    assert dict(hdd.configfs(1))["max_sectors"] == "2560" and "max_sectors=2560" in hdd.describe()["guest_disk"]
    thr = guest_disk.for_profile("iops=100,bps=50M", 256)
    assert (thr.completion_nsec, thr.mbps) == (10_000_000, 50)
    with pytest.raises(ConfigError) as err:
        guest_disk.for_profile("none", 900, mem_mb=1024)
    assert err.value.field == "--machine guest:mem"


def _tar(files: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _slot(i, files) -> str:
    body = base64.encodebytes(_tar(files)).decode().replace("\n", "\r\n")
    return f"abtlab-slot {i}\r\n{body}abtlab-end {i}\r\n"


def test_slots_from_the_serial_port_become_point_results(tmp_path):
    out = tmp_path / "results.txt"
    out.write_text(_slot(1, {"status": b"ok\n", "rc": b"0\n", "info.before": INFO.encode(),
                             "info.after": INFO.encode()})
                   + _slot(2, {"status": b"mkfs\n"}) + _slot(0, {"dmesg": b"boot\n", "status": b"ok\n"})
                   + "abtlab-slot 3\r\nAAAA")   # cut short
    slots = guest.read_slots(out, 3)
    assert slots[3] is None
    res = guest._result(slots, "console\n", 2.5)
    assert [p.status for p in res.points] == ["ok", "mkfs", "not run (the guest stopped before this point)"]
    assert res.points[0].rc == 0 and res.points[0].info_after["transactions"] == 12
    assert res.dmesg == "boot\n" and res.wall_s == 2.5
    with pytest.raises(RunError, match="sleeping function"):
        guest._result(slots, "BUG: sleeping function called from invalid context\n", 1)
    with pytest.raises(RunError, match="no results"):
        guest._result(guest.read_slots(tmp_path / "absent.txt", 1), "", 1)


def test_start_qemu_kills_on_timeout(tmp_path):
    pid_file = tmp_path / "pid"
    with pytest.raises(RunError, match="did not finish"):
        guest._start_qemu(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 30", "x"],
                          tmp_path / "c.log", 2.0)
    assert not any("qemu" in p for p in cleanup.pending())
    assert not os.path.exists(f"/proc/{pid_file.read_text().strip()}")




def test_qemu_dies_with_a_run_killed_by_sigkill(tmp_path):
    """kill -9 of the run leaves no handler to kill qemu (in a session of its own): the
    kernel does, by the parent-death signal set before exec."""
    import signal
    import sys
    import time
    pid_file = tmp_path / "pid"
    code = ("import pathlib, sys; from abtlab.machines import guest; "
            f"guest._start_qemu(['sh', '-c', 'echo $$ > {pid_file}; exec sleep 60', 'x'], "
            f"pathlib.Path({str(tmp_path / 'c.log')!r}), 120)")
    run = subprocess.Popen([sys.executable, "-c", code], env={**os.environ})
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert os.path.exists(f"/proc/{child}")
    run.send_signal(signal.SIGKILL)
    run.wait(30)
    for _ in range(100):                 # the kernel delivers the signal as the run exits
        if not os.path.exists(f"/proc/{child}") or "Z" in _state(child):
            break
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child}") or "Z" in _state(child)


def _state(pid) -> str:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _sweep(tmp_path, name, machine="guest", **kw):
    import abtlab
    return abtlab.run("metarates", out=tmp_path / name, machine=machine, threads="8", files="4",
                      reps=1, warmup=0, quiet=True, seed=3, **kw)


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.timeout(1500)  # a first kernel build on a busy 2-core machine
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install the guest's Debian packages")
def test_guest_is_deterministic_and_traced(tmp_path, built_guest):
    """Two boots of the same two-point sweep in virtual time with one vCPU: identical op
    records and commits; the tracefs commit table counts what /proc/fs/jbd2 counts."""
    import numpy as np
    a = _sweep(tmp_path, "a.nc", policy="ext4", device="hdd7200;none")
    b = _sweep(tmp_path, "b.nc", policy="ext4", device="hdd7200;none")
    assert_same_guest_build(a, b)
    assert a.attrs["clock"] == "virtual" and a.attrs["fs_block_size"] == 4096
    assert a.attrs["guest_cpus"] == "1" and a.attrs["repeatable"].startswith("exact")
    assert a.attrs["guest_initramfs_build"] == guest.initramfs_build() != ""
    assert (a["commits"] > 0).all()
    np.testing.assert_array_equal(a["commits"].values, a["jbd2_info_commits"].values)
    for v in ("fcr", "commits", "op_t_start", "op_t_end", "commit_end", "commit_handles"):
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.timeout(1500)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install the guest's Debian packages")
def test_two_vcpus_run_in_virtual_time_and_say_they_may_not_repeat(tmp_path, built_guest):
    """Two vCPUs boot under the virtual clock (qemu 8+), the run is traced, and the dataset
    says a rerun only usually repeats (qemu's round-robin can be forced to switch vCPUs
    by the host: benchmarks.guest --repeat counts how often). Exact equality of two runs
    is not asserted here: it held in every run on the development machine and failed in
    one CI run (fcr of the first point 13.76 vs 13.58)."""
    import numpy as np
    ds = _sweep(tmp_path, "c2.nc", "guest:cpus=2", policy="ext4", device="hdd7200;none")
    assert ds.attrs["clock"] == "virtual" and ds.attrs["guest_cpus"] == "2"
    assert ds.attrs["repeatable"].startswith("usually")
    assert int(ds.attrs["qemu"].split()[1].split(".")[0]) >= guest.ICOUNT_SMP_MAJOR
    np.testing.assert_array_equal(ds["commits"].values, ds["jbd2_info_commits"].values)
    assert (ds["commits"] > 0).all()


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.timeout(1500)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install the guest's Debian packages")
def test_guest_window_gives_fewer_commits(tmp_path, built_guest):
    """16 workers x 8 create+fsync, one boot: 5 ms kernel delayJC window vs stock."""
    ds = _sweep(tmp_path, "w.nc", policy="kdelayjc:window=0;kdelayjc:window=5ms,max_resets=8")
    stock, delayed = ds["commits"].squeeze().values.tolist()
    assert delayed < stock, f"commits: window 5ms {delayed}, stock {stock}"
    assert "delayjc_windows" in ds.attrs


def test_several_vcpus_under_the_virtual_clock_need_qemu_8():
    from abtlab.machines.spec import parse_machine
    old, new = guest.Qemu(version="7.2.19"), guest.Qemu(version="10.0.2")
    with pytest.raises(ConfigError) as err:
        guest.check_smp(parse_machine("guest:cpus=2"), old)
    assert err.value.field == "--machine guest:cpus" and "qemu 8+" in str(err.value)
    guest.check_smp(parse_machine("guest:cpus=2"), new)
    guest.check_smp(parse_machine("guest:cpus=1"), old)
    guest.check_smp(parse_machine("guest:clock=host,cpus=4"), old)


def _fake_qemu(path, version):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'QEMU emulator version {version} (fake)'\n")
    path.chmod(0o755)


@pytest.mark.parametrize("system, cached, expect", [
    ("10.0.2", None, "system"), ("7.2.19", "10.0.2", "cache"), ("8.2.1", "10.0.2", "system")])
def test_qemu_sh_prefers_a_new_system_qemu_then_the_cache(tmp_path, system, cached, expect):
    """qemu.sh picks the system's qemu when it is 8+, else the one in the cache (fakes on
    PATH and in ABTLAB_QEMU_CACHE: nothing is fetched when either will do)."""
    _fake_qemu(tmp_path / "bin" / "qemu-system-x86_64", system)
    if cached:
        _fake_qemu(tmp_path / "cache" / "root/usr/bin/qemu-system-x86_64", cached)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "ABTLAB_QEMU_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([str(guest.KERNEL_DIR / "qemu.sh")], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    if expect == "system":
        assert out == [str(tmp_path / "bin" / "qemu-system-x86_64")]
    else:
        assert out == [str(tmp_path / "cache/root/usr/bin/qemu-system-x86_64"),
                       str(tmp_path / "cache/root/usr/share")]


def test_kernel_build_is_the_cache_entry_the_image_links_to(tmp_path, monkeypatch):
    built = tmp_path / "cache" / "0123456789abcdef"
    built.mkdir(parents=True)
    (built / "bzImage").write_bytes(b"k")
    (tmp_path / "kdir" / "out").mkdir(parents=True)
    (tmp_path / "kdir" / "out" / "bzImage").symlink_to(built / "bzImage")
    monkeypatch.setattr(guest, "KERNEL_DIR", tmp_path / "kdir")
    assert guest.kernel_build() == "0123456789abcdef"
    (built / "bzImage").unlink()
    assert guest.kernel_build() == ""


def test_datasets_name_the_initramfs_by_its_bytes(tmp_path, monkeypatch):
    """The initramfs (and the fio overlay, when built) by a prefix of their sha256: the
    same sources give the same bytes anywhere, so the same name means the same guest."""
    import hashlib
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(guest, "KERNEL_DIR", tmp_path)
    (out / "initramfs.cpio.gz").write_bytes(b"base")
    base = hashlib.sha256(b"base").hexdigest()[:16]
    assert guest.initramfs_build() == base
    (out / "fio.cpio.gz").write_bytes(b"fio")
    assert guest.initramfs_build() == base + "+" + hashlib.sha256(b"fio").hexdigest()[:16]


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.timeout(1500)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to build the lock-step qemu")
def test_lockstep_vcpus_each_run_at_the_clock_and_repeat(tmp_path, built_guest):
    """clock=lockstep (qemu-lockstep.patch): two threads on two vCPUs take one thread's
    virtual time (round-robin icount: twice), and a second boot gives identical records.
    benchmarks.lockstep is the full table."""
    from abtlab.machines.spec import parse_machine
    from benchmarks import lockstep
    overlay = lockstep.build_overlay(tmp_path)
    m = parse_machine("guest:clock=lockstep,cpus=2,mhz=1600")
    argvs = [["--threads", "1", "--loops", "2000000"], ["--threads", "2", "--loops", "2000000"]]
    first, _ = lockstep.boot(m, argvs, tmp_path, overlay)
    again, _ = lockstep.boot(m, argvs, tmp_path, overlay)
    one = lockstep.ns(first[0]["thread_ns"])[0]
    two = lockstep.ns(first[1]["thread_ns"])
    assert max(two) / one == pytest.approx(1.0, abs=0.05), (one, two)
    assert first == again
