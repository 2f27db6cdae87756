"""Scratch filesystem geometry: chosen, passed to mkfs, read back with dumpe2fs."""
from pathlib import Path

import pytest

from abtlab.errors import ConfigError
from abtlab.system.geometry import Geometry, parse_dumpe2fs, parse_geometry

DATA = Path(__file__).resolve().parents[1] / "fixtures"


def test_default_is_4k_blocks_and_a_32_mib_journal():
    g = parse_geometry()
    assert (g.block_size, g.journal_mb) == (4096, 32)
    args = g.mkfs_args(journal=True)
    assert args[args.index("-b") + 1] == "4096" and "size=32" in args
    assert args[args.index("-T") + 1] == "default"   # not mke2fs's "small" profile
    nojc = g.mkfs_args(journal=False)
    assert "^has_journal" in nojc and not any(a.startswith("size=") for a in nojc)


def test_journal_zeroing_is_skipped_only_on_a_zeroed_device():
    g = parse_geometry()
    host, fresh = g.mkfs_args(), g.mkfs_args(zeroed=True)
    assert host[host.index("-E") + 1] == "lazy_itable_init=0,lazy_journal_init=0"
    # inode tables are still written: lazy ones would leave ext4lazyinit a job during the run
    assert fresh[fresh.index("-E") + 1] == "lazy_itable_init=0,lazy_journal_init=1"


@pytest.mark.parametrize("kw,field", [
    ({"block_size": 512}, "block_size"), ({"block_size": "4k"}, "block_size"),
    ({"block_size": True}, "block_size"), ({"journal_mb": 2}, "journal_mb"),
    ({"journal_mb": 4096}, "journal_mb"), ({"journal_mb": "lots"}, "journal_mb")])
def test_bad_values_name_the_option(kw, field):
    with pytest.raises(ConfigError) as e:
        parse_geometry(**kw)
    assert e.value.field == field


def test_journal_must_fit_the_image():
    Geometry(journal_mb=32).check_fits(128)
    with pytest.raises(ConfigError, match="journal_mb"):
        Geometry(journal_mb=64).check_fits(128)


def test_dumpe2fs_is_read_not_assumed():
    got = parse_dumpe2fs((DATA / "dumpe2fs_4k_journal32.txt").read_text())
    assert got["fs_block_size"] == 4096 and got["fs_inode_size"] == 256
    assert got["fs_journal_mb"] == 32 and "has_journal" in got["fs_features"]
    small = parse_dumpe2fs((DATA / "dumpe2fs_small_nojournal.txt").read_text())
    assert small["fs_block_size"] == 1024 and small["fs_journal_mb"] == 0
    with pytest.raises(Exception, match="block size"):
        parse_dumpe2fs("dumpe2fs 1.47.0\nnothing here\n")


@pytest.mark.root
def test_a_default_scratch_filesystem_has_4k_blocks(tmp_path):
    from abtlab.system.scratchfs import ScratchFS
    with ScratchFS(size_mb=128, workdir=tmp_path) as fs:
        info = fs.describe()
        real = Path(f"/sys/fs/ext4/{fs.dev_name}")
        assert real.exists()
    assert info["fs_block_size"] == 4096, info
    assert info["fs_journal_mb"] == 32 and info["fs_inode_size"] == 256


@pytest.mark.root
def test_block_size_and_journal_are_chosen(tmp_path):
    from abtlab.system.scratchfs import ScratchFS
    with ScratchFS(size_mb=128, workdir=tmp_path, geometry=Geometry(1024, 8)) as fs:
        info = fs.describe()
    assert (info["fs_block_size"], info["fs_journal_mb"]) == (1024, 8)
