"""Scratch ext4 on a loop device: made fresh, described, and torn down completely."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from abtlab.errors import ConfigError, RunError
from abtlab.system import scratchfs
from abtlab.system.scratchfs import ScratchFS, jbd2_commits, parse_mount_options


def _attached(image) -> str:
    return subprocess.run(["losetup", "-j", str(image)], capture_output=True,
                          text=True).stdout.strip()


def _write_fsync(path: Path, data=b"x" * 4096):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


# -- validation (no root needed) -------------------------------------------------------------
@pytest.mark.parametrize("opts", ["commit=5,min_batch_time=0,max_batch_time=15000",
                                  "barrier=0", "nobarrier,journal_async_commit",
                                  "noatime,nodelalloc", "data=writeback", ""])
def test_known_mount_options_pass(opts):
    assert parse_mount_options(opts) == [o for o in opts.split(",") if o]


@pytest.mark.parametrize("opts", ["bogus", "commit=abc", "data=sometimes", "foo=1",
                                  "commit=", "ro,remount"])
def test_unknown_mount_options_name_the_field(opts):
    with pytest.raises(ConfigError) as err:
        ScratchFS(mount_options=opts)
    assert err.value.field == "mount_options"


@pytest.mark.parametrize("field,kwargs", [("size_mb", {"size_mb": 0}),
                                          ("size_mb", {"size_mb": "big"}),
                                          ("workdir", {"workdir": "/nonexistent/abtlab"}),
                                          ("mount_options", {"journal": False,
                                                             "mount_options": "data=ordered"})])
def test_bad_arguments_name_the_field(field, kwargs):
    with pytest.raises(ConfigError) as err:
        ScratchFS(**kwargs)
    assert err.value.field == field


def test_jbd2_commits_reads_the_first_number(tmp_path, monkeypatch):
    (tmp_path / "loop9-8").mkdir()
    (tmp_path / "loop9-8" / "info").write_text(
        "42 transactions (40 requested), each up to 8192 blocks\naverage: \n")
    monkeypatch.setattr(scratchfs, "JBD2_PROC", tmp_path)
    assert jbd2_commits("loop9-8") == 42


# -- real loop devices ------------------------------------------------------------------------
@pytest.mark.root
def test_journaled_fs_is_described_and_counts_commits(scratch_ext4):
    fs = scratch_ext4
    rdev = os.stat(fs.loopdev).st_rdev
    assert fs.dev_name == Path(fs.loopdev).name
    assert fs.major_minor == f"{os.major(rdev)}:{os.minor(rdev)}"
    assert fs.dev_t == (os.major(rdev) << 20) | os.minor(rdev)
    assert fs.jbd2_name.startswith(fs.dev_name + "-")
    assert os.path.ismount(fs.mountpoint)
    assert Path(fs.loopdev).name in _attached(fs.image)
    before = fs.commits()
    _write_fsync(fs.mountpoint / "a")
    assert fs.commits() > before
    attrs = fs.describe()
    assert attrs["filesystem"] == "ext4 data=ordered"
    assert "data=ordered" in attrs["mount_options"]


@pytest.mark.root
def test_nojournal_has_no_jbd2(scratch_nojournal):
    fs = scratch_nojournal
    assert fs.jbd2_name is None and fs.commits() == 0
    assert not any(n.startswith(fs.dev_name + "-") for n in os.listdir("/proc/fs/jbd2"))
    assert fs.describe()["filesystem"] == "ext4 no journal (NOJC)"
    _write_fsync(fs.mountpoint / "a")
    assert "data=" not in _mount_line(fs.mountpoint)


def _mount_line(mnt) -> str:
    for line in Path("/proc/mounts").read_text().splitlines():
        if line.split()[1] == str(mnt):
            return line
    raise AssertionError(f"{mnt} not mounted")


@pytest.mark.root
def test_mount_options_reach_the_kernel(tmp_path):
    with ScratchFS(size_mb=128, mount_options="commit=17,noatime", workdir=tmp_path) as fs:
        line = _mount_line(fs.mountpoint)
        assert "commit=17" in line and "noatime" in line


@pytest.mark.root
def test_exit_removes_everything_it_made(tmp_path):
    before = set(os.listdir(tmp_path))
    with ScratchFS(size_mb=128, workdir=tmp_path) as fs:
        image, mnt = fs.image, fs.mountpoint
        _write_fsync(mnt / "a")
    assert _attached(image) == ""
    assert not os.path.ismount(mnt)
    assert set(os.listdir(tmp_path)) == before


@pytest.mark.root
def test_exception_inside_unwinds(tmp_path):
    with pytest.raises(RuntimeError):
        with ScratchFS(size_mb=128, workdir=tmp_path) as fs:
            image, mnt = fs.image, fs.mountpoint
            raise RuntimeError("boom")
    assert _attached(image) == "" and not os.path.ismount(mnt)
    assert os.listdir(tmp_path) == []


@pytest.mark.root
def test_default_workdir_is_a_fresh_var_tmp_dir():
    with ScratchFS(size_mb=128) as fs:
        assert fs.dir.parent == Path("/var/tmp") and fs.dir.name.startswith("abtlab-")
        made = fs.dir
    assert not made.exists()


@pytest.mark.root
@pytest.mark.parametrize("step,mkfs_options", [("mkfs.ext4", ("-O", "nosuchfeature")),
                                               ("mount", ("-b", "12345"))])
def test_a_failed_step_leaves_nothing(tmp_path, step, mkfs_options):
    with pytest.raises(RunError, match=step):
        with ScratchFS(size_mb=128, workdir=tmp_path, mkfs_options=mkfs_options):
            pass
    assert os.listdir(tmp_path) == []
    assert not any(str(tmp_path) in line for line in Path("/proc/mounts").read_text().splitlines())
    assert str(tmp_path) not in subprocess.run(["losetup", "-a"], capture_output=True,
                                               text=True).stdout


@pytest.mark.root
def test_detaches_its_own_device_by_inode_and_no_other(tmp_path):
    """The image renamed under the loop device (as when the directory above it goes) is
    still found by its inode; a device backed by another file is never detached."""
    other = tmp_path / "other.img"
    other.write_bytes(b"\0" * (1 << 20))
    other_dev = subprocess.run(["losetup", "--find", "--show", other], capture_output=True,
                               text=True, check=True).stdout.strip()
    try:
        with ScratchFS(size_mb=128, workdir=tmp_path) as fs:
            moved = tmp_path / "moved.img"
            os.rename(fs.image, moved)
            assert scratchfs.loop_backing_file(fs.loopdev).startswith(str(moved))
        assert scratchfs.loop_backing_file(fs.loopdev) is None
        assert scratchfs.loop_backing_file(other_dev).startswith(str(other))
    finally:
        subprocess.run(["losetup", "-d", other_dev], check=False)
