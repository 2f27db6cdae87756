"""Read abtlab binary traces (backends/include/abt_trace.h) with one numpy dtype."""
from __future__ import annotations

import os
from enum import IntEnum
import time

import numpy as np

from ..errors import TraceError

__all__ = ["Op", "Flag", "HEADER_DTYPE", "RECORD_DTYPE", "read", "write", "MAGIC", "VERSION"]

MAGIC = b"ABTTRACE"
VERSION = 1
CLOCK_MONOTONIC = 1

HEADER_DTYPE = np.dtype([
    ("magic", "S8"), ("version", "<u2"), ("record_size", "<u2"), ("clock_id", "<u2"),
    ("kind", "<u2"), ("record_count", "<u8"), ("created_ns", "<u8"),
])
RECORD_DTYPE = np.dtype([
    ("pid", "<u4"), ("tid", "<u4"), ("op", "<u2"), ("flags", "<u2"), ("bytes", "<u4"),
    ("t_start_ns", "<u8"), ("t_end_ns", "<u8"),
])
assert HEADER_DTYPE.itemsize == 32 and RECORD_DTYPE.itemsize == 32


class Op(IntEnum):
    OPEN = 1; WRITE = 2; FSYNC = 3; CLOSE = 4; READ = 5; PREAD = 6; PWRITE = 7  # noqa: E702
    READV = 8; WRITEV = 9; FDATASYNC = 10; SYNCFS = 11; BARRIER = 12; LOCK = 13  # noqa: E702
    BATCH = 20; FLUSH = 21; FREQ = 30  # noqa: E702


class Flag(IntEnum):
    ERROR = 1; DIRECT = 2; CREAT = 4; DILATED = 8; BATCHED = 16  # noqa: E702


class Kind(IntEnum):
    OPS = 1; BATCHES = 2; DECISIONS = 3  # noqa: E702


def read(path: str | os.PathLike, kind: int | None = None) -> np.ndarray:
    """Return the records of a trace file as a structured array (RECORD_DTYPE)."""
    path = os.fspath(path)
    try:
        raw = np.fromfile(path, dtype=np.uint8)
    except FileNotFoundError:
        raise TraceError(f"trace file {path!r} does not exist") from None
    except OSError as exc:         # a directory, no permission, an I/O error
        raise TraceError(f"trace file {path!r} cannot be read: {exc.strerror or exc}") from None
    if raw.size < HEADER_DTYPE.itemsize:
        raise TraceError(f"trace file {path!r} is {raw.size} bytes, shorter than the 32-byte header")
    hdr = raw[:32].view(HEADER_DTYPE)[0]
    if hdr["magic"] != MAGIC:
        raise TraceError(f"{path!r} is not an abtlab trace (magic {bytes(hdr['magic'])!r})")
    if hdr["version"] != VERSION:
        raise TraceError(f"{path!r} has trace version {hdr['version']}; this abtlab reads {VERSION}")
    if hdr["record_size"] != RECORD_DTYPE.itemsize:
        raise TraceError(f"{path!r} has record size {hdr['record_size']}; expected 32")
    if kind is not None and hdr["kind"] != kind:
        raise TraceError(f"{path!r} holds kind {hdr['kind']}; expected {kind}")
    n = int(hdr["record_count"])
    body = raw[32:]
    if body.size != n * 32:
        raise TraceError(f"{path!r} is truncated or padded: header says {n} records "
                         f"({n * 32} bytes), file has {body.size} bytes after the header")
    return body.view(RECORD_DTYPE).copy()


def write(path: str | os.PathLike, records: np.ndarray, kind: int = Kind.OPS) -> None:
    """Write records (RECORD_DTYPE) as a trace file; used by tests and converters."""
    records = np.asarray(records, dtype=RECORD_DTYPE)
    hdr = np.zeros(1, HEADER_DTYPE)
    hdr[0] = (MAGIC, VERSION, 32, CLOCK_MONOTONIC, int(kind), records.size,
              time.clock_gettime_ns(time.CLOCK_MONOTONIC))
    with open(path, "wb") as f:
        f.write(hdr.tobytes())
        f.write(records.tobytes())
