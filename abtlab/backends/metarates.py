"""Metarates file-creation-rate test (Chang et al., MASCOTS 2014, Fig. 6) on a real scratch ext4."""
from __future__ import annotations

from .. import policies
from ..errors import ConfigError
from ..factors.levels import parse_size
from .base import ProgramBackend
from ..machines.host import SCRATCH_OPTIONS, Prepared, check_scratch_options, real_available
from ..machines.programs import program

__all__ = ["MetaratesBackend", "write_bytes"]

MAX_WRITE_BYTES = 64 << 20   # abt-metarates' own limit


def write_bytes(value) -> int:
    """The write_bytes option as an int; ConfigError naming it."""
    accepted = f"0, or a size up to {MAX_WRITE_BYTES} bytes such as 4096 or 4k"
    if isinstance(value, bool):
        raise ConfigError("write_bytes", value, accepted)
    if str(value).strip() == "0":
        return 0
    try:
        n = parse_size(value, "write_bytes")
    except ConfigError:
        raise ConfigError("write_bytes", value, accepted) from None
    if n > MAX_WRITE_BYTES:
        raise ConfigError("write_bytes", value, accepted)
    return n


class MetaratesBackend(ProgramBackend):
    name = "metarates"
    description = ("N workers each create F files with open(O_CREAT)/fsync/close "
                   "(backends/metarates/abt-metarates)")
    factors = {"policy": "ext4", "freq_ghz": None, "threads": 4, "files": 4, "device": "none", "machine": "host"}
    options = {"processes": "workers as processes instead of threads",
               "write_bytes": "bytes written into each file before its fsync (mdtest -w), "
                              f"0 to {MAX_WRITE_BYTES}; default 0, the paper's test",
               **SCRATCH_OPTIONS}

    def available(self):
        return real_available("abt-metarates")

    def validate_options(self, options):
        if "write_bytes" in options:
            options = {**options, "write_bytes": write_bytes(options["write_bytes"])}
        return check_scratch_options(options)

    def validate_point(self, point):
        policies.parse(point["policy"])
        return point

    def prepare(self, point, ctx) -> Prepared:
        """The run without its machine (ProgramBackend sends it to the point's)."""
        exe = program("abt-metarates")

        def argv(data_dir, dilate, tpath):
            a = [exe, "--workers", point["threads"], "--files", point["files"], "--dir", data_dir,
                 "--dilate", f"{dilate:.6f}", "--trace", tpath]
            if ctx.options.get("processes"):
                a.append("--processes")
            if nbytes:
                a += ["--write-bytes", nbytes]
            return a
        nbytes = int(ctx.options.get("write_bytes") or 0)
        per_file = max(4096, -(-nbytes // 4096) * 4096)
        return Prepared(argv, point["threads"] * point["files"] * per_file, "metarates")
