"""The emulated slow disk: abt-slowdisk's options, latency profiles, the cost it adds to
fsync and jbd2 commits on a scratch ext4, and nothing left behind on any exit path."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from abtlab.errors import ConfigError, RunError
from abtlab.system import slowdisk
from abtlab.system.device import PROFILES, parse_profile
from abtlab.system.geometry import Geometry
from abtlab.system.scratchfs import ScratchFS
from abtlab.system.slowdisk import SlowDisk, fuse_mounts, model_args
from childproc import spawn

ROOT = Path(__file__).resolve().parents[2]
PROG = ROOT / "backends" / "slowdisk" / "abt-slowdisk"


@pytest.fixture(scope="module")
def built(built_native):
    if not PROG.exists():
        pytest.skip("abt-slowdisk not built (needs fuse3, libfuse3-dev, pkg-config)")
    return PROG


def _describe(*args):
    p = subprocess.run([str(PROG), *args, "--describe"], capture_output=True, text=True,
                       timeout=10)
    return p, dict(ln.split(": ", 1) for ln in p.stdout.splitlines() if ": " in ln)


# -- the program and the profiles ------------------------------------------------------
def test_describe_shows_the_model_given(built):
    p, d = _describe(*model_args(parse_profile("latency:seek=8500,rot=4167,bw=125,flush=4167")))
    assert p.returncode == 0, p.stderr
    assert d["name"] == "abt-slowdisk"
    assert (d["param.seek_us"], d["param.rotation_us"], d["param.bw_mbps"],
            d["param.flush_us"], d["param.idle_us"], d["param.sequential_window"]) == \
        ("8500", "4167", "125", "4167", "1000", "65536")


def test_describe_shows_the_drive_model_of_a_named_profile(built):
    """The daemon's parameters are the header's table, the same the ctypes model reads."""
    from abtlab.system.disk_model import DiskModel
    p, d = _describe(*model_args(PROFILES["hdd7200"]))
    assert p.returncode == 0, p.stderr
    m = DiskModel("hdd7200")
    assert d["param.disk"] == "hdd7200" and int(d["param.cache_bytes"]) == 8 << 20
    for key in ("outer_Bps", "inner_Bps", "seek_t2t_ns", "seek_avg_ns", "seek_full_ns",
                "overhead_ns", "depth"):
        assert int(d[f"param.{key}"]) == m[key], key
    p, d = _describe(*model_args(parse_profile("fixed:12.67ms")))
    assert (d["param.disk"], d["param.fixed_ns"]) == ("fixed", "12670000")


@pytest.mark.parametrize("arg", ["--seek-us=-1", "--bw-mbps=0", "--flush-us=x", "--idle-us=",
                                 "--sequential-window=2g", "--disk=hdd5400", "--depth=2",
                                 "--fixed-ns=5"])
def test_bad_option_is_one_line_naming_it(built, arg):
    p, _ = _describe(arg)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and arg.split("=")[0] in p.stderr


def test_latency_profiles_follow_their_sources():
    hdd, ssd = PROFILES["hdd7200"], PROFILES["ssd-sata"]
    assert hdd.kind == ssd.kind == PROFILES["hdd7200-nocache"].kind == "latency"
    assert abs(hdd.rotation_us - 60e6 / 7200 / 2) < 10  # half a turn at 7200 rpm
    assert 8000 <= hdd.seek_us <= 9500 and 100 <= hdd.bw_mbps <= 160
    assert 2000 <= hdd.flush_us <= 10000
    assert ssd.seek_us + ssd.rotation_us <= 100 and ssd.flush_us < hdd.flush_us
    assert "7200" in hdd.source and "860 EVO" in ssd.source


def test_explicit_latency_model():
    p = parse_profile("latency:seek=8.5ms,rot=4167,bw=125,flush=4ms,window=1Mi")
    assert p.latency() == {"seek_us": 8500, "rotation_us": 4167, "bw_mbps": 125,
                           "flush_us": 4000, "idle_us": 1000, "sequential_window": 2**20}
    assert parse_profile("latency:seek=0,rot=0,bw=9,flush=0,idle=2ms").idle_us == 2000
    assert model_args(p)[0] == "--seek-us=8500" and p.limits() == {}


@pytest.mark.parametrize("bad", ["latency:", "latency:seek=1,rot=1,bw=1",
                                 "latency:seek=1,rot=1,bw=0,flush=1",
                                 "latency:seek=-1,rot=1,bw=1,flush=1",
                                 "latency:seek=1,rot=1,bw=1.5,flush=1",
                                 "latency:seek=1s,rot=1,bw=1,flush=1",
                                 "latency:seek=1,rot=1,bw=1,flush=1,window=1G",
                                 "latency:seek=1,rot=1,bw=1,flush=1,depth=2",
                                 "latency:seek=2000000,rot=1,bw=1,flush=1", "hdd7201"])
def test_bad_latency_specs_name_the_device_field(bad):
    with pytest.raises(ConfigError) as err:
        parse_profile(bad)
    assert err.value.field == "device"


def test_slowdisk_refuses_throttle_profiles_and_bad_workdir(tmp_path):
    for bad in ("none", "hdd7200-throttle", "iops=5"):
        with pytest.raises(ConfigError) as err:
            SlowDisk(bad, tmp_path)
        assert err.value.field == "device"
    with pytest.raises(ConfigError) as err:
        SlowDisk("hdd7200", tmp_path / "missing")
    assert err.value.field == "workdir"


# -- on the real kernel -------------------------------------------------------------------
def _fsyncs(mnt, n):
    """Durations (s) of n fsyncs, each of a new 4 KiB file."""
    out = []
    for i in range(n):
        fd = os.open(Path(mnt) / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o644)
        try:
            os.write(fd, b"x" * 4096)
            t0 = time.monotonic()
            os.fsync(fd)
            out.append(time.monotonic() - t0)
        finally:
            os.close(fd)
    return out


def _measure(tmp_path, profile, n=6):
    """(fsync durations s, commit durations s, daemon counters) for one profile."""
    from abtlab.system.tracefs import JournalTrace
    with ExitStack() as stack:
        disk = stack.enter_context(SlowDisk(profile, tmp_path)) if profile != "none" else None
        fs = stack.enter_context(ScratchFS(size_mb=32, workdir=tmp_path, geometry=Geometry(journal_mb=8),
                                           image_dir=disk.mountpoint if disk else None))
        with JournalTrace(fs.dev_t) as jt:
            fsyncs = _fsyncs(fs.mountpoint, n)
            c = jt.commits()
    return fsyncs, (c["end"] - c["start"]) / 1e9, disk.counters if disk else {}


@pytest.mark.root
def test_hdd_model_serves_a_flush_for_each_commit(built, tmp_path):
    _, base_commit, _ = _measure(tmp_path, "none")
    fsync, commit, counters = _measure(tmp_path, "hdd7200")
    # Counts, not durations: the daemon served a flush for every commit the trace saw
    # and the writes besides. The durations' floors (fsync above half the model's cost,
    # a commit above a flush) are timings: `python -m benchmarks.device --profiles
    # none,hdd7200` prints and checks them.
    assert len(fsync) == 6 and len(commit) >= 3 and len(base_commit) >= 3
    assert counters["flushes"] >= len(commit) and counters["requests"] > counters["flushes"]


def _write_at(path, offsets, size=4096):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        for off in offsets:
            os.pwrite(fd, b"x" * size, off)
        os.fsync(fd)
    finally:
        os.close(fd)


@pytest.mark.root
def test_live_counters_count_one_run_and_tell_seeks_from_streams(built, tmp_path):
    """Snapshots (SIGUSR1) bracket one workload: 16 writes in order pay one positioning
    (a seek), the same writes 4 MiB apart (tracks apart) pay one each; the exit
    line agrees with the last snapshot."""
    step = 4 << 20   # over three tracks (~1.1 MiB each at the outer zone)
    with SlowDisk("hdd7200-nocache", tmp_path) as disk:
        f = Path(disk.mountpoint) / "img"
        a = disk.snapshot()
        _write_at(f, [k * 4096 for k in range(16)])
        b = disk.snapshot()
        _write_at(f, [64 * step - k * step for k in range(16)])   # backwards: never sequential
        c = disk.snapshot()
    assert b["requests"] - a["requests"] >= 16 and b["flushes"] - a["flushes"] == 1
    assert b["positionings"] - a["positionings"] <= 1
    assert c["positionings"] - b["positionings"] == 16
    assert disk.counters["requests"] >= c["requests"] and set(disk.counters) == set(c)


@pytest.mark.root
def test_queued_requests_are_served_in_elevator_order(built, tmp_path):
    """16 writes arrive together in shuffled offset order while the disk is busy: served
    in arrival order nearly every one would pay a seek; in elevator order they run in
    offset order (one pass, maybe one wrap)."""
    import random
    import threading
    offsets = [k * 4096 for k in range(16)]
    random.Random(3).shuffle(offsets)
    with SlowDisk("hdd7200", tmp_path) as disk:
        files = [Path(disk.mountpoint) / f"f{k}" for k in range(16)]
        fds = [os.open(f, os.O_CREAT | os.O_WRONLY, 0o644) for f in files]
        go = threading.Barrier(16)

        def write(fd, off):
            go.wait()
            os.pwrite(fd, b"x" * 4096, off)

        try:
            a = disk.snapshot()
            threads = [threading.Thread(target=write, args=(fd, off)) for fd, off in zip(fds, offsets)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            b = disk.snapshot()
        finally:
            for fd in fds:
                os.close(fd)
    queued = b["queued"] - a["queued"]
    positioned = b["positionings"] - a["positionings"]
    assert b["requests"] - a["requests"] == 16 and queued >= 8
    assert positioned <= 16 - queued + 2


@pytest.mark.root
def test_formatting_in_the_backing_directory_costs_the_disk_nothing(built, tmp_path):
    """mkfs through the model pays for every inode-table write; formatting the same file
    in the backing directory leaves the disk only the mount's few requests, and the
    filesystem it then serves works."""
    sent = {}
    for beside in (False, True):
        with SlowDisk("hdd7200", tmp_path) as disk:
            a = disk.snapshot()
            with ScratchFS(size_mb=64, workdir=tmp_path, image_dir=disk.mountpoint, direct_io=True,
                           geometry=Geometry(journal_mb=8),
                           format_dir=disk.backing if beside else None) as fs:
                sent[beside] = disk.snapshot()["requests"] - a["requests"]
                (Path(fs.mountpoint) / "f").write_bytes(b"abt" * 4096)
                os.sync()
                assert (Path(fs.mountpoint) / "f").read_bytes() == b"abt" * 4096
            assert os.listdir(disk.backing) == []
    assert sent[True] * 4 < sent[False], sent


def test_format_dir_needs_an_image_dir(tmp_path):
    with pytest.raises(ConfigError, match="format_dir"):
        ScratchFS(size_mb=32, workdir=tmp_path, format_dir=tmp_path)
    with pytest.raises(ConfigError, match="format_dir"):
        ScratchFS(size_mb=32, workdir=tmp_path, image_dir=tmp_path, format_dir=tmp_path / "missing")


@pytest.mark.root
def test_a_file_still_open_can_be_removed(built, tmp_path):
    """A loop device may still hold its image when cleanup removes it."""
    with SlowDisk("hdd7200-nocache", tmp_path) as disk:
        f = Path(disk.mountpoint) / "img"
        fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            f.unlink()
            assert os.pwrite(fd, b"x" * 512, 0) == 512
        finally:
            os.close(fd)
        assert os.listdir(disk.mountpoint) == []


@pytest.mark.root
def test_nothing_left_after_an_exception(built, tmp_path):
    with pytest.raises(RuntimeError, match="mid-run"):
        with SlowDisk("ssd-sata", tmp_path) as disk, \
                ScratchFS(size_mb=32, workdir=tmp_path, image_dir=disk.mountpoint,
                          geometry=Geometry(journal_mb=8)) as fs:
            facts = (disk.dir, disk.mountpoint, disk.proc.pid, fs.image, fs.mountpoint)
            raise RuntimeError("mid-run failure")
    assert _leftovers(*facts) == []
    assert disk.counters["requests"] > 0  # the daemon ran and reported on exit


@pytest.mark.root
def test_a_daemon_that_never_mounts_is_reported_and_cleaned(built, tmp_path, monkeypatch):
    monkeypatch.setattr(slowdisk, "program", lambda: Path("/bin/false"))
    with pytest.raises(RunError, match="exited 1"):
        with SlowDisk("hdd7200", tmp_path):
            pass
    assert list(tmp_path.iterdir()) == []


_CHILD = """
    import time
    from abtlab.system import cleanup
    from abtlab.system.geometry import Geometry
    from abtlab.system.scratchfs import ScratchFS
    from abtlab.system.slowdisk import SlowDisk
    cleanup.installed()
    with SlowDisk("hdd7200", {workdir!r}) as disk, \\
            ScratchFS(size_mb=32, workdir={workdir!r}, image_dir=disk.mountpoint,
                      geometry=Geometry(journal_mb=8)) as fs:
        print("READY", disk.dir, disk.mountpoint, disk.proc.pid, fs.image, fs.mountpoint,
              fs.loopdev, flush=True)
        time.sleep(60)
