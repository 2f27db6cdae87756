"""abtlab.system.leftovers: what a kill -9 leaves is found and undone by the next run, and
nothing of a live process is touched."""
from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from abtlab.system import leftovers
from abtlab.system.scratchfs import ScratchFS
from childproc import spawn
from test_slowdisk import _CHILD, _force_cleanup, _leftovers

TRACEFS = Path(leftovers.TRACEFS_INSTANCES)


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _owned_dir(parent: Path, name: str, pid: int, start=None) -> Path:
    d = parent / name
    (d / "mnt").mkdir(parents=True)
    (d / "scratch.img").write_bytes(b"x")
    start = start if start is not None else leftovers._start_time(pid)
    (d / leftovers.OWNER).write_text(f"{pid} {start}\n")
    return d


def test_only_directories_of_processes_that_are_gone_are_reclaimed(tmp_path, capsys, recwarn):
    dead = _owned_dir(tmp_path, "abtlab-dead", _dead_pid(), start="12345")
    live = tmp_path / "abtlab-live"
    live.mkdir()
    leftovers.mark(live)
    reused = _owned_dir(tmp_path, "abtlab-reused", os.getpid(), start="1")  # pid reused since
    unmarked = tmp_path / "abtlab-unmarked"                                   # not ours to judge
    unmarked.mkdir()
    found = leftovers.find(roots=(tmp_path,), instances=tmp_path / "none", v2_root=tmp_path / "none")
    assert sorted(found.dirs) == [dead, reused]
    done = leftovers.reclaim(roots=(tmp_path,), instances=tmp_path / "none",
                             v2_root=tmp_path / "none")
    assert len(done) == 2 and not dead.exists() and not reused.exists()
    # a notice in one line on stderr, not a warning with its source line
    assert capsys.readouterr().err == ("abtlab: undid what a killed abtlab process left: "
                                       + "; ".join(done) + "\n")
    assert len(recwarn) == 0
    assert live.is_dir() and unmarked.is_dir()
    assert leftovers.reclaim(roots=(tmp_path,), instances=tmp_path / "none",
                             v2_root=tmp_path / "none") == []
    leftovers.remove_dir(live)
    assert not live.exists()


def test_cgroups_named_for_dead_processes_are_removed(tmp_path):
    v2 = tmp_path / "unified"
    dead, live = v2 / f"abtlab-{_dead_pid()}-0", v2 / f"abtlab-{os.getpid()}-0"
    dead.mkdir(parents=True)
    live.mkdir()
    done = leftovers.reclaim(roots=(), instances=tmp_path / "none", v2_root=v2, quiet=True)
    assert done == [f"cgroup {dead}"] and not dead.exists() and live.exists()


@pytest.mark.root
def test_tracefs_instance_of_a_dead_process_is_removed():
    if not TRACEFS.is_dir():
        pytest.skip("no tracefs instances here")
    dead, live = TRACEFS / f"abtlab-{_dead_pid()}-0", TRACEFS / f"abtlab-{os.getpid()}-990"
    dead.mkdir()
    live.mkdir()
    try:
        done = leftovers.reclaim(roots=(), quiet=True)
        assert f"tracefs instance {dead.name}" in done
        assert not dead.exists() and live.exists()
    finally:
        for d in (dead, live):
            if d.exists():
                d.rmdir()


@pytest.mark.root
def test_next_scratch_fs_undoes_what_a_sigkilled_run_left(built_native, tmp_path, capsys):
    """A run killed with SIGKILL leaves its ext4 mounted on a loop device whose image lies
    on a mounted emulated disk served by a live daemon. The next ScratchFS in the same
    place undoes all of it, in order, and its own file system stays."""
    if not (built_native / "slowdisk" / "abt-slowdisk").exists():
        pytest.skip("abt-slowdisk not built")
    proc, lines = spawn(_CHILD.format(workdir=str(tmp_path)))
    _, d, mnt, pid, image, ext4, loopdev = lines[-1].split()
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        left = _leftovers(d, mnt, int(pid), image, ext4)
        assert left == ["ext4 mount", "loop device", "fuse mount", "abt-slowdisk process",
                        f"directory {d}"]
        capsys.readouterr()
        with ScratchFS(size_mb=128, workdir=tmp_path) as fs:
            assert os.path.ismount(fs.mountpoint)
            assert _leftovers(d, mnt, int(pid), image, ext4) in ([], ["abt-slowdisk process"])
            assert sorted(p.name for p in tmp_path.iterdir()) == [fs.dir.name,
                                                                  fs.dir.name + ".owner"]
        assert list(tmp_path.iterdir()) == []
        assert re.fullmatch(f"abtlab: undid what a killed abtlab process left: .*{loopdev}.*\n",
                            capsys.readouterr().err)
    finally:
        proc.kill()
        _force_cleanup(mnt, int(pid), image, ext4, loopdev)


