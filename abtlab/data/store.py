"""Save and load run datasets; write each finished run atomically so none is lost.

A finished repetition is written as its own small HDF5 file in `<out>.parts/`
(temporary name, fsync, rename), so a killed sweep resumes from what is on disk; where
runs cost milliseconds (a model's), a finished group of a point's repetitions is one part,
renamed into place but not fsynced: a killed process loses none of it (the page cache
outlives it), and after a crash of the machine a part torn or gone is found on resume
and its runs repeated, milliseconds each (the dataset itself is always fsynced).
A part that does not open cleanly (torn write, foreign file), or that holds a repetition
another part has, is moved aside to `<out>.parts/rejected/` and its runs are repeated:
never loaded twice, never silently lost.
Once the dataset is written, the parts go and the rejected ones move to `<out>.rejected/`.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import warnings
from pathlib import Path

import numpy as np

from ..errors import AbtWarning, ConfigError, TraceError
from . import schema, space
from .arrays import RunArrays
from .block import from_part, read_hdf5, write_hdf5
from .schema import SWEEP_SPEC

__all__ = ["save", "load", "parts_dir", "write_block", "read_parts", "part_name",
           "block_name", "keep_rejected", "not_a_file",
           "is_dataset", "check_out", "start_fresh", "write_spec", "stored_spec", "check_resume", "drop_unstarted",
           "temp_path", "stale_temps", "writer_alive"]


def _clean_attrs(attrs: dict) -> dict:
    out = {}
    for k, v in attrs.items():
        if isinstance(v, (dict, list, tuple)):
            out[k] = json.dumps(v, default=str)
        elif isinstance(v, (bool, np.bool_)):
            out[k] = int(v)
        elif v is None:
            out[k] = ""
        else:
            out[k] = v
    return out


def _fsync_dir(path: Path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_waiting(tmp: Path) -> None:
    """fsync tmp in a thread while this one waits (hdf5file.waiting: signals reach this
    thread in the order they come, not after the fsync)."""
    from .hdf5file import waiting

    def sync():
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
    waiting(sync)


def _no_hold(raise_after=True):
    return contextlib.nullcontext()


def _write_file_durably(path: Path, write, fsync: bool = True, hold=None,
                        what: str = "it") -> Path:
    """write(tmp) to a temporary name beside path, fsync it, rename it over path, fsync
    the folder (fsync=False: neither fsync, for a file a crash may lose). An error or a
    signal mid-write removes the temporary file: no torn file stays. hold: a context
    manager factory (abtlab.system.cleanup.deferred) that holds signals around the rename
    and the removal, so a second signal cannot leave the temporary file or a half-done
    rename. A full disk raises DiskFullError naming path, what needs how much space."""
    hold, tmp = hold or _no_hold, temp_path(path)
    try:
        write(tmp)
        if fsync:
            _fsync_waiting(tmp)
        with hold(raise_after=False):   # a signal meanwhile is raised by the caller's next step
            os.replace(tmp, path)
    except BaseException as exc:
        with hold(raise_after=False):
            _remove(tmp)
        if space.is_full(exc):
            raise space.full_error(path, getattr(exc, "needed", None), what) from None
        raise
    if fsync:
        _fsync_dir(path.parent if str(path.parent) else Path("."))
    return path


def _versioned(attrs: dict) -> dict:
    """attrs with the schema version this abtlab writes (a dataset read from an older
    one was migrated by load, so it is current too)."""
    return {**attrs, schema.ATTR_SCHEMA_VERSION: attrs.get(schema.ATTR_SCHEMA_VERSION,
                                                          schema.SCHEMA_VERSION)}


def save(ds, path, hold=None) -> Path:
    """Write ds to path atomically: NetCDF (h5netcdf), or Zarr when path ends in .zarr.
    ds: an xarray.Dataset, or RunArrays (abtlab.data.arrays), written to NetCDF without
    xarray where netcdf.write_arrays encodes all of it. hold: see _write_file_durably."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise ConfigError("out", str(path), "a path in an existing, writable directory")
    if (what := not_a_file(path)) and not (what == "a directory" and path.suffix == ".zarr"):
        raise ConfigError("out", str(path), f"a new path or a regular file (it is {what})")
    for stale in stale_temps(path):     # torn by a kill -9: this write replaces it
        _remove(stale)
    if isinstance(ds, RunArrays):
        from . import netcdf    # h5py: 0.07 CPU s that `abtlab cleanup` (system.runlock) skips
        if path.suffix != ".zarr" and netcdf.arrays_writable(ds):
            clean = RunArrays({k: (dims, data, _clean_attrs(a)) for k, (dims, data, a) in ds.variables.items()},
                              ds.coords, _versioned(_clean_attrs(ds.attrs)))
            return _write_file_durably(path, lambda tmp: netcdf.write_arrays(clean, tmp), hold=hold,
                                       what="the dataset")
        ds = ds.to_dataset()
    ds = ds.copy()
    ds.attrs = _versioned(_clean_attrs(ds.attrs))
    for v in ds.variables.values():
        v.attrs = _clean_attrs(v.attrs)
    if path.suffix != ".zarr":
        from . import netcdf    # h5py: 0.07 CPU s that `abtlab cleanup` (system.runlock) skips
        # the file xarray's h5netcdf engine writes, laid out in one pass of h5py (~0.1 s
        # for a simulated sweep's 47 variables, ~0.6 s through h5netcdf); data it does
        # not lay out itself (compressed, dask-backed) goes through xarray
        return _write_file_durably(path, lambda tmp: netcdf.write(ds, tmp) if netcdf.writable(ds)
                                   else ds.to_netcdf(tmp, engine="h5netcdf"), hold=hold,
                                   what="the dataset")
    tmp = temp_path(path)
    try:
        ds.to_zarr(tmp, mode="w")
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException as exc:        # an error or a signal mid-write: no torn store stays
        with (hold or _no_hold)(raise_after=False):
            _remove(tmp)
        if space.is_full(exc):
            raise space.full_error(path, None, "the dataset") from None
        raise
    _fsync_dir(path.parent if str(path.parent) else Path("."))
    return path


