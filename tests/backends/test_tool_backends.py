"""The iozone-tool, mdtest and fio backends: options, command lines, and real runs
(skipped where the tool is not installed)."""
import os
import shutil

import pytest

import abtlab
from abtlab import backends
from abtlab.backends.fio import fio_argv
from abtlab.backends.iozone_tool import iozone_argv
from abtlab.backends.mdtest import forward_flags, mdtest_argv
from abtlab.errors import ConfigError

POINT = {"policy": "ext4", "freq_ghz": None, "threads": 4, "file_size": 128 * 1024,
         "record_size": 32 * 1024, "device": "none", "files": 16}


TOOLS = [("iozone-tool", "ABTLAB_IOZONE"), ("mdtest", "ABTLAB_MDTEST"), ("fio", "ABTLAB_FIO")]


@pytest.mark.parametrize("name, env", TOOLS)
def test_registered_and_not_available_without_root(name, env, monkeypatch):
    be = backends.get(name)
    assert be.name == name and name in backends.names()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    av = be.available()
    assert not av and "needs root" in av.reason


@pytest.mark.root
@pytest.mark.parametrize("name, env", TOOLS)
def test_available_names_the_executable_or_what_is_missing(name, env, monkeypatch, tmp_path):
    """The reason is the executable's path when the tool is found ($env here), else what
    was not found and how to get it."""
    be = backends.get(name)
    monkeypatch.setenv(env, str(tmp_path / "missing"))
    av = be.available()
    assert not av and env in av.reason and str(tmp_path / "missing") in av.reason
    exe = tmp_path / name
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv(env, str(exe))
    av = be.available()
    assert av and av.reason == str(exe)


@pytest.mark.parametrize("name, option, value", [
    ("iozone-tool", "fsync", "maybe"), ("iozone-tool", "stonewall", "off"),
    ("iozone-tool", "threads", 2), ("iozone-tool", "image_mb", "huge"),
    ("iozone-tool", "exe", "/nonexistent/iozone"),
    ("mdtest", "write_bytes", "-1"), ("mdtest", "write_bytes", "1g"),
    ("mdtest", "journal_mb", "2"), ("fio", "job", "/nonexistent.fio"),
    ("fio", "block_size", "3000")])
def test_bad_option_names_the_option(name, option, value):
    with pytest.raises(ConfigError) as err:
        backends.get(name).validate_options({option: value})
    assert option in str(err.value)


@pytest.mark.parametrize("name, field, point", [
    ("iozone-tool", "file_size", {**POINT, "file_size": 100 * 1000}),
    ("iozone-tool", "file_size", {**POINT, "file_size": 96 * 1024, "record_size": 64 * 1024}),
    ("iozone-tool", "policy", {**POINT, "policy": "kdelayjc:window=2ms,max_resets=8"}),
    ("fio", "file_size", {**POINT, "record_size": 96 * 1024}),
    ("fio", "file_size", {**POINT, "threads": 4096, "file_size": 64 << 20, "record_size": 1 << 20}),
    ("mdtest", "policy", {**POINT, "policy": "ext5"})])
def test_bad_point_names_the_field(name, field, point):
    with pytest.raises(ConfigError) as err:
        backends.get(name).validate_point(point)
    assert field in str(err.value)


def test_mdtest_default_writes_4096_bytes_and_checks_mpirun(monkeypatch):
    assert backends.get("mdtest").validate_options({})["write_bytes"] == 4096
    assert backends.get("mdtest").validate_options({"write_bytes": "0"})["write_bytes"] == 0
    assert backends.get("mdtest").validate_options({})["unique_dirs"] == 1
    assert backends.get("mdtest").validate_options({"unique_dirs": "0"})["unique_dirs"] == 0
    with pytest.raises(ConfigError, match="unique_dirs"):
        backends.get("mdtest").validate_options({"unique_dirs": "maybe"})
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(ConfigError, match="threads"):
        backends.get("mdtest").validate_point(dict(POINT))
    assert backends.get("mdtest").validate_point({**POINT, "threads": 1})


