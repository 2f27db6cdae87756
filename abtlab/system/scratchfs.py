"""Scratch ext4 filesystems on loop devices: fresh for every run, always torn down.

`ScratchFS` makes a sparse image, formats it (with a data=ordered journal, or without
one: the paper's NOJC), attaches it with `losetup --find --show` and mounts it. Every
step pushes its undo onto `abtlab.system.cleanup` the moment it succeeds, so a failure
half-way, an exception in the `with` body, SIGINT or SIGTERM all unwind what was done
and nothing else: the loop device is detached only if its backing file is our image,
and only the directory, mount point and image this object created are removed.

`image_dir` puts the image elsewhere than the scratch directory, e.g. on the mount of
an emulated slow disk (abtlab.system.slowdisk), so the loop device's requests pay its
latency model; the mount point stays in the scratch directory. `format_dir` is the same
directory reached without the model (the slow disk's backing directory): the image is
created and formatted there, so mkfs does not pay seeks meant for the workload.
"""
from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
import shutil

from ..errors import ConfigError, RunError
from . import cleanup, leftovers
from ._shell import read, sh
from .geometry import Geometry, read_geometry

__all__ = ["ScratchFS", "jbd2_commits", "parse_mount_options", "loop_devices", "MOUNT_KEYS",
           "MOUNT_FLAGS", "MAX_IMAGE_MB"]

MAX_IMAGE_MB = 65536      # the largest scratch image a run makes


def loop_devices() -> tuple[bool, str]:
    """Whether a scratch filesystem can be attached here: root, /dev/loop-control and
    losetup; (True, what is used) or (False, what is missing)."""
    tool = shutil.which("losetup")
    missing = [n for n, ok in (("root", os.geteuid() == 0),
                               ("/dev/loop-control", os.path.exists("/dev/loop-control")),
                               ("losetup", tool)) if not ok]
    return (not missing, f"/dev/loop-control and {tool}" if not missing else f"missing {missing}")

# ext4 options that take a value / are bare flags; others are refused, not passed on.
MOUNT_KEYS = {"commit", "min_batch_time", "max_batch_time", "barrier", "data",
              "journal_ioprio", "stripe", "inode_readahead_blks", "init_itable"}
MOUNT_FLAGS = {"nobarrier", "journal_async_commit", "journal_checksum", "noatime",
               "relatime", "nodelalloc", "delalloc", "auto_da_alloc", "noauto_da_alloc",
               "discard", "nodiscard", "dioread_nolock", "dioread_lock", "lazytime",
               "nolazytime", "noinit_itable", "block_validity", "noblock_validity"}
DATA_MODES = {"ordered", "writeback", "journal"}
JBD2_PROC = Path("/proc/fs/jbd2")


def _accepted():
    return (f"comma-separated ext4 options: {', '.join(sorted(k + '=' for k in MOUNT_KEYS))}, "
            f"{', '.join(sorted(MOUNT_FLAGS))}")


def parse_mount_options(text: str) -> list[str]:
    """Split and validate pass-through mount options; ConfigError('mount_options')."""
    if not isinstance(text, str):
        raise ConfigError("mount_options", text, _accepted())
    opts = [o.strip() for o in text.split(",") if o.strip()]
    for opt in opts:
        key, eq, value = opt.partition("=")
        if eq and key in MOUNT_KEYS and value and not any(c in value for c in " \t"):
            if key == "data" and value not in DATA_MODES:
                raise ConfigError("mount_options", opt, f"data={'|'.join(sorted(DATA_MODES))}")
            if key != "data" and not value.isdigit():
                raise ConfigError("mount_options", opt, f"{key}=<non-negative integer>")
            continue
        if not eq and opt in MOUNT_FLAGS:
            continue
        raise ConfigError("mount_options", opt, _accepted())
    return opts


def jbd2_commits(jbd2_name: str) -> int:
    """Commits done so far by a journal: first number of /proc/fs/jbd2/<name>/info."""
    path = JBD2_PROC / jbd2_name / "info"
    try:
        first = read(path).splitlines()[0]  # "N transactions (M requested), each up to ..."
        return int(first.split()[0])
    except (OSError, IndexError, ValueError) as exc:
        raise RunError(f"cannot read commit count from {path}: {exc}") from exc