# -- the temporary file of a write: `.<name>.tmp-<pid>` beside its target ------------
def temp_path(path, pid: int | None = None) -> Path:
    """Where `save` writes path before renaming it into place (pid: the writer's)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid() if pid is None else pid}")


def writer_alive(pid: int) -> bool:
    """pid is a running process (a zombie has run its last instruction)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:                     # no /proc to tell: the kernel's word
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    return stat[stat.rfind(")") + 2:].split()[:1] != ["Z"]


def stale_temps(path) -> list[Path]:
    """save's temporary files of path whose writer is gone (a kill -9 mid-write); a live
    writer's, and any file not named by temp_path, are not listed."""
    path = Path(path)
    pattern = re.compile(re.escape(f".{path.name}.tmp-") + r"(\d+)")
    try:
        entries = list(path.parent.iterdir() if str(path.parent) else Path(".").iterdir())
    except OSError:
        return []
    return sorted(p for p in entries
                  if (m := pattern.fullmatch(p.name)) and not writer_alive(int(m.group(1))))


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


def load(path):
    """Load a run dataset fully into memory (NetCDF or Zarr)."""
    import xarray as xr     # the command line writes without it: 0.67 CPU s

    path = Path(path)
    if not path.exists():
        raise ConfigError("path", str(path), "an existing .nc or .zarr run dataset")
    try:
        if path.suffix == ".zarr" or path.is_dir():
            ds = xr.open_zarr(path).load()
        else:
            ds = xr.load_dataset(path, engine="h5netcdf")
    except Exception as exc:  # h5py/h5netcdf raise KeyError, TypeError... on corrupt metadata
        raise TraceError(f"{path} is not a readable run dataset: "
                         f"{type(exc).__name__}: {exc}") from None
    from .migrate import to_current
    return to_current(ds, path)


def parts_dir(out) -> Path:
    return Path(f"{out}.parts")


def part_name(index: int, rep: int, last: int | None = None) -> str:
    """The part of point `index` holding its repetitions rep to last (rep alone: None)."""
    return f"p{index:05d}-r{rep:04d}{'' if last in (None, rep) else f'-{last:04d}'}.h5"


def block_name(block) -> str:
    return part_name(block.point_index, int(block.reps[0]), int(block.reps[-1]))


def write_block(out, block, fsync: bool = True) -> Path:
    """Store a RunBlock (abtlab.data.block) as one part: HDF5 under a temporary name,
    fsync, rename. fsync=False for runs that cost milliseconds (a model's): renamed
    into place unsynced, a crash of the machine may tear or lose the part, which
    read_parts then sets aside and the sweep runs again."""
    from .hdf5file import write_file    # h5py: 0.07 CPU s that `abtlab cleanup` skips
    d = _made_parts_dir(out, "a finished run's part")
    return _write_file_durably(d / block_name(block), lambda tmp: write_file(tmp, lambda f: write_hdf5(block, f)),
                               fsync=fsync, what="a finished run's part")


