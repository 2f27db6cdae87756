"""Backend `bps`: one run of the seed-001 correlation study (abtlab.bps.study), so the
study is a sweep like any other: every finished run kept, `resume` after a stop, one real
run on the machine at a time (abtlab.system.runlock).

A point is one `case`: "size:BYTES" (request size), "concurrency:JOBS" or
"sieving:SPACING"; the options are the study's settings (abtlab.bps.study._config) and
`work`, the directory holding fio's files (reused across runs, removed by the study)."""
from __future__ import annotations

import os
import shutil

import numpy as np

from ..backends.base import Availability, Backend
from ..data.result import RunResult
from ..errors import ConfigError, RunError
from ..trace import Op
from . import metrics
from ..trace.recorder import record

__all__ = ["BpsBackend", "case", "parse_case", "CASE_KEYS", "one_run", "fio_available"]

KiB, MiB = 1024, 1024 * 1024
FIO_DATA_OPS = (Op.PREAD, Op.PWRITE)          # the psync engine's calls
# the study's set -> the parameter it varies
CASE_KEYS = {"size": "request_size", "concurrency": "jobs", "sieving": "spacing"}


def case(set_name: str, value: int) -> str:
    return f"{set_name}:{int(value)}"


def parse_case(text) -> tuple[str, dict]:
    """'size:4096' -> ('size', {'request_size': 4096}); ConfigError naming `case`."""
    name, _, value = str(text).partition(":")
    if name not in CASE_KEYS or not value.strip().isdigit():
        raise ConfigError("case", text, "size:BYTES | concurrency:JOBS | sieving:SPACING")
    return name, {CASE_KEYS[name]: int(value)}


def fio_available() -> tuple[bool, str]:
    if shutil.which("fio") is None:
        return False, "fio is not on PATH (make installs the Debian package)"
    return True, ""


def _make_file(path, nbytes):
    """Fill a file with non-zero bytes once; later runs reuse it."""
    if os.path.exists(path) and os.path.getsize(path) >= nbytes:
        return
    chunk = np.random.default_rng(0).integers(1, 255, MiB, dtype=np.uint8).tobytes()
    with open(path, "wb") as f:
        for off in range(0, nbytes, MiB):
            f.write(chunk[: min(MiB, nbytes - off)])
        f.flush()
        os.fsync(f.fileno())


def _fio_args(directory, set_name, p, cfg):
    """fio command line and required bytes of one run."""
    common = ["fio", "--output=/dev/null", "--disk_util=0", "--ioengine=psync", "--rw=read",
              "--group_reporting", f"--direct={int(cfg['direct'])}", "--name=bps"]
    total = cfg["total_bytes"]
    if set_name == "size":
        f = os.path.join(directory, "bps.size")
        _make_file(f, total)
        return common + [f"--filename={f}", f"--bs={p['request_size']}", f"--size={total}"], total
    if set_name == "concurrency":
        n = p["jobs"]
        per = total // n // cfg["job_bs"] * cfg["job_bs"]    # whole blocks: fio reads no partial one
        for i in range(n):
            _make_file(os.path.join(directory, f"bps.job.{i}"), per)
        return common + [f"--directory={directory}", "--filename_format=bps.job.$jobnum",
                         f"--numjobs={n}", f"--bs={cfg['job_bs']}", f"--size={per}"], per * n
    # the sieve reads whole buffers (fio reads whole blocks): the extent rounds up to them
    buf = cfg["sieve_buffer"]
    extent = -(-cfg["regions"] * (cfg["region_size"] + p["spacing"]) // buf) * buf
    f = os.path.join(directory, f"bps.sieve.{p['spacing']}")
    _make_file(f, extent)
    return (common + [f"--filename={f}", f"--bs={cfg['sieve_buffer']}", f"--size={extent}"],
            cfg["regions"] * cfg["region_size"])


def one_run(directory, set_name, p, cfg):
    """One fio run of a set under libabtrace -> its metrics (abtlab.bps.metrics)."""
    cmd, required = _fio_args(directory, set_name, p, cfg)
    rec = record(cmd)
    if rec.returncode != 0:
        raise RunError(f"fio exited with {rec.returncode}: {' '.join(cmd)}")
    data = rec.records[np.isin(rec.records["op"], FIO_DATA_OPS)]
    m = metrics(data, block_size=cfg["block_size"], required_bytes=required)
    m.update(runtime=rec.wall_s, required_bytes=required, dropped=sum(rec.dropped.values()))
    return m


class BpsBackend(Backend):
    name = "bps"
    description = "one fio run of the BPS correlation study under libabtrace (He et al., IPDPS Workshops 2013)"
    factors = {"case": "size:4096"}
    options = {"work": "directory of fio's files (reused across runs)",
               "total_bytes": "bytes read by a size or concurrency run",
               "job_bs": "request size of the concurrency runs",
               "region_size": "bytes of one region the sieving runs require",
               "regions": "regions of a sieving run", "sieve_buffer": "bytes of one sieve read",
               "direct": "O_DIRECT reads", "block_size": "bytes of one BPS block"}
    place_options = ("work",)

    def available(self) -> Availability:
        return Availability(*fio_available())

    def validate_point(self, point: dict) -> dict:
        parse_case(point["case"])
        return point

    def validate_options(self, options: dict) -> dict:
        if not options.get("work"):
            raise ConfigError("work", options.get("work"), "the directory of fio's files")
        return options

    def run_point(self, point: dict, ctx) -> RunResult:
        name, params = parse_case(point["case"])
        cfg = {k: v for k, v in ctx.options.items() if k != "work"}
        m = one_run(ctx.options["work"], name, params, cfg)
        return RunResult(scalars={k: float(v) for k, v in m.items()},
                         attrs={"freq_mode": "real"})
