"""LSD radix sort of non-negative 64-bit keys (numba), for the BPS overlap on large traces.

numpy's comparison sorts are O(n log n); trace timestamps are non-negative integers (ns)
or non-negative floats (s), whose bit patterns sort like unsigned integers, so a radix
sort with 16-bit digits needs at most four linear passes, and skips a pass whose digit
is the same for every key (the high bits of timestamps from one run usually are).
"""
from __future__ import annotations

import numpy as np

__all__ = ["sort_keys", "MIN_SIZE"]

MIN_SIZE = 1 << 20  # below this np.sort is as fast and needs no compile


def _kernel():
    # deferred: numba is heavy; `import abtlab` and `abtlab run` do without it
    from numba import njit

    @njit(cache=True, nogil=True)
    def radix_u64(src):
        n = src.size
        a = src.copy()
        b = np.empty_like(a)
        for shift in range(0, 64, 16):
            counts = np.zeros(65537, np.int64)
            for i in range(n):
                counts[((a[i] >> np.uint64(shift)) & np.uint64(0xFFFF)) + 1] += 1
            if counts.max() == n:  # every key has this digit: nothing to reorder
                continue
            for d in range(1, 65537):
                counts[d] += counts[d - 1]
            for i in range(n):
                d = (a[i] >> np.uint64(shift)) & np.uint64(0xFFFF)
                b[counts[d]] = a[i]
                counts[d] += 1
            a, b = b, a
        return a
    return radix_u64


_RADIX = None


def sort_keys(a: np.ndarray) -> np.ndarray:
    """Sorted copy of a 1-D array; radix sort for large non-negative int/float arrays."""
    global _RADIX
    a = np.asarray(a)
    kind = a.dtype.kind
    if a.size < MIN_SIZE or a.dtype.itemsize != 8 or kind not in "iuf":
        return np.sort(a)
    if kind == "i" and a.min() < 0:  # negatives do not sort by their bits
        return np.sort(a)
    if kind == "f" and (np.signbit(a).any() or np.isnan(a).any()):  # nor do -0.0, NaN
        return np.sort(a)
    try:
        if _RADIX is None:
            _RADIX = _kernel()
    except ImportError:
        return np.sort(a)
    return _RADIX(np.ascontiguousarray(a).view(np.uint64)).view(a.dtype)
