"""The C programs' one convention (abtlab.machines.programs): results as `key: value`
lines, exit 2 with one stderr line naming a bad option or variable, mapped to
ConfigError by check_exit; the preload libraries refuse bad settings the same way."""
from __future__ import annotations

import os
import subprocess

import pytest

from abtlab.machines.programs import check_exit, parse_result
from abtlab.errors import ConfigError, RunError, UnavailableError

PROGRAMS = ["iozone/abt-iozone", "metarates/abt-metarates", "fsyncers/abt-fsyncers",
            "locks/abt-locks", "dio/abt-dio"]


def run(argv, **env):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


@pytest.mark.parametrize("prog", PROGRAMS)
@pytest.mark.parametrize("args,what", [(["--bogus"], "unknown option"),
                                       (["--trace"], "missing value"),
                                       (["--trace", "/t", "extra"], "unexpected argument")])
def test_bad_arguments_exit_2_naming_the_option(built_native, prog, args, what):
    p = run([built_native / prog, *args])
    assert p.returncode == 2 and p.stdout == ""
    name, opt = os.path.basename(prog), args[-1]
    assert p.stderr.startswith(f"{name}: {opt}: {what}; accepted: ")
    assert p.stderr.count("\n") == 1


@pytest.mark.parametrize("prog,args", [
    ("iozone/abt-iozone", ["--threads", "2", "--no-record"]),
    ("metarates/abt-metarates", ["--workers", "2", "--no-record"]),
    ("fsyncers/abt-fsyncers", ["--threads", "2", "--size", "4k"]),
    ("dio/abt-dio", ["--workload", "1", "--count", "4"])])
def test_results_are_key_value_lines(built_native, tmp_path, prog, args):
    p = run([built_native / prog, "--dir", tmp_path, *args])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    out = parse_result(p.stdout)
    assert len(out) == len(lines) and int(out["elapsed_ns"]) > 0


def test_locks_result_is_key_value_lines(built_native):
    p = run([built_native / "locks/abt-locks", "--lock", "mutex", "--threads", "2",
             "--work", "5", "--entries", "3"])
    assert p.returncode == 0, p.stderr
    out = parse_result(p.stdout)
    assert len(p.stdout.splitlines()) == len(out) == 5 and int(out.pop("elapsed_ns")) > 0
    assert out == {"lock": "mutex", "threads": "2", "work": "5", "entries": "3"}


def test_exit_2_is_a_config_error_naming_the_factor(built_native, tmp_path):
    argv = [built_native / "iozone/abt-iozone", "--dir", tmp_path, "--no-record",
            "--record-size", "3x"]
    p = run(argv)
    with pytest.raises(ConfigError) as exc:
        check_exit(argv, p.returncode, p.stderr, {"--record-size": "record"}, {"record": "3x"})
    assert exc.value.field == "record" and exc.value.given == "3x"
    assert exc.value.accepted.startswith("1 to 1073741824 bytes")


@pytest.mark.parametrize("lib,var,value", [
    ("delayjc/libdelayjc.so", "ABT_DELAYJC_POLICY", "sometimes"),
    ("trace/libabtrace.so", "ABT_TRACE_MAX_RECORDS", "lots")])
def test_a_refusing_library_is_a_config_error_naming_the_variable(built_native, lib, var,
                                                                  value):
    env = {"LD_PRELOAD": str(built_native / lib), var: value}
    if "delayjc" in lib:
        env.update(ABT_DELAYJC_WINDOW_US="1000", ABT_DELAYJC_MAX_RESETS="1",
                   ABT_DELAYJC_MAX_AGE_US="1000")
    argv = [built_native / "locks/abt-locks", "--threads", "1"]
    p = run(argv, **env)
    assert p.returncode == 2 and p.stdout == ""
    with pytest.raises(ConfigError) as exc:
        check_exit(argv, p.returncode, p.stderr)
    assert exc.value.field == var and "Refusing to run" in exc.value.accepted


def test_other_exits():
    check_exit(["x"], 0, "")
    with pytest.raises(UnavailableError, match="no O_DIRECT"):
        check_exit(["x"], 3, "x: --direct: no O_DIRECT\n")
    with pytest.raises(RunError, match="abt-x exited 1: boom"):
        check_exit(["/a/abt-x"], 1, "boom\n")