def loop_backing_file(loopdev: str) -> str | None:
    """The file a loop device is attached to, or None when it is free."""
    name = Path(loopdev).name
    try:
        return read(f"/sys/block/{name}/loop/backing_file")
    except OSError:
        return None


def _loops_on(st_dev: int, st_ino: int) -> list[str]:
    """Loop devices whose backing file is this inode (losetup's BACK-INO, BACK-MAJ:MIN)."""
    want = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    out = sh("losetup", "--list", "--noheadings", "-O", "NAME,BACK-INO,BACK-MAJ:MIN")
    return [f[0] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] == str(st_ino) and f[2] == want]


def _all_loops() -> list[str]:
    return [f"/dev/{p.name}" for p in Path("/sys/block").glob("loop*")]


class ScratchFS(cleanup.Undoable):
    """A fresh ext4 image on a loop device, mounted; see the module docstring."""

    def __init__(self, size_mb=256, journal=True, mount_options="", workdir=None,
                 mkfs_options=(), image_dir=None, direct_io=False, format_dir=None,
                 geometry: Geometry | None = None):
        if not isinstance(size_mb, int) or isinstance(size_mb, bool) or not 16 <= size_mb <= 65536:
            raise ConfigError("size_mb", size_mb, "an integer from 16 to 65536 (MiB)")
        if workdir is not None and not os.path.isdir(workdir):
            raise ConfigError("workdir", workdir, "an existing directory")
        if image_dir is not None and not os.path.isdir(image_dir):
            raise ConfigError("image_dir", image_dir, "an existing directory")
        if format_dir is not None and (image_dir is None or not os.path.isdir(format_dir)):
            raise ConfigError("format_dir", format_dir,
                              "an existing directory holding image_dir's files (with image_dir)")
        self._image_dir, self._format_dir = image_dir, format_dir
        self._direct_io = bool(direct_io)
        self.size_mb, self.journal = size_mb, bool(journal)
        self._opts = parse_mount_options(mount_options)
        if not self.journal and any(o.startswith("data=") for o in self._opts):
            raise ConfigError("mount_options", mount_options, "no data= without a journal")
        self.mount_options = ",".join(self._opts)
        self.mkfs_options = tuple(str(o) for o in mkfs_options)
        self.geometry = geometry or Geometry()
        self.geometry.check_fits(size_mb)
        self.layout: dict = {}
        self._workdir = workdir
        self._tokens: list[int] = []
        self.dir = self.image = self.loopdev = self.mountpoint = None
        self.dev_name = self.major_minor = self.dev_t = self.jbd2_name = None

    # -- set-up, one undo per step --------------------------------------------------
    def _setup(self):
        leftovers.reclaim(roots=(self._workdir or "/var/tmp", *leftovers.default_roots()))
        self._make_dir()
        self._make_image()
        self._attach()
        self._mount()
        self._find_journal()

    def _make_dir(self):
        parent = self._workdir or "/var/tmp"
        self.dir = leftovers.make_dir(parent, "abtlab-")  # owned: a kill -9 is undone later
        self._undo(lambda d=self.dir: leftovers.remove_dir(d), f"remove {self.dir}")

    def _make_image(self):
        self.image = (Path(self._image_dir) / f"{self.dir.name}.img" if self._image_dir
                      else self.dir / "scratch.img")
        made = Path(self._format_dir) / self.image.name if self._format_dir else self.image
        with open(made, "xb") as f:  # "x": never reuse a file we did not create
            self._undo(lambda p=made: p.unlink(missing_ok=True), f"remove {made}")
            f.truncate(self.size_mb << 20)
        sh("mkfs.ext4", *self.geometry.mkfs_args(self.journal), *self.mkfs_options, made)
        self.layout = read_geometry(made)
        if not self.mkfs_options and self.layout["fs_block_size"] != self.geometry.block_size:
            raise RunError(f"mkfs made {self.layout['fs_block_size']}-byte blocks, "
                           f"not the {self.geometry.block_size} asked for")

    def _attach(self):
        # direct I/O: the loop device sends its requests to the image concurrently, so an
        # emulated disk underneath sees a queue it can reorder (buffered: one at a time)
        dio = ["--direct-io=on"] if self._direct_io else []
        st = os.stat(self.image)
        self._image_id = (st.st_dev, st.st_ino)
        self._undo(self._detach, f"detach the loop device of {self.image}")  # before: idempotent
        dev = sh("losetup", "--find", "--show", *dio, self.image)
        if not dev.startswith("/dev/loop"):
            raise RunError(f"losetup returned {dev!r}, not a loop device")
        self.loopdev = dev
        self.dev_name = Path(dev).name
        rdev = os.stat(dev).st_rdev
        major, minor = os.major(rdev), os.minor(rdev)
        self.major_minor = f"{major}:{minor}"
        self.dev_t = (major << 20) | minor  # the kernel's internal dev_t, as tracepoints log it

    def _mount(self):
        mnt = self.dir / "mnt"
        mnt.mkdir()
        self._undo(lambda: mnt.rmdir() if not os.path.ismount(mnt) else None, f"remove {mnt}")
        opts = list(self._opts)
        if self.journal and not any(o.startswith("data=") for o in opts):
            opts.insert(0, "data=ordered")
        args = ["mount", "-t", "ext4"] + (["-o", ",".join(opts)] if opts else [])
        self.mountpoint = mnt
        self._undo(self._umount, f"unmount {mnt}")  # before: a mount cut short is still undone
        sh(*args, self.loopdev, mnt)
        self._effective = ",".join(opts)

    def _find_journal(self):
        if not self.journal:
            return
        names = [n for n in os.listdir(JBD2_PROC) if n.startswith(self.dev_name + "-")]
        if len(names) != 1:
            raise RunError(f"expected one journal for {self.dev_name} in {JBD2_PROC}, got {names}")
        self.jbd2_name = names[0]

    # -- tear-down ---------------------------------------------------------------------
    def _umount(self):
        mnt = self.mountpoint
        if not os.path.ismount(mnt):
            return
        sh("sync", "-f", mnt, check=False)
        for delay in (0, 0.1, 0.3, 1.0):
            time.sleep(0 if cleanup.hurry() else delay)
            if not sh("umount", mnt, check=False) and not os.path.ismount(mnt):
                return
        warnings.warn(f"{mnt} is busy; detached lazily (umount -l)", RuntimeWarning)
        sh("umount", "-l", mnt)

    def _detach(self):
        """Detach the loop devices backed by our image: found by its inode, since the
        path the kernel shows changes when the directory above it goes away (on an
        emulated disk whose daemon is gone there is no inode: then by its unique name)."""
        devs = set(_loops_on(*self._image_id))
        if self._image_dir:
            devs |= {dev for dev in _all_loops()
                     if Path((loop_backing_file(dev) or "").removesuffix(" (deleted)")).name
                     == self.image.name}
        for dev in sorted(devs):
            sh("losetup", "-d", dev)

    # -- facts -------------------------------------------------------------------------
    def commits(self) -> int:
        """Journal commits so far (/proc/fs/jbd2); 0 without a journal."""
        return jbd2_commits(self.jbd2_name) if self.jbd2_name else 0

    def describe(self) -> dict:
        """Attributes for a run dataset."""
        data = next((o.split("=", 1)[1] for o in self._opts if o.startswith("data=")), "ordered")
        return {
            "filesystem": f"ext4 data={data}" if self.journal else "ext4 no journal (NOJC)",
            "mount_options": getattr(self, "_effective", self.mount_options),
            "mkfs_options": " ".join(self.mkfs_options),
            "image_size_mb": self.size_mb,
            "block_device": f"loop ({self.loopdev})",
            **self.layout,
        }

    def __repr__(self):
        return f"ScratchFS({self.loopdev} on {self.mountpoint}, journal={self.journal})"
