"""Save and load run datasets; write each finished run atomically so none is lost.

A finished repetition is written as its own small NetCDF file in `<out>.parts/`
(temporary name, fsync, rename), so a killed sweep resumes from what is on disk.
A part that does not open cleanly (torn write, foreign file) is moved aside to
`<out>.parts/rejected/` and its run is repeated: never loaded, never silently lost.
Once the dataset is written, the parts go and the rejected ones move to `<out>.rejected/`.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from .errors import ConfigError, TraceError

__all__ = ["save", "load", "parts_dir", "write_part", "read_parts", "part_name", "keep_rejected"]


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


def save(ds, path) -> Path:
    """Write ds to path atomically: NetCDF (h5netcdf), or Zarr when path ends in .zarr."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise ConfigError("out", str(path), "a path in an existing, writable directory")
    ds = ds.copy()
    ds.attrs = _clean_attrs(ds.attrs)
    for v in ds.variables.values():
        v.attrs = _clean_attrs(v.attrs)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    if path.suffix == ".zarr":
        ds.to_zarr(tmp, mode="w")
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    else:
        ds.to_netcdf(tmp, engine="h5netcdf")
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    _fsync_dir(path.parent if str(path.parent) else Path("."))
    return path


def load(path):
    """Load a run dataset fully into memory (NetCDF or Zarr)."""
    import xarray as xr

    from . import accessor  # noqa: F401  (registers ds.abt)
    path = Path(path)
    if not path.exists():
        raise ConfigError("path", str(path), "an existing .nc or .zarr run dataset")
    try:
        if path.suffix == ".zarr" or path.is_dir():
            return xr.open_zarr(path).load()
        return xr.load_dataset(path, engine="h5netcdf")
    except (OSError, ValueError) as exc:
        raise TraceError(f"{path} is not a readable run dataset: {exc}") from None


def parts_dir(out) -> Path:
    return Path(f"{out}.parts")


def part_name(index: int, rep: int) -> str:
    return f"p{index:05d}-r{rep:04d}.nc"


def write_part(out, name: str, ds) -> Path:
    d = parts_dir(out)
    d.mkdir(parents=True, exist_ok=True)
    return save(ds, d / name)


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


def read_parts(out) -> dict:
    """Return {part name: Dataset} of every intact part; move torn ones aside."""
    import xarray as xr
    d = parts_dir(out)
    found = {}
    if not d.exists():
        return found
    for p in sorted(d.glob("p*-r*.nc")):
        try:
            ds = xr.load_dataset(p, engine="h5netcdf")
            if "point_index" not in ds.attrs:
                raise ValueError("no point_index attribute")
        except Exception as exc:  # torn or foreign: keep it for inspection, rerun the point
            rej = d / "rejected"
            rej.mkdir(exist_ok=True)
            os.replace(p, rej / p.name)
            import warnings
            warnings.warn(f"discarded unreadable part {p.name} ({exc}); its run will be repeated")
            continue
        found[p.name] = ds
    for stale in d.glob(".*.tmp-*"):  # a write interrupted before its rename
        stale.unlink(missing_ok=True)
    return found
