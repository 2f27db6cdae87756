"""Read other tools' I/O traces into abtlab records (abtlab.trace.RECORD_DTYPE).

- abtlab traces: one file, or a directory of per-process `abtrace.<pid>.trace`
  files written by libabtrace (merged, time-ordered, dropped counts reported);
- fio per-I/O latency logs (`write_lat_log` with `log_offset=1`);
- Darshan DXT logs, through the `darshan` package where it is installed.

Every record gets t_start_ns/t_end_ns on one axis per file, so abtlab.bps can
take the union of the intervals. A file that is not what it claims raises
abtlab.errors.TraceError naming the file and what is wrong.
"""
from __future__ import annotations

import glob
import os
import re

import numpy as np

from .. import trace
from ..errors import ConfigError, TraceError, UnavailableError
from . import RECORD_DTYPE, Op

__all__ = ["read", "read_abtlab", "read_trace_dir", "dropped_counts", "read_fio_log",
           "read_darshan_dxt", "darshan_available"]

_DROPPED = re.compile(r"^tid=(\d+) recorded=(\d+) dropped=(\d+)$")


def read(path, fmt: str = "auto", **kw) -> np.ndarray:
    """Read a trace of any supported format; fmt: auto | abtlab | fio | darshan."""
    formats = {"abtlab": read_abtlab, "fio": read_fio_log, "darshan": read_darshan_dxt}
    if fmt == "auto":
        first = path[0] if isinstance(path, (list, tuple)) and path else path
        fmt = _guess_format(_expand(first)[0])
    if fmt not in formats:
        raise ConfigError("fmt", fmt, "auto | " + " | ".join(formats))
    return formats[fmt](path, **kw)


def _guess_format(path: str) -> str:
    if os.path.isdir(path) or path.endswith(".trace"):
        return "abtlab"
    if path.endswith(".darshan"):
        return "darshan"
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise TraceError(f"cannot read {path!r}: {exc.strerror}") from None
    return "abtlab" if head == trace.MAGIC else "fio"


# ---- abtlab's own traces

