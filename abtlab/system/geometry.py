"""ext4 geometry of a scratch filesystem: chosen, passed to mkfs, and read back.

mke2fs picks its "small" profile for images under 512 MiB (1 KiB blocks, an 8 MiB
journal), so an image sized for a small workload would not be the filesystem of the
paper or of any real disk. The geometry is therefore chosen, not left to the image size:
4 KiB blocks, the inode size and ratio of mke2fs's default profile (`-T default`), and
the 32 MiB journal that mke2fs gives a 1-2 GiB disk (larger disks get 64 MiB to 1 GiB
with e2fsprogs 1.47, 128 MiB with the 1.42 of the paper's era; `journal_mb` chooses).
What the image really got is read back with `dumpe2fs -h` and recorded, never assumed.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError, RunError
from ._shell import sh

__all__ = ["Geometry", "BLOCK_SIZES", "FEATURES_342", "parse_geometry", "parse_dumpe2fs",
           "read_geometry"]

BLOCK_SIZES = (1024, 2048, 4096)
# For Linux 3.4.2: off, what bookworm's mke2fs 1.47 may turn on that 3.4 cannot mount
# read-write (metadata_csum, RO_COMPAT 0x400, came in 3.5; metadata_csum_seed and
# orphan_file later still); on, e2fsprogs 1.42's features of the paper's era (64bit off,
# uninit_bg: group descriptor checksums). The filesystem 1.42's `mkfs.ext4` made.
FEATURES_342 = "^metadata_csum,^metadata_csum_seed,^orphan_file,^64bit,uninit_bg"
JOURNAL_MB = (4, 1024)   # accepted range; mke2fs refuses less than 1024 blocks


@dataclass(frozen=True)
class Geometry:
    block_size: int = 4096
    journal_mb: int = 32

    def mkfs_args(self, journal: bool = True, zeroed: bool = False, features: str = "") -> list[str]:
        """mkfs.ext4 arguments (before the device) for this geometry, with inode tables
        and journal initialised now so no lazy-init I/O competes with a measured run.
        zeroed: the device reads back zeros everywhere (a fresh null_blk), so writing
        zeros over the journal would leave the same bytes: mkfs skips it (in the guest
        that is most of mkfs's instructions). features: mke2fs -O items for the kernel
        that mounts it (FEATURES_342), joined with NOJC's ^has_journal."""
        args = ["-q", "-F", "-T", "default", "-b", str(self.block_size),
                "-E", f"lazy_itable_init=0,lazy_journal_init={int(zeroed)}"]
        feats = ",".join(f for f in ("" if journal else "^has_journal", features) if f)
        return args + (["-J", f"size={self.journal_mb}"] if journal else []) + (
            ["-O", feats] if feats else [])

    def check_fits(self, image_mb: int) -> None:
        """The journal must leave most of the image to data (mke2fs allows at most half)."""
        if self.journal_mb * 4 > image_mb:
            raise ConfigError("journal_mb", self.journal_mb,
                              f"at most a quarter of the scratch image ({image_mb} MiB): "
                              f"{image_mb // 4} MiB, or a larger image_mb")


def _int_in(field: str, value, accepted, lo=None, hi=None) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ConfigError(field, value, accepted) from None
    if isinstance(value, bool) or (lo is not None and not lo <= n <= hi):
        raise ConfigError(field, value, accepted)
    return n


def parse_geometry(block_size=None, journal_mb=None) -> Geometry:
    """A Geometry from user values (None = default); ConfigError naming the option."""
    g = Geometry()
    if block_size is not None:
        bs = _int_in("block_size", block_size, "1024, 2048 or 4096 (bytes)")
        if bs not in BLOCK_SIZES:
            raise ConfigError("block_size", block_size, "1024, 2048 or 4096 (bytes)")
        g = Geometry(bs, g.journal_mb)
    if journal_mb is not None:
        lo, hi = JOURNAL_MB
        g = Geometry(g.block_size, _int_in("journal_mb", journal_mb,
                                           f"an integer from {lo} to {hi} (MiB)", lo, hi))
    return g


_FIELDS = {"Block size": "fs_block_size", "Inode size": "fs_inode_size",
           "Inode count": "fs_inode_count", "Block count": "fs_block_count"}


def parse_dumpe2fs(text: str) -> dict:
    """Dataset attrs from `dumpe2fs -h`: block and inode size, counts, features and the
    journal size in MiB (0 without a journal)."""
    out, journal = {}, 0.0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            continue
        if key in _FIELDS:
            out[_FIELDS[key]] = int(value)
        elif key == "Filesystem features":
            out["fs_features"] = value
        elif key in ("Total journal size", "Journal size"):
            journal = _size_mb(value)
    if "fs_block_size" not in out or "fs_features" not in out:
        raise RunError(f"dumpe2fs -h printed no block size or features: {text[:200]!r}")
    out["fs_journal_mb"] = journal if "has_journal" in out["fs_features"].split() else 0.0
    return out


def _size_mb(value: str) -> float:
    units = {"k": 1 / 1024, "m": 1.0, "g": 1024.0}
    num = value.rstrip("kKmMgG")
    try:
        return float(num) * units.get(value[-1:].lower(), 1 / 2 ** 20)
    except ValueError as exc:
        raise RunError(f"unreadable journal size from dumpe2fs: {value!r}") from exc


def read_geometry(image) -> dict:
    """What mkfs really made of image (dumpe2fs -h), as dataset attrs."""
    return parse_dumpe2fs(sh("dumpe2fs", "-h", image))