@pytest.mark.root
def test_cleanup_command_lists_then_undoes(tmp_path, capsys):
    from abtlab.cli import main
    dead = _owned_dir(tmp_path, "abtlab-dead", _dead_pid(), start="12345")
    assert main(["cleanup", "--dry-run", "--dir", str(tmp_path)]) == 0
    assert f"directory {dead}" in capsys.readouterr().out and dead.exists()
    assert main(["cleanup", "--dir", str(tmp_path)]) == 0
    assert f"undone:\n  directory {dead}" in capsys.readouterr().out and not dead.exists()
    assert main(["cleanup", "--dir", str(tmp_path)]) == 0
    assert "nothing left" in capsys.readouterr().out


def test_cleanup_removes_what_killed_writers_left_beside_their_outputs(tmp_path, capsys,
                                                                      monkeypatch):
    """A run killed with -9 leaves its output's lock and, killed mid-write, `.r.nc.tmp-PID`:
    cleanup lists and removes both, and leaves a file of another name beside the output."""
    from abtlab.cli import main
    from abtlab.data import store
    from abtlab.system import runlock
    locks = tmp_path / "locks"
    locks.mkdir()
    monkeypatch.setattr(runlock, "lock_dir", lambda: locks)
    monkeypatch.setattr(leftovers, "find", lambda **kw: leftovers.Leftovers())
    out, dead = tmp_path / "r.nc", _dead_pid()
    lock = locks / "out-0123456789abcdef.lock"
    lock.write_text(f"pid {dead}: {out}\n")
    torn, other = store.temp_path(out, dead), tmp_path / ".r.nc.tmp-notes"
    torn.write_bytes(b"\x89HDF partial")
    other.write_text("mine")
    assert main(["cleanup", "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert f"temporary dataset file {torn}" in said and f"output lock {lock} (pid {dead}" in said
    assert torn.exists() and lock.exists()
    assert main(["cleanup"]) == 0
    assert f"undone:\n  temporary dataset file {torn}" in capsys.readouterr().out
    assert not torn.exists() and not lock.exists() and other.exists()
    assert main(["cleanup"]) == 0 and "nothing left" in capsys.readouterr().out


def test_doctor_lists_leftovers(tmp_path, capsys, monkeypatch):
    from abtlab.cli import main
    monkeypatch.setattr(leftovers, "default_roots", lambda: (str(tmp_path),))
    dead = _owned_dir(tmp_path, "abtlab-dead", _dead_pid(), start="12345")
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "left by killed abtlab processes" in out and f"directory {dead}" in out
    assert dead.exists()                   # doctor only looks


_PIN_CHILD = """
    import os, signal
    from abtlab.system.cpufreq import FrequencyPin
    with FrequencyPin({freq}, root={root!r}, state_dir={state!r}):
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("kind", ["acpi", "pstate"])
def test_cpufreq_pin_of_a_killed_process_is_put_back(tmp_path, kind, capsys):
    """kill -9 inside a FrequencyPin leaves the CPUs pinned; the record it kept lets the
    next pin (or `abtlab cleanup`) put back governor and limits before it saves them."""
    import subprocess, sys, textwrap
    from abtlab.system.cpufreq import FrequencyPin
    from test_cpufreq import SAVED, make_tree, state
    root = make_tree(tmp_path / "cpu", kind)
    before = state(root)
    states = tmp_path / "states"
    states.mkdir()
    freq = 2600000 if kind == "acpi" else 2500000
    code = textwrap.dedent(_PIN_CHILD.format(freq=freq, root=str(root), state=str(states)))
    assert subprocess.run([sys.executable, "-c", code]).returncode == -signal.SIGKILL
    assert state(root) != before                              # left pinned
    assert len(leftovers.find(roots=(states,)).pins) == 1
    with FrequencyPin(1600000 if kind == "acpi" else 1500000, root=root, state_dir=states):
        pass
    assert state(root) == before and list(states.iterdir()) == []
    err = capsys.readouterr().err
    assert err.startswith("abtlab: undid what a killed abtlab process left: ") and \
        "; CPU frequency pin" in err and err.count("\n") == 1


# -- cleanup that finishes -------------------------------------------------------------
def test_a_busy_mount_is_detached_lazily(monkeypatch):
    calls = []
    monkeypatch.setattr(leftovers, "sh", lambda *a, check=True: calls.append(list(a)) or "")
    monkeypatch.setattr(leftovers.os.path, "ismount", lambda p: True)   # stays busy
    monkeypatch.setattr(leftovers.time, "sleep", lambda s: None)
    leftovers._umount("/x/mnt", "ext4")
    assert calls[-1] == ["umount", "-l", "/x/mnt"] and calls[0] == ["umount", "/x/mnt"]
    calls.clear()
    monkeypatch.setattr(leftovers.shutil, "which", lambda name: "/usr/bin/" + name)
    leftovers._umount("/x/disk", "fuse.abt-slowdisk")
    assert calls[-1] == ["fusermount3", "-u", "-z", "/x/disk"]


def test_one_failed_step_is_reported_and_the_others_still_run(tmp_path, monkeypatch, capsys):
    from abtlab.cli import main
    first = _owned_dir(tmp_path, "abtlab-a", _dead_pid(), start="12345")
    second = _owned_dir(tmp_path, "abtlab-b", _dead_pid(), start="12345")
    real = leftovers.remove_dir

    def remove(d, tree=False):
        if Path(d) == first:
            raise OSError("device or resource busy")
        real(d, tree)
    monkeypatch.setattr(leftovers, "remove_dir", remove)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(leftovers, "_detached_throttles", lambda v1_root=None: [])
    assert main(["cleanup", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"failed:\n  remove {first}: device or resource busy" in out
    assert first.exists() and not second.exists()


def test_the_owner_record_lies_beside_the_directory_and_goes_last(tmp_path):
    d = leftovers.make_dir(tmp_path, "abtlab-x-")
    assert leftovers.record_of(d).is_file() and list(d.iterdir()) == []
    (d / "sub").mkdir()
    leftovers.remove_dir(d, tree=True)
    assert list(tmp_path.iterdir()) == []
    # a run killed after its directory went but before its record: still found, then gone
    gone = tmp_path / "abtlab-gone"
    leftovers.record_of(gone).write_text(f"{_dead_pid()} 12345\n")
    none = tmp_path / "none"
    found = leftovers.find(roots=(tmp_path,), instances=none, v2_root=none, v1_root=none)
    assert list(found.dirs) == [gone]
    leftovers.reclaim(roots=(tmp_path,), instances=none, v2_root=none, v1_root=none, quiet=True)
    assert list(tmp_path.iterdir()) == []


def test_a_throttle_on_a_detached_loop_device_is_lifted(tmp_path):
    v1 = tmp_path / "blkio"
    v1.mkdir()
    rules = v1 / "blkio.throttle.write_iops_device"
    rules.write_text("7:250 120\n8:0 50\n")             # loop250: not attached here
    none = tmp_path / "none"
    found = leftovers.find(roots=(), instances=none, v2_root=none, v1_root=v1)
    assert found.throttles == ["7:250"]
    assert found.describe() == ["throttle 7:250 on a detached loop device"]
    leftovers.reclaim(roots=(), instances=none, v2_root=none, v1_root=v1, quiet=True)
    assert rules.read_text() == "7:250 0"              # the kernel would drop the rule


@pytest.mark.root
def test_instances_are_found_with_tracefs_unmounted(monkeypatch, tmp_path):
    """tracefs is mounted to look, and unmounted again: only what was mounted here."""
    where = tmp_path / "tracing"
    where.mkdir()
    monkeypatch.setattr(leftovers, "TRACEFS_INSTANCES", where / "instances")
    assert not os.path.ismount(where)
    subprocess.run(["mount", "-t", "tracefs", "nodev", where], check=True)
    dead = where / "instances" / f"abtlab-{_dead_pid()}-0"
    dead.mkdir()
    subprocess.run(["umount", where], check=True)      # the instance stays in the kernel
    try:
        found = leftovers.find(roots=(), instances=where / "instances", v2_root=tmp_path / "n")
        assert [p.name for p in found.instances] == [dead.name] and not os.path.ismount(where)
        done = leftovers.reclaim(roots=(), instances=where / "instances",
                                 v2_root=tmp_path / "n", quiet=True)
        assert done == [f"tracefs instance {dead.name}"] and not os.path.ismount(where)
        subprocess.run(["mount", "-t", "tracefs", "nodev", where], check=True)
        assert not dead.exists()
    finally:
        subprocess.run(["umount", where], check=False)


@pytest.mark.root
def test_a_mount_on_a_loop_device_whose_image_was_deleted_is_undone(tmp_path):
    """A run killed in its teardown after deleting the image but before unmounting: the
    mount and its loop device ('... (deleted)') are found and undone, then the rest."""
    d = tmp_path / "abtlab-run-dead"
    (d / "mnt").mkdir(parents=True)
    leftovers.record_of(d).write_text(f"{_dead_pid()} 12345\n")
    img = d / "fs.img"
    img.write_bytes(b"\0" * 16 * 2 ** 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
    dev = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True,
                         text=True, check=True).stdout.strip()
    subprocess.run(["mount", dev, str(d / "mnt")], check=True)
    img.unlink()
    none = tmp_path / "none"
    try:
        found = leftovers.find(roots=(tmp_path,), instances=none, v2_root=none, v1_root=none)
        assert found.mounts == [(str(d / "mnt"), "ext4")] and found.loops == [(dev, str(img))]
        leftovers.reclaim(roots=(tmp_path,), instances=none, v2_root=none, v1_root=none,
                          quiet=True)
        assert not os.path.ismount(d / "mnt") and list(tmp_path.iterdir()) == []
        assert str(img) not in subprocess.run(["losetup", "-a"], capture_output=True,
                                              text=True).stdout
    finally:
        subprocess.run(["umount", str(d / "mnt")], capture_output=True)
        subprocess.run(["losetup", "-d", dev], capture_output=True)
