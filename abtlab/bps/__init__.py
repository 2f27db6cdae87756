"""BPS (blocks per second) and the I/O metrics it is compared with (He, Sun and Yin, "BPS: A
Performance Metric of I/O System", IEEE IPDPS Workshops 2013).

BPS = B / T: B blocks required by the application, T the overlapped I/O time,
i.e. the length of the union of all access intervals, idle gaps excluded
(He et al., IPDPS Workshops 2013, Figs. 2 and 3). IOPS, bandwidth and ARPT are the conventional
metrics of its Section II. Everything here is vectorised numpy: a trace of ten
million records takes well under a second (benchmarks/bps.py).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import ConfigError
from ..trace import RECORD_DTYPE, Flag, Op
from .radix import sort_keys

__all__ = ["overlap_time", "overlap_time_fig3", "metrics", "DATA_OPS", "METRICS", "EXPECTED_SIGN"]

# read/write-type calls: the accesses that move data
DATA_OPS = (Op.READ, Op.WRITE, Op.PREAD, Op.PWRITE, Op.READV, Op.WRITEV)

# metric -> (units, long name); the names are the variables of abtlab.bps.study datasets
METRICS = {
    "bps": ("blocks/s", "blocks required / overlapped I/O time (He et al., IPDPS Workshops 2013, eq. 1)"),
    "iops": ("ops/s", "I/O calls / observed period"),
    "bandwidth": ("bytes/s", "bytes moved / observed period"),
    "arpt": ("s", "average response time per request"),
}
# He et al. (IPDPS Workshops 2013) Table 1: expected sign of the CC of each metric with run time
EXPECTED_SIGN = {"iops": -1, "bandwidth": -1, "arpt": +1, "bps": -1}
_DATA_LUT = np.zeros(1 << 16, bool)  # op (uint16) -> is a data call; a lookup beats np.isin
_DATA_LUT[list(DATA_OPS)] = True


def _as_interval_arrays(starts, ends):
    s, e = np.asarray(starts), np.asarray(ends)
    if s.ndim != 1 or s.shape != e.shape:
        raise ConfigError("starts/ends", f"shapes {s.shape} and {e.shape}",
                          "two 1-D arrays of the same length")
    for name, a in (("starts", s), ("ends", e)):
        if a.dtype.kind not in "iuf":
            raise ConfigError(name, str(a.dtype), "a numeric array")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ConfigError(name, "non-finite values", "finite numbers")
    if s.dtype.kind == "u" or e.dtype.kind == "u":  # differences must not wrap around
        s, e = s.astype(np.int64), e.astype(np.int64)
    if (e < s).any():
        i = int(np.flatnonzero(e < s)[0])
        raise ConfigError("ends", f"ends[{i}]={e[i]} < starts[{i}]={s[i]}", "ends >= starts elementwise")
    return s, e


def _sorted(a):
    """Sort, cheaply when a is already made of a few ascending runs (per-thread traces)."""
    descents = np.count_nonzero(a[1:] < a[:-1])
    if descents == 0:
        return a
    few_runs = descents < a.size // 64
    # numpy sorts floats with SIMD (x86-simd-sort), faster than the radix sort, which
    # needs all four passes on floats: their exponent bits vary (benchmarks/bps.py);
    # in a few ascending runs, non-negative floats go to timsort as their bits, which
    # sort as they do (10M records in 8 runs: ~0.7x the time of the SIMD sort)
    if a.dtype.kind == "f":
        if few_runs and a.dtype.itemsize == 8 and not np.signbit(a).any():
            return np.sort(a.view(np.int64), kind="stable").view(a.dtype)
        return np.sort(a)
    # timsort merges k presorted runs in O(n log k); on random order a radix sort wins
    if few_runs:
        return np.sort(a, kind="stable")
    return sort_keys(a)


def overlap_time(starts, ends):
    """Length of the union of the intervals [starts[i], ends[i]] (same units as the input).

    Equivalent to He et al. (IPDPS Workshops 2013) Fig. 3 (sort by start, merge overlapping records, sum
    the merged lengths) but without a loop. Sorted by start, a running maximum of
    the ends closes each merged group. Otherwise starts and ends are sorted each
    on its own: coverage drops to zero exactly between ends[i] and starts[i+1]
    where ends[i] < starts[i+1] (the i+1 earliest intervals have all ended and
    none of the rest has begun), so the union is the span minus those gaps.
    """
    s, e = _as_interval_arrays(starts, ends)
    if s.size == 0:
        return s.dtype.type(0)
    if np.count_nonzero(s[1:] < s[:-1]) == 0:
        e = np.maximum.accumulate(e)
    else:
        s, e = _sorted(s), _sorted(e)
    gaps = s[1:] - e[:-1]
    return (e[-1] - s[0]) - gaps[gaps > 0].sum(dtype=gaps.dtype)


def overlap_time_fig3(starts, ends):
    """He et al. (IPDPS Workshops 2013) Fig. 3 record by record in plain Python: sort by start, merge overlapping
    records, add up the merged lengths. The reference `overlap_time` is checked and timed
    against. (The printed pseudo-code assigns T where it means to add to it; this adds.)"""
    recs = sorted(zip(starts, ends))
    total, (cs, ce) = 0, recs[0]
    for s, e in recs[1:]:
        if ce < s:
            total += ce - cs
            cs, ce = s, e
        elif e > ce:
            ce = e
    return total + ce - cs


def _columns(trace):
    """(t_start_ns, t_end_ns, bytes) of the data calls in a record array or a dict of arrays."""
    if isinstance(trace, np.ndarray) and trace.dtype.names:
        missing = {"op", "bytes", "t_start_ns", "t_end_ns", "flags"} - set(trace.dtype.names)
        if missing:
            raise ConfigError("trace", f"fields missing: {sorted(missing)}",
                              f"an array of abtlab.trace.RECORD_DTYPE {RECORD_DTYPE.names}")
        data = _DATA_LUT[trace["op"]]
        every = bool(data.all())  # the common case: skip a copy of every column

        def col(name):
            return trace[name] if every else trace[name][data]
        nbytes = col("bytes").astype(np.int64)
        failed = (col("flags") & Flag.ERROR) != 0
        if failed.any():  # a failed call carries errno in bytes: an access without data
            nbytes[failed] = 0
        return col("t_start_ns"), col("t_end_ns"), nbytes
    if isinstance(trace, Mapping):
        need = ("t_start_ns", "t_end_ns", "bytes")
        if any(k not in trace for k in need):
            raise ConfigError("trace", f"keys {sorted(trace)}", f"a mapping with keys {need}")
        return (np.asarray(trace["t_start_ns"]), np.asarray(trace["t_end_ns"]),
                np.asarray(trace["bytes"], dtype=np.int64))
    raise ConfigError("trace", type(trace).__name__,
                      "a RECORD_DTYPE array or a mapping of t_start_ns/t_end_ns/bytes arrays")


def metrics(trace, block_size: int = 512, required_bytes: int | None = None) -> dict:
    """BPS, IOPS, bandwidth and ARPT of the data accesses in a trace, with their inputs.

    trace: RECORD_DTYPE array (read/write-type ops are counted, the rest ignored)
    or a mapping of equal-length arrays t_start_ns, t_end_ns, bytes (all counted).
    required_bytes: what the application asked for when the I/O stack moved more
    (data sieving reads the holes too); BPS counts it, bandwidth counts what was
    moved. Defaults to the bytes in the trace.
    IOPS and bandwidth are per observed period (first start to last end); BPS is per
    overlapped I/O time, so idle gaps count against the former and not the latter.
    """
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ConfigError("block_size", block_size, "a positive integer number of bytes")
    if required_bytes is not None and (not isinstance(required_bytes, (int, np.integer))
                                       or required_bytes < 0):
        raise ConfigError("required_bytes", required_bytes, "None or a non-negative integer")
    start, end, nbytes = _columns(trace)
    start, end = _as_interval_arrays(start, end)
    ops = int(start.size)
    moved = int(nbytes.sum())
    blocks = (moved if required_bytes is None else int(required_bytes)) / block_size
    if ops == 0:
        overlap_s = elapsed_s = arpt = 0.0
    else:
        overlap_s = float(overlap_time(start, end)) / 1e9
        elapsed_s = float(end.max() - start.min()) / 1e9
        arpt = float((end - start).mean()) / 1e9
    rate = (lambda x, t: x / t if t > 0 else float("nan"))
    return {"bps": rate(blocks, overlap_s), "iops": rate(ops, elapsed_s),
            "bandwidth": rate(moved, elapsed_s), "arpt": arpt if ops else float("nan"),
            "blocks": blocks, "ops": ops, "bytes": moved, "overlap_s": overlap_s,
            "elapsed_s": elapsed_s, "block_size": int(block_size)}
