"""Shared fixtures. Tests that touch the kernel (loop devices, tracefs, blkio) are
marked `root` and skipped with a reason where the machine cannot run them."""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "backends"


HOST_MODULES = pytest.StashKey[set]()


def host_lacks() -> list[str]:
    """What this machine lacks for a scratch ext4 on a loop device, read from the machine
    itself: abtlab's own check (scratchfs.loop_devices) is under test, and a regression
    there must fail the root tests, not skip them."""
    return [name for name, ok in (("root", os.geteuid() == 0),
                                  ("/dev/loop-control", os.path.exists("/dev/loop-control")),
                                  ("losetup", shutil.which("losetup")),
                                  ("mkfs.ext4", shutil.which("mkfs.ext4"))) if not ok]


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):      # a pytest-xdist worker
        _xdist_order(config, items)
    missing = host_lacks()
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs root with loop devices: this machine lacks {missing}")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


def _host_io(item) -> bool:
    """A test on this machine's real devices (loop devices, mounts, tracefs, FUSE) and its
    clock; guest runs are in the guest's virtual time and touch no host device."""
    return "root" in item.keywords and "built_guest" not in item.fixturenames


def _module(item) -> str:
    return item.nodeid.split("::", 1)[0]


def _xdist_order(config, items):
    """For `pytest -n 2 --dist loadscope --no-loadscope-reorder` (make test), which hands
    each worker whole modules (so a module-scoped guest boot, notebook batch or wheel build
    runs once): modules with a host-device test or a slow test go first, so that no long
    module starts near the end."""
    host = config.stash[HOST_MODULES] = {_module(item) for item in items if _host_io(item)}
    first = host | {_module(item) for item in items if "slow" in item.keywords}
    items.sort(key=lambda item: _module(item) not in first)    # stable: the order within is kept


@pytest.fixture(scope="module", autouse=True)
def _host_devices_one_module_at_a_time(request, tmp_path_factory):
    """Under pytest-xdist, a module with host-device tests holds a lock shared by the
    workers from its first fixture to its last test: two such modules never run at once
    (loop devices, blkio throttles, tracefs and timings of their own), while the other
    worker runs CPU work or guest boots, as another user's jobs would."""
    if _module(request.node) not in request.config.stash.get(HOST_MODULES, ()):
        yield
        return
    with _one_worker_at_a_time(tmp_path_factory, "host-devices"):
        yield


@contextlib.contextmanager
def _one_worker_at_a_time(tmp_path_factory, name):
    """Under pytest-xdist, one worker at a time (the others wait): two makes in one tree
    at once would write the same files. The lock is in the run's temporary folder, which
    the workers share."""
    with open(tmp_path_factory.getbasetemp().parent / f"{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def built_guest(tmp_path_factory):
    """The guest kernel and initramfs, built once per session; skip where this machine
    cannot build or boot the guest (the reason is the skip message)."""
    from abtlab.errors import UnavailableError
    from abtlab.machines import guest
    ok, why = guest.available()
    if not ok:
        pytest.skip(why)
    try:
        with _one_worker_at_a_time(tmp_path_factory, "built_guest"):
            return guest.ensure_built()
    except UnavailableError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def built_native(tmp_path_factory):
    """Build the C programs once per session; return their directory (backends/)."""
    with _one_worker_at_a_time(tmp_path_factory, "built_native"):
        subprocess.run(["make", "-s", "-C", str(NATIVE)], check=True)
    return NATIVE


@pytest.fixture
def scratch_ext4(tmp_path):
    """A fresh journaled ext4 on a loop device, torn down even if the test fails."""
    from abtlab.system.scratchfs import ScratchFS
    with ScratchFS(size_mb=128, journal=True, workdir=tmp_path) as fs:
        yield fs


@pytest.fixture
def scratch_nojournal(tmp_path):
    from abtlab.system.scratchfs import ScratchFS
    with ScratchFS(size_mb=128, journal=False, workdir=tmp_path) as fs:
        yield fs

