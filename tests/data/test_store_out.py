"""--out is a regular file or absent: --force never replaces a device node, a FIFO, a
directory or a symlink to one, and the message says which (suggesting --force only
where it would be accepted)."""
from __future__ import annotations

import os

import pytest

from abtlab.data import store
from abtlab.errors import ConfigError


def _fifo(p):
    os.mkfifo(p)


def _link_to_null(p):
    p.symlink_to("/dev/null")


def _link_to_dir(p):
    (p.parent / "d").mkdir()
    p.symlink_to(p.parent / "d")


@pytest.mark.parametrize("make, said", [
    (_fifo, "it is a FIFO,"), (lambda p: p.mkdir(), "it is a directory,"),
    (_link_to_null, "it is a symlink to a character device (/dev/null),"),
    (_link_to_dir, "it is a symlink to a directory ("),
    (lambda p: p.symlink_to(p.parent / "gone"), "it is a symlink to nothing ("),
])
@pytest.mark.parametrize("force", [False, True])
def test_what_is_not_a_regular_file_is_never_replaced(tmp_path, make, said, force):
    out = tmp_path / "x.nc"
    make(out)
    before = os.lstat(out)
    with pytest.raises(ConfigError) as exc:
        store.check_out(out, force=force)
    assert said in str(exc.value) and "never replaces" in str(exc.value)
    assert "--force" not in str(exc.value)          # it would not be accepted
    with pytest.raises(ConfigError):
        store.save(None, out)                       # nor by a save of the API
    after = os.lstat(out)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


@pytest.mark.root
def test_a_device_node_is_never_replaced_even_by_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    from abtlab.cli import main
    node = tmp_path / "n"
    os.mknod(node, 0o600 | 0o020000, os.makedev(1, 3))
    for out in (node, "/dev/null"):
        st = os.stat(out)
        assert main(["run", "sim", "--reps", "1", "--quiet", "--out", str(out), "--force"]) == 2
        assert (os.stat(out).st_ino, os.stat(out).st_rdev) == (st.st_ino, st.st_rdev)


def test_a_regular_file_and_a_symlink_to_one_are_accepted(tmp_path):
    f = tmp_path / "notes.nc"
    f.write_text("my notes")
    with pytest.raises(ConfigError, match="another file: --force replaces it"):
        store.check_out(f)
    store.check_out(f, force=True)
    link = tmp_path / "link.nc"
    link.symlink_to(f)
    assert store.not_a_file(link) == "" and store.not_a_file(tmp_path / "absent.nc") == ""
