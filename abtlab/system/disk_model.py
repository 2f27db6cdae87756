"""The disk model of backends/include/abt_disk.h, driven from Python on a clock of its own.

`DiskModel("hdd7200")` loads backends/disk/libabtdisk.so (ctypes) and serves requests
at the times it is given (ns): `write`, `read`, `flush` return completion times. The
same C serves abt-slowdisk's requests on the host, so a prediction made here is what
the FUSE disk charges when requests arrive at these times. Used by the model's tests
(tests/disk) and to predict the fio rows of docs/device.md.
"""
from __future__ import annotations

import ctypes

from .. import about
from ..errors import ConfigError, UnavailableError

__all__ = ["DiskModel", "library", "SECTOR"]

SECTOR = 512
READ, WRITE, FLUSH = 0, 1, 2
_LIB = None


def library() -> ctypes.CDLL:
    """libabtdisk.so of this checkout; UnavailableError (with the fix) if not built."""
    global _LIB
    if _LIB is None:
        path = about.NATIVE / "disk" / "libabtdisk.so"
        if not path.exists():
            raise UnavailableError(f"{path} is not built: `make -C {path.parents[1]}`")
        lib = ctypes.CDLL(str(path))
        u64, vp = ctypes.c_ulonglong, ctypes.c_void_p
        lib.abtd_open.restype, lib.abtd_open.argtypes = vp, [ctypes.c_char_p, u64, ctypes.c_longlong]
        lib.abtd_close.argtypes = [vp]
        lib.abtd_serve.restype = u64
        lib.abtd_serve.argtypes = [vp, ctypes.c_int, u64, u64, ctypes.c_int, u64]
        lib.abtd_seek_ns.restype, lib.abtd_seek_ns.argtypes = u64, [vp, u64]
        lib.abtd_get.restype, lib.abtd_get.argtypes = u64, [vp, ctypes.c_char_p]
        _LIB = lib
    return _LIB


class DiskModel:
    """One modelled drive: a profile of abt_disk.h ('hdd7200', 'hdd7200-nocache',
    'ssd-sata', 'fixed'), optionally with its fixed cost (ns) or cache (bytes) replaced."""

    def __init__(self, profile: str, fixed_ns: int = 0, cache_bytes: int | None = None):
        self._lib = library()
        self.profile = profile
        self._d = self._lib.abtd_open(profile.encode(), int(fixed_ns),
                                      -1 if cache_bytes is None else int(cache_bytes))
        if not self._d:
            raise ConfigError("device", profile, "a profile of abt_disk.h: hdd7200, "
                              "hdd7200-nocache, ssd-sata, fixed (with fixed_ns > 0)")

    def __del__(self):
        if getattr(self, "_d", None):
            self._lib.abtd_close(self._d)
            self._d = None

    def __getitem__(self, key: str) -> int:
        v = self._lib.abtd_get(self._d, key.encode())
        if v == 2**64 - 1:
            raise KeyError(key)
        return v

    def seek_ns(self, tracks: int) -> int:
        return self._lib.abtd_seek_ns(self._d, tracks)

    def write(self, offset: int, nbytes: int, t: int, fua: bool = False) -> int:
        """Completion time (ns) of a write of nbytes at byte offset, taken at time t."""
        return self._lib.abtd_serve(self._d, WRITE, offset // SECTOR,
                                    -(-nbytes // SECTOR), int(fua), t)

    def read(self, offset: int, nbytes: int, t: int) -> int:
        return self._lib.abtd_serve(self._d, READ, offset // SECTOR, -(-nbytes // SECTOR), 0, t)

    def flush(self, t: int) -> int:
        return self._lib.abtd_serve(self._d, FLUSH, 0, 0, 0, t)
