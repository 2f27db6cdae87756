"""IOzone throughput-mode initial write (Chang et al., MASCOTS 2014, Figs. 4-5) on a real scratch ext4."""
from __future__ import annotations

from .. import policies
from ..errors import ConfigError
from .base import ProgramBackend
from ..machines.host import (SCRATCH_OPTIONS, Prepared, check_data_fits, check_scratch_options,
                     real_available)
from ..machines.programs import program
from ..machines.spec import parse_machine

__all__ = ["IozoneBackend", "check_file_sizes"]


def check_file_sizes(point) -> None:
    """IOzone's N files of S bytes in R-byte records (also for the real IOzone and fio):
    R <= S, S a multiple of R, and all the files fit the largest scratch image."""
    if point["record_size"] > point["file_size"]:
        raise ConfigError("record_size", point["record_size"],
                          f"a record size <= file size ({point['file_size']})")
    if point["file_size"] % point["record_size"]:
        raise ConfigError("file_size", point["file_size"],
                          f"a multiple of the record size ({point['record_size']})")
    check_data_fits(point["threads"] * point["file_size"], "file_size", point["file_size"],
                    f"in all for {point['threads']} threads")


def start_of(point: dict, options: dict) -> str:
    """The start option, else IOzone's own polling start on the lock-step clock (the
    paper's machine, where it is traced from its go) and the barrier elsewhere (the start
    abtlab's results on the host and the other guest clocks were measured with)."""
    if options.get("start"):
        return str(options["start"])
    return "poll" if parse_machine(str(point.get("machine", "host"))).lockstep else "barrier"


class IozoneBackend(ProgramBackend):
    name = "iozone"
    description = ("N threads each create a file, start together (a barrier, or IOzone's "
                   "polled flag), write S bytes in R-byte records, fsync and close "
                   "(backends/iozone/abt-iozone)")
    factors = {"policy": "ext4", "freq_ghz": None, "threads": 16, "file_size": 128 * 1024,
               "record_size": 32 * 1024, "device": "none", "machine": "host"}
    options = {"fsync": "fsync each file after its writes, default True (both throughputs are "
                        "recorded: the write op's, IOzone's default report, and with fsync, -e)",
               "start": "barrier (a pthread barrier) | poll (IOzone's start: each child polls "
                        "a flag with select() and a 1 us timeout until a parent sets it, so "
                        "the release is timer-paced; traced from the go in the guest). "
                        "Default: poll on the paper's machine (guest:clock=lockstep), "
                        "barrier elsewhere",
               "direct": "O_DIRECT writes", **SCRATCH_OPTIONS}
    STARTS = ("barrier", "poll")

    def available(self):
        return real_available("abt-iozone")

    def validate_options(self, options):
        if str(options.get("start", "barrier")) not in self.STARTS:  # default: start_of()
            raise ConfigError("start", options["start"], " | ".join(self.STARTS))
        return check_scratch_options(options)

    def validate_point(self, point):
        policies.parse(point["policy"])
        check_file_sizes(point)
        return point

    def prepare(self, point, ctx) -> Prepared:
        """The run without its machine (ProgramBackend sends it to the point's)."""
        exe = program("abt-iozone")
        fsync = ctx.options.get("fsync", True)
        start = start_of(point, ctx.options)

        def argv(data_dir, dilate, tpath):
            a = [exe, "--threads", point["threads"], "--file-size", point["file_size"],
                 "--record-size", point["record_size"], "--dir", data_dir,
                 "--dilate", f"{dilate:.6f}", "--trace", tpath]
            a.append("--fsync" if fsync else "--no-fsync")
            a += ["--start", start]
            if ctx.options.get("direct"):
                a.append("--direct")
            return a
        return Prepared(argv, point["threads"] * point["file_size"], "iozone",
                        {"file_size": point["file_size"], "fsync": fsync}, {"start": start},
                        trace_from_go=start == "poll")