def test_emulated_frequency_is_refused_before_any_set_up(tmp_path):
    from abtlab.backends.base import RunContext
    from abtlab.machines.dispatch import run_tool
    from abtlab.machines.tool_runner import ToolJob
    ctx = RunContext(workdir=tmp_path, freq_mode="emulated", f_ref_ghz=3.3)
    job = ToolJob("true", "ABTLAB_TRUE", lambda exe, d: [exe], 0, (), ())
    with pytest.raises(ConfigError, match="freq"):
        run_tool(job, {**POINT, "freq_ghz": 1.6}, ctx)
    assert not list(tmp_path.iterdir())


def test_command_lines():
    # IOzone's default report, as the paper's: no -e (each child fsyncs after its clock stops)
    # IOzone's own defaults: forked children, stonewalling on, the fsync untimed
    assert iozone_argv("iozone", 2, 128 * 1024, 32 * 1024, ".") == [
        "iozone", "-i", "0", "-t", 2, "-s", "128k", "-r", "32k", "-+n", "-C",
        "-F", "./iozone.0", "./iozone.1"]
    assert iozone_argv("iozone", 1, 4096, 4096, ".", fsync=True, stonewall=False,
                       use_threads=True)[9:13] == ["-e", "-+n", "-x", "-T"]
    from abtlab.backends.iozone_tool import reported_variable
    assert reported_variable({}) == "throughput_stonewall"
    assert reported_variable({"stonewall": "false"}) == "throughput"
    assert reported_variable({"fsync": "true"}) == "throughput_fsync"
    assert mdtest_argv("mdtest", 1, 16, ".", 4096) == [
        "mdtest", "-F", "-C", "-n", 16, "-w", 4096, "-y", "-u", "-d", "."]
    assert mdtest_argv("mdtest", 1, 16, ".", 0) == ["mdtest", "-F", "-C", "-n", 16, "-u", "-d", "."]
    assert "-u" not in mdtest_argv("mdtest", 1, 16, ".", 4096, unique=False)
    mpi = mdtest_argv("mdtest", 4, 16, ".", 0, mpirun="mpirun")
    assert mpi[0] == "mpirun" and mpi[mpi.index("-np") + 1] == 4 and "--oversubscribe" in mpi
    fio = fio_argv("fio", POINT, ".")
    assert "--numjobs=4" in fio and "--end_fsync=1" in fio and "--bs=32768" in fio
    assert fio_argv("fio", POINT, ".", "/x/job.fio")[-1] == "/x/job.fio"


def test_mpirun_forwards_the_delayjc_preload_to_ranks():
    assert forward_flags("ext4") == []
    flags = forward_flags("delayjc:window=4ms,max_resets=8")
    names = flags[1::2]
    assert set(flags[::2]) == {"-x"} and "LD_PRELOAD" in names and "ABT_DELAYJC_WINDOW_US" in names


def _needs(name):
    av = backends.get(name).available()
    return pytest.mark.skipif(not av, reason=f"{name}: {av.reason}")


@pytest.mark.root
@pytest.mark.parametrize("name, factors, var", [
    pytest.param("iozone-tool", {"threads": "4"}, "throughput_stonewall", marks=_needs("iozone-tool")),
    pytest.param("mdtest", {"threads": "2", "files": "8"}, "fcr_aggregate", marks=_needs("mdtest")),
    pytest.param("fio", {"threads": "4"}, "throughput", marks=_needs("fio"))])
def test_real_tool_run_counts_commits_in_its_window(tmp_path, name, factors, var):
    out = tmp_path / "r.nc"
    abtlab.run(name, out=out, policy="ext4,nojc", reps=1, warmup=0, quiet=True, **factors)
    ds = abtlab.load(out)
    assert ds.attrs["tool_version"] and ds.attrs["tool_command"].split()[0].endswith(
        ("iozone", "mpirun", "mdtest", "fio"))
    assert int(ds.attrs["fs_block_size"]) == 4096
    ext4, nojc = (ds.sel(policy=p).squeeze() for p in ("ext4", "nojc"))
    assert float(ext4[var]) > 0 and float(nojc[var]) > 0
    assert float(ext4["commits"]) >= 1 and float(nojc["commits"]) == 0
    # the window excludes the tool's start-up and exit: never more than the whole process
    assert float(ext4["commits"]) <= float(ext4["jbd2_info_commits"])
    assert float(ext4["fsync_calls"]) > 0