def keep_rejected(out) -> Path | None:
    """Move `<out>.parts/rejected/` (if any) to `<out>.rejected/`, so removing the parts
    after the merge does not delete what was set aside for inspection."""
    rej = parts_dir(out) / "rejected"
    if not rej.is_dir() or not any(rej.iterdir()):
        return None
    dest = Path(str(out) + ".rejected")
    dest.mkdir(exist_ok=True)
    for p in rej.iterdir():
        os.replace(p, dest / p.name)
    return dest


def _set_aside(part: Path, message: str) -> None:
    rej = part.parent / "rejected"
    rej.mkdir(exist_ok=True)
    os.replace(part, rej / part.name)
    warnings.warn(message, AbtWarning, stacklevel=2)


def _read_part(p: Path):
    """The RunBlock in a part; an earlier version's parts are NetCDF, one repetition each."""
    if p.suffix == ".nc":
        import xarray as xr     # an earlier version's part only (0.67 CPU s)
        return from_part(xr.load_dataset(p, engine="h5netcdf"))
    import h5py     # 0.07 CPU s that `abtlab cleanup` (system.runlock) skips
    with h5py.File(p, "r") as f:
        block = read_hdf5(f)
    for was, now in schema.RENAMED.items():     # a part written before a variable's rename
        if was in block.scalars and now not in block.scalars:
            block.scalars[now] = block.scalars.pop(was)
    return block


def read_parts(out) -> dict:
    """Return {part name: RunBlock} of every intact part, each repetition in one of them;
    move torn ones, and ones repeating a repetition already found, aside."""
    d = parts_dir(out)
    found, held = {}, set()
    if not d.exists():
        return found
    for p in sorted([*d.glob("p*-r*.h5"), *d.glob("p*-r*.nc")]):
        try:
            block = _read_part(p)
        except Exception as exc:  # torn or foreign: keep it for inspection, rerun the point
            _set_aside(p, f"discarded unreadable part {p.name} ({exc}); its run will be repeated")
            continue
        runs = {(block.point_index, int(r)) for r in block.reps}
        if runs & held or len(runs) < block.reps.size:   # each repetition exactly once
            _set_aside(p, f"discarded part {p.name}: it repeats a repetition of another part "
                          "(the repetitions only it held will be run again)")
            continue
        found[p.name] = block
        held |= runs
    for stale in d.glob(".*.tmp-*"):  # a write interrupted before its rename
        stale.unlink(missing_ok=True)
    return found


# -- outputs checked before anything runs, and what --resume must match ----------------
SPEC_FILE = "spec.json"
_FLAGS = {"threads": "--threads", "file_size": "--file-size", "record_size": "--record",
          "files": "--files", "policy": "--policy", "device": "--device", "freq_ghz": "--freq",
          "freq_mode": "--freq", "fsync": "--no-fsync", "direct": "--direct",
          "processes": "--processes", "seed": "--seed", "reps": "--reps"}


def is_dataset(path) -> bool:
    """True when path holds a dataset abtlab wrote (NetCDF or Zarr with its attrs)."""
    path = Path(path)
    try:
        if path.is_dir():
            return (path / ".zattrs").is_file() or (path / "zarr.json").is_file()
        import h5netcdf      # only an output that exists: 0.02 CPU s of a new process
        with h5netcdf.File(path, "r") as f:
            return "abtlab_version" in f.attrs and "backend" in f.attrs
    except Exception:       # not HDF5, truncated, unreadable: not a dataset of ours
        return False