"""


@pytest.mark.root
def test_nothing_left_after_sigterm(built, tmp_path):
    proc, lines = spawn(_CHILD.format(workdir=str(tmp_path)))
    _, d, mnt, pid, image, ext4, loopdev = lines[-1].split()
    try:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode != 0 and "Terminated" in err
        assert _leftovers(d, mnt, int(pid), image, ext4) == []
        assert list(tmp_path.iterdir()) == []
    finally:
        proc.kill()
        _force_cleanup(mnt, int(pid), image, ext4, loopdev)


def _leftovers(d, mnt, pid, image, ext4):
    found = []
    if os.path.ismount(ext4):
        found.append("ext4 mount")
    if subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True).stdout.strip():
        found.append("loop device")
    if str(mnt) in fuse_mounts():
        found.append("fuse mount")
    try:
        os.kill(pid, 0)
        found.append("abt-slowdisk process")
    except ProcessLookupError:
        pass
    if os.path.exists(d):
        found.append(f"directory {d}")
    return found


def _force_cleanup(mnt, pid, image, ext4, loopdev):
    """Leave the machine clean even when the code under test failed to."""
    if os.path.ismount(ext4):
        subprocess.run(["umount", "-l", ext4])
    if subprocess.run(["losetup", "-j", image], capture_output=True,
                      text=True).stdout.startswith(loopdev + ":"):
        subprocess.run(["losetup", "-d", loopdev])
    if mnt in fuse_mounts():
        subprocess.run(["fusermount3", "-u", "-z", mnt])
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
