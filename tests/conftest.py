"""Shared fixtures. Tests that touch the kernel (loop devices, tracefs, blkio) are
marked `root` and skipped with a reason where the machine cannot run them."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ROOT / "backends"


def pytest_collection_modifyitems(config, items):
    from abtlab.system.scratchfs import loop_devices
    if loop_devices()[0]:
        return
    skip = pytest.mark.skip(reason="needs root with loop devices")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def built_guest():
    """The guest kernel and initramfs, built once per session; skip where this machine
    cannot build or boot the guest (the reason is the skip message)."""
    from abtlab.errors import UnavailableError
    from abtlab.system import guest
    ok, why = guest.available()
    if not ok:
        pytest.skip(why)
    try:
        return guest.ensure_built()
    except UnavailableError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def built_backends():
    """Build the C backends once per session; return the backends directory."""
    subprocess.run(["make", "-s", "-C", str(BACKENDS)], check=True)
    return BACKENDS


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