_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def not_a_file(path) -> str:
    """'' when path is absent or a regular file (a symlink to one included); else what it
    is: 'a character device', 'a symlink to a FIFO (/tmp/f)', 'a symlink to nothing (x)'."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    link = ""
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        try:
            st = os.stat(path)
        except OSError:
            return f"a symlink to nothing ({target})"
        link = f" ({target})"
    if stat.S_ISREG(st.st_mode):
        return ""
    what = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
    return f"a symlink to {what}{link}" if link else what


def check_out(out, resume=False, force=False) -> None:
    """Refuse an output that cannot be written, or whose writing would destroy something,
    before any run: ConfigError('out') saying what is accepted."""
    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError("out", str(out), "a path in an existing, writable directory")
    if (what := not_a_file(out)) and not (what == "a directory" and out.suffix == ".zarr"):
        # never replaced, --force or not: a device node, a FIFO, a user's directory
        raise ConfigError("out", str(out), f"a new path or a regular file (it is {what}, "
                                           "which abtlab never replaces: choose another path)")
    if out.exists() and not force:
        if not is_dataset(out):
            raise ConfigError("out", str(out), "a new path or an abtlab dataset "
                              "(it is another file: --force replaces it)")
        if not resume:
            raise ConfigError("out", str(out), "a new path (it is a finished abtlab dataset: "
                              "--resume checks it against this command, --force replaces it)")
    if parts_dir(out).exists() and not (resume or force):
        raise ConfigError("out", str(out), "a path without unfinished parts "
                          "(pass resume=True / --resume to continue it, --force to start over)")


def start_fresh(out) -> None:
    """--force: drop the unfinished parts and spec of an earlier sweep to this output."""
    shutil.rmtree(parts_dir(out), ignore_errors=True)


def drop_unstarted(out) -> bool:
    """Remove `<out>.parts` when it holds only the spec (a sweep stopped before its first
    repetition), so the same command runs again without --resume; True if removed.
    Parts and rejected parts are never removed here."""
    d = parts_dir(out)
    try:
        names = {p.name for p in d.iterdir()}
    except OSError:
        return False
    if any(n != SPEC_FILE and not n.startswith(f".{SPEC_FILE}.tmp-") for n in names):
        return False
    shutil.rmtree(d, ignore_errors=True)
    return True


def _normal(spec: dict) -> dict:
    return json.loads(json.dumps(spec, default=str, sort_keys=True))


def _made_parts_dir(out, what: str) -> Path:
    """The parts directory of out, made if missing; a full disk is abtlab's one-line error."""
    d = parts_dir(out)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if space.is_full(exc):
            raise space.full_error(d, None, what) from None
        raise
    return d


def write_spec(out, spec: dict) -> None:
    """Keep what a later --resume must match beside the parts (once, when they start)."""
    d = _made_parts_dir(out, "the resume state")
    if not (d / SPEC_FILE).exists():
        text = json.dumps(_normal(spec), sort_keys=True)

        def write(tmp):
            try:
                tmp.write_text(text)
            except OSError as exc:
                exc.needed = len(text.encode())
                raise
        _write_file_durably(d / SPEC_FILE, write, fsync=False, what="the resume state")


def stored_spec(out) -> tuple[dict | None, str]:
    """(the spec an earlier sweep to out ran with, where it was read) or (None, "")."""
    f = parts_dir(out) / SPEC_FILE
    try:
        if f.is_file():
            return json.loads(f.read_text()), str(f)
        if Path(out).exists():
            return json.loads(load(out).attrs.get(SWEEP_SPEC) or "null"), str(out)
    except (ValueError, TraceError) as exc:
        raise TraceError(f"{f if f.is_file() else out}: unreadable sweep spec ({exc})") from None
    return None, ""


# run options of every backend that say where a run keeps files, not what it measures (a
# backend's own: Backend.place_options): not compared by --resume, in old specs either
PLACE_OPTIONS = ("guest_failed_dir",)


def check_resume(out, spec: dict) -> None:
    """Refuse to resume out with another command: ConfigError naming the first field
    (factor, option, seed, repetitions, order) that differs from what is stored."""
    stored, where = stored_spec(out)
    if stored is None:
        return
    new = _normal(spec)
    for section in ("backend", "factors", "options", "seed", "reps", "order"):
        old_v, new_v = stored.get(section), new.get(section)
        if isinstance(new_v, dict) or isinstance(old_v, dict):
            old_v, new_v = old_v or {}, new_v or {}
            for key in sorted(set(old_v) | set(new_v)):
                if key in PLACE_OPTIONS and section == "options":
                    continue
                if old_v.get(key) != new_v.get(key):
                    _mismatch(key, new_v.get(key), old_v.get(key), where)
        elif old_v != new_v:
            _mismatch(section, new_v, old_v, where)


def _mismatch(key, given, stored, where):
    name = f"{key} ({_FLAGS[key]})" if key in _FLAGS else key
    raise ConfigError(name, given, f"{stored!r}, as in {where} that --resume continues "
                                   f"(a new --out, or --force to start over)")
