"""abtlab.system.leftovers: what a kill -9 leaves is found and undone by the next run, and
nothing of a live process is touched."""
from __future__ import annotations

import os
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


def test_only_directories_of_processes_that_are_gone_are_reclaimed(tmp_path):
    dead = _owned_dir(tmp_path, "abtlab-dead", _dead_pid(), start="12345")
    live = tmp_path / "abtlab-live"
    live.mkdir()
    leftovers.mark(live)
    reused = _owned_dir(tmp_path, "abtlab-reused", os.getpid(), start="1")  # pid reused since
    unmarked = tmp_path / "abtlab-unmarked"                                   # not ours to judge
    unmarked.mkdir()
    found = leftovers.find(roots=(tmp_path,), instances=tmp_path / "none", v2_root=tmp_path / "none")
    assert sorted(found.dirs) == [dead, reused]
    with pytest.warns(RuntimeWarning, match="undid what a killed abtlab process left"):
        done = leftovers.reclaim(roots=(tmp_path,), instances=tmp_path / "none",
                                 v2_root=tmp_path / "none")
    assert len(done) == 2 and not dead.exists() and not reused.exists()
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
def test_next_scratch_fs_undoes_what_a_sigkilled_run_left(built_backends, tmp_path):
    """A run killed with SIGKILL leaves its ext4 mounted on a loop device whose image lies
    on a mounted emulated disk served by a live daemon. The next ScratchFS in the same
    place undoes all of it, in order, and its own file system stays."""
    if not (built_backends / "slowdisk" / "abt-slowdisk").exists():
        pytest.skip("abt-slowdisk not built")
    proc, lines = spawn(_CHILD.format(workdir=str(tmp_path)))
    _, d, mnt, pid, image, ext4, loopdev = lines[-1].split()
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        left = _leftovers(d, mnt, int(pid), image, ext4)
        assert left == ["ext4 mount", "loop device", "fuse mount", "abt-slowdisk process",
                        f"directory {d}"]
        with pytest.warns(RuntimeWarning, match=f"killed abtlab process left: .*{loopdev}"):
            with ScratchFS(size_mb=128, workdir=tmp_path) as fs:
                assert os.path.ismount(fs.mountpoint)
                assert _leftovers(d, mnt, int(pid), image, ext4) in ([], ["abt-slowdisk process"])
                assert sorted(p.name for p in tmp_path.iterdir()) == [fs.dir.name]
        assert list(tmp_path.iterdir()) == []
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
def test_cpufreq_pin_of_a_killed_process_is_put_back(tmp_path, kind):
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
    with pytest.warns(RuntimeWarning, match="CPU frequency pin"):
        with FrequencyPin(1600000 if kind == "acpi" else 1500000, root=root, state_dir=states):
            pass
    assert state(root) == before and list(states.iterdir()) == []
