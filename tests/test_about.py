"""abtlab.about: where abtlab's own files are, in a checkout and in an installed package
(whose package data is copied once per build into the cache folder)."""
import os

import pytest

from abtlab import about

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_checkout_uses_its_own_folders():
    assert not about.INSTALLED and str(about.ROOT) == ROOT
    assert about.NATIVE == about.ROOT / "backends" and (about.NATIVE / "Makefile").is_file()
    assert sorted(about.NOTEBOOKS.glob("lab_*.ipynb")) and (about.EXAMPLES / "paper_cells.toml").is_file()
    assert (about.REFERENCE_DATA / "bps_published.csv").is_file()
    with pytest.raises(AttributeError):
        about.NOT_A_PATH


def _data(tmp_path, build="abc"):
    data = tmp_path / "_data"
    (data / "backends" / "kernel").mkdir(parents=True)
    (data / "backends" / "kernel" / "qemu.sh").write_text("#!/bin/sh\n")
    (data / "backends" / "kernel" / "qemu.sh").chmod(0o755)
    (data / "BUILD").write_text(build + "\n")
    return data


def test_package_data_is_copied_once_per_build(tmp_path, monkeypatch):
    monkeypatch.setattr(about, "CACHE", tmp_path / "cache")
    data = _data(tmp_path)
    copy = about._copy_of(data)
    assert copy == tmp_path / "cache" / "package" / f"{about.__version__}-abc"
    assert os.access(copy / "backends" / "kernel" / "qemu.sh", os.X_OK)
    (copy / "backends" / "kernel" / "out").mkdir()          # what a guest build leaves
    assert about._copy_of(data) == copy and (copy / "backends" / "kernel" / "out").is_dir()
    (data / "BUILD").write_text("def\n")
    assert about._copy_of(data).name == f"{about.__version__}-def"
    assert sorted(p.name for p in (tmp_path / "cache" / "package").iterdir()) == \
        [f"{about.__version__}-abc", f"{about.__version__}-def"]      # no temporary left


def test_an_unwritable_cache_leaves_the_package_data_in_place(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(about, "CACHE", blocker / "cache")     # under a file: never writable
    data = _data(tmp_path)
    assert about._copy_of(data) == data


def test_the_cache_folder(monkeypatch):
    monkeypatch.setenv("ABTLAB_CACHE", "/somewhere/abtlab")
    assert str(about._cache()) == "/somewhere/abtlab"
    monkeypatch.delenv("ABTLAB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert about._cache() == about.SYSTEM_CACHE          # beside the guest kernel and qemu
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert str(about._cache()) == "/xdg/abtlab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert str(about._cache()) == "/home/someone/.cache/abtlab"