def read_abtlab(path) -> np.ndarray:
    """A trace file, or a directory of libabtrace's per-process files merged by start time."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return trace.read(path, kind=trace.Kind.OPS)
    return read_trace_dir(path)


def read_trace_dir(directory) -> np.ndarray:
    """Merge `abtrace.<pid>.trace` files of a directory into one array sorted by t_start_ns."""
    files = sorted(glob.glob(os.path.join(os.fspath(directory), "abtrace.*.trace")))
    if not files:
        raise TraceError(f"{os.fspath(directory)!r} holds no abtrace.<pid>.trace files")
    recs = np.concatenate([trace.read(f, kind=trace.Kind.OPS) for f in files])
    return recs[np.argsort(recs["t_start_ns"], kind="stable")]


def dropped_counts(directory) -> dict[tuple[int, int], int]:
    """{(pid, tid): calls not recorded because that thread's buffer was full}."""
    out = {}
    for f in sorted(glob.glob(os.path.join(os.fspath(directory), "abtrace.*.dropped"))):
        pid = int(os.path.basename(f).split(".")[1])
        with open(f) as fh:
            for n, line in enumerate(fh, 1):
                m = _DROPPED.match(line.strip())
                if not m:
                    raise TraceError(f"{f!r} line {n}: expected 'tid=T recorded=N dropped=D', "
                                     f"got {line.strip()!r}")
                out[(pid, int(m[1]))] = int(m[3])
    return out


# ---- fio latency logs

_FIO_DIR = {0: Op.READ, 1: Op.WRITE}
_LAT_SCALE = {"ns": 1, "us": 1000}


def read_fio_log(path, lat_unit: str = "auto", tid: int | None = None) -> np.ndarray:
    """Records from a fio per-I/O latency log (`write_lat_log=P`, `log_offset=1`).

    Columns: time (ms since the job started, at completion), latency, direction
    (0 read, 1 write, 2 trim), block size, offset[, priority[, issue time ns]].
    fio >= 3 logs latency in ns, fio 2 in us. lat_unit="auto" reads ns unless
    told otherwise (fio 3 has been current since 2017) and refuses the log when
    it cannot be ns or us consistently. Start = completion - latency; the completion time is only known to the
    millisecond, so intervals carry up to 1 ms of error unless the log has the
    issue-time column (`log_issue_time=1`, fio >= 3.37). A glob or list of paths
    (one log per job) is merged with tid = job index. Logs averaged with
    `log_avg_msec` are not per-I/O and are refused.
    """
    if lat_unit not in ("auto", *_LAT_SCALE):
        raise ConfigError("lat_unit", lat_unit, "auto | ns | us")
    paths = _expand(path)
    parts = [_read_one_fio(p, lat_unit, i if tid is None else tid) for i, p in enumerate(paths)]
    recs = np.concatenate(parts)
    return recs[np.argsort(recs["t_start_ns"], kind="stable")]


def _expand(path) -> list[str]:
    if isinstance(path, (list, tuple)):
        return [os.fspath(p) for p in path]
    p = os.fspath(path)
    if any(c in p for c in "*?["):
        found = sorted(glob.glob(p))
        if not found:
            raise TraceError(f"no fio log matches {p!r}")
        return found
    return [p]


def _fio_columns(path: str) -> np.ndarray:
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise TraceError(f"cannot read fio log {path!r}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise TraceError(f"{path!r} is not a fio log: not text") from None
    rows = [ln.split(",") for ln in lines if ln.strip()]
    if not rows:
        raise TraceError(f"fio log {path!r} is empty")
    width = len(rows[0])
    for n, r in enumerate(rows, 1):
        if len(r) != width or width < 5:
            raise TraceError(f"fio log {path!r} line {n}: {len(r)} fields, expected {max(width, 5)} "
                             "(time, latency, direction, block size, offset; truncated file or "
                             "log written without log_offset=1?)")
    try:
        return np.array(rows, dtype=np.float64)
    except ValueError:
        raise TraceError(f"fio log {path!r} has a non-numeric field") from None


def _read_one_fio(path: str, lat_unit: str, tid: int) -> np.ndarray:
    cols = _fio_columns(path)
    t_ms, lat, ddir, bs = cols[:, 0], cols[:, 1], cols[:, 2].astype(int), cols[:, 3]
    if (lat < 0).any() or (t_ms < 0).any() or (bs < 0).any():
        raise TraceError(f"fio log {path!r} has negative times, latencies or sizes")
    bad = ~np.isin(ddir, (0, 1, 2))
    if bad.any():
        raise TraceError(f"fio log {path!r} line {int(np.flatnonzero(bad)[0]) + 1}: direction "
                         f"{ddir[bad][0]}, expected 0 (read), 1 (write) or 2 (trim)")
    if np.count_nonzero(bs == 0) == bs.size and bs.size > 1:
        raise TraceError(f"fio log {path!r} has block size 0 everywhere: an averaged log "
                         "(log_avg_msec), not a per-I/O log")
    if lat_unit == "auto":
        lat_unit = "ns"
    end_ns = np.rint(t_ms * 1e6).astype(np.int64)
    lat_ns = np.rint(lat * _LAT_SCALE[lat_unit]).astype(np.int64)
    if cols.shape[1] >= 7:  # log_issue_time: exact issue time in ns
        start_ns = cols[:, 6].astype(np.int64)
        end_ns = start_ns + lat_ns
    else:
        start_ns = end_ns - lat_ns
    if start_ns.min() < -1_000_000:  # beyond the 1 ms rounding of the completion time
        i = int(np.argmin(start_ns))
        raise TraceError(f"fio log {path!r} line {i + 1}: latency {lat[i]:g} {lat_unit} exceeds the "
                         f"completion time {t_ms[i]:g} ms; wrong lat_unit (fio 2 logs us, fio 3 ns)?")
    keep = ddir != 2
    out = np.zeros(int(keep.sum()), RECORD_DTYPE)
    out["tid"] = tid
    out["op"] = np.where(ddir[keep] == 0, Op.READ, Op.WRITE)
    out["bytes"] = bs[keep].astype(np.uint32)
    out["t_start_ns"] = np.maximum(start_ns[keep], 0)  # within the 1 ms rounding
    out["t_end_ns"] = np.maximum(end_ns[keep], out["t_start_ns"])
    return out


# ---- Darshan DXT

def darshan_available() -> tuple[bool, str]:
    try:
        import darshan  # noqa: F401
    except Exception as exc:  # an installed but broken darshan is as absent as none
        return False, f"the darshan package is not importable ({exc})"
    return True, ""


def read_darshan_dxt(path, module: str = "DXT_POSIX") -> np.ndarray:
    """Records from the DXT segments of a Darshan log (times in s since the job start)."""
    ok, why = darshan_available()
    if not ok:
        raise UnavailableError(f"cannot read Darshan log {os.fspath(path)!r}: {why}")
    if module not in ("DXT_POSIX", "DXT_MPIIO"):
        raise ConfigError("module", module, "DXT_POSIX | DXT_MPIIO")
    # deferred: darshan is optional or only for this
    import darshan
    try:
        report = darshan.DarshanReport(os.fspath(path), read_all=False)
        if module not in report.modules:
            raise TraceError(f"{os.fspath(path)!r} has no {module} records (run with DXT enabled)")
        report.mod_read_all_dxt_records(module)
        dxt = report.records[module].to_df()
    except TraceError:
        raise
    except Exception as exc:
        raise TraceError(f"{os.fspath(path)!r} is not a readable Darshan log: {exc}") from None
    return dxt_to_records(dxt)


def dxt_to_records(dxt) -> np.ndarray:
    """Convert pydarshan's DXT `to_df()` list (rank, read_segments, write_segments) to records."""
    parts = []
    for rec in dxt:
        for key, op in (("read_segments", Op.READ), ("write_segments", Op.WRITE)):
            seg = rec[key]
            if len(seg) == 0:
                continue
            r = np.zeros(len(seg), RECORD_DTYPE)
            r["pid"] = int(rec["rank"])
            r["op"] = op
            r["bytes"] = np.asarray(seg["length"], dtype=np.uint32)
            r["t_start_ns"] = np.rint(np.asarray(seg["start_time"], float) * 1e9).astype(np.uint64)
            r["t_end_ns"] = np.rint(np.asarray(seg["end_time"], float) * 1e9).astype(np.uint64)
            parts.append(r)
    if not parts:
        return np.zeros(0, RECORD_DTYPE)
    recs = np.concatenate(parts)
    return recs[np.argsort(recs["t_start_ns"], kind="stable")]
