"""abt-dio and the dio driver: each workload moves the bytes it says, --verify and an
independent read-back agree, misaligned O_DIRECT and filesystems without O_DIRECT are
reported clearly, bad points name their field."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from abtlab import trace
from abtlab.backends import get
from abtlab.backends.base import RunContext
from abtlab.machines.programs import parse_result
from abtlab.errors import ConfigError, UnavailableError

BS = 4096


def dio(backends, *args):
    exe = backends / "dio" / "abt-dio"
    proc = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)
    out = parse_result(proc.stdout) if proc.returncode == 0 else {}
    return proc, out


def expected_block(index, gen, bs=BS):
    b = (np.arange(bs, dtype=np.uint64) * 131 + gen * 7 + 1).astype(np.uint8)
    b[:8] = np.frombuffer(np.uint64(index ^ (gen << 40)).tobytes(), np.uint8)
    return b


def test_describe_record_size(built_native):
    proc, _ = dio(built_native, "--describe")
    assert f"record_size: {trace.RECORD_DTYPE.itemsize}\n" in proc.stdout
    assert "header_size: 32\n" in proc.stdout


# workload -> (count, written blocks, read blocks, write ops, read ops, syncfs ops)
CASES = {1: (8, 8, 0, 8, 0, 1), 2: (16, 0, 16, 0, 16, 0), 3: (5, 5, 0, 5, 0, 5),
         4: (5, 5, 5, 5, 5, 5)}


@pytest.mark.root
@pytest.mark.parametrize("direct", [False, True], ids=["buffered", "direct"])
@pytest.mark.parametrize("workload", [1, 2, 3, 4])
def test_workload_bytes_and_verify(built_native, scratch_ext4, tmp_path, workload, direct):
    count, wblk, rblk, nw, nr, ns = CASES[workload]
    tpath = tmp_path / "t.trace"
    args = ["--workload", workload, "--block-size", BS, "--dir", scratch_ext4.mountpoint,
            "--count", count, "--file-size", 64 * BS, "--verify", "--trace", tpath]
    proc, out = dio(built_native, *args, *(["--direct"] if direct else []))
    assert proc.returncode == 0, proc.stderr
    assert (int(out["bytes_written"]), int(out["bytes_read"])) == (wblk * BS, rblk * BS)
    assert out["verified"] == "yes" and out["filesystem"] == "ext4"
    assert out["mode"] == ("direct" if direct else "buffered")
    assert int(out["dio_align"]) > 0 if direct else int(out["dio_align"]) == 0
    ops = trace.read(tpath, kind=trace.Kind.OPS)
    kinds = ops["op"]
    assert (kinds == trace.Op.WRITE).sum() == nw and (kinds == trace.Op.READ).sum() == nr
    assert (kinds == trace.Op.SYNCFS).sum() == ns
    assert ops["bytes"][kinds == trace.Op.WRITE].sum() == wblk * BS
    assert ops["bytes"][kinds == trace.Op.READ].sum() == rblk * BS
    assert bool(np.all((ops["flags"] & trace.Flag.DIRECT) > 0)) == direct
    assert np.all(ops["t_end_ns"] >= ops["t_start_ns"])
    assert not list(Path(scratch_ext4.mountpoint).glob("abt-dio.*")), "data file left behind"


@pytest.mark.root
@pytest.mark.parametrize("workload,blocks,gen", [(1, 6, 1), (3, 1, 7)])
def test_read_back_independently(built_native, scratch_ext4, workload, blocks, gen):
    """--keep leaves the file; numpy checks every block's stamp and pattern."""
    count = blocks if workload == 1 else gen
    proc, out = dio(built_native, "--workload", workload, "--block-size", BS, "--direct",
                    "--dir", scratch_ext4.mountpoint, "--count", count, "--keep")
    assert proc.returncode == 0, proc.stderr
    path = Path(out["file"])
    try:
        data = np.fromfile(path, np.uint8)
        assert data.size == blocks * BS
        for i in range(blocks):
            np.testing.assert_array_equal(data[i * BS:(i + 1) * BS], expected_block(i, gen))
    finally:
        path.unlink(missing_ok=True)


def test_misaligned_direct_is_named(built_native):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:  # root ext4: reports dio alignment
        proc, _ = dio(built_native, "--workload", 3, "--direct", "--block-size", 6000, "--dir", d)
        assert proc.returncode == 2
        assert proc.stderr.startswith("abt-dio: --block-size: given 6000")
        assert "a multiple of" in proc.stderr and "O_DIRECT" in proc.stderr
        assert os.listdir(d) == []
        ctx = RunContext(Path(d), options={"directory": d})
        with pytest.raises(ConfigError) as exc:
            get("dio").run_point({"workload": 3, "mode": "direct", "block_size": 6000}, ctx)
        assert exc.value.field == "block_size" and exc.value.given == 6000
        assert "multiple of" in str(exc.value)


def test_tmpfs_direct_refused_by_name(built_native):
    proc, _ = dio(built_native, "--workload", 3, "--direct", "--dir", "/dev/shm")
    assert proc.returncode == 3
    assert "filesystem tmpfs at /dev/shm" in proc.stderr and "direct I/O" in proc.stderr
    with tempfile.TemporaryDirectory() as d:
        ctx = RunContext(Path(d), options={"directory": "/dev/shm"})
        with pytest.raises(UnavailableError, match="tmpfs"):
            get("dio").run_point({"workload": 3, "mode": "direct", "block_size": BS}, ctx)
    # buffered I/O on tmpfs is fine
    proc, out = dio(built_native, "--workload", 3, "--count", 2, "--dir", "/dev/shm", "--verify")
    assert proc.returncode == 0 and out["filesystem"] == "tmpfs" and out["verified"] == "yes"


@pytest.mark.root
def test_ramfs_open_einval_refused_by_name(built_native, tmp_path):
    mnt = tmp_path / "ramfs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "ramfs", "none", str(mnt)], check=True)
    try:
        proc, _ = dio(built_native, "--workload", 3, "--direct", "--dir", mnt)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert proc.returncode == 3
    assert f"filesystem ramfs at {mnt} refuses O_DIRECT" in proc.stderr


@pytest.mark.parametrize("args,option", [
    (["--workload", 5], "--workload"), (["--block-size", "100"], "--block-size"),
    (["--block-size", "17m"], "--block-size"), (["--count", "0"], "--count"),
    (["--workload", "2", "--block-size", "1m", "--file-size", "64k"], "--block-size")])
def test_bad_options_exit_2(built_native, args, option):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        proc, _ = dio(built_native, "--dir", d, *args)
    assert proc.returncode == 2 and proc.stderr.startswith(f"abt-dio: {option}:")


@pytest.mark.parametrize("point,field", [
    ({"workload": 0, "mode": "buffered", "block_size": BS}, "workload"),
    ({"workload": 1, "mode": "odirect", "block_size": BS}, "mode"),
    ({"workload": 1, "mode": "direct", "block_size": 32 << 20}, "block_size"),
    ({"workload": 1, "mode": "direct", "block_size": 4096.5}, "block_size")])
def test_validate_point_names_field(point, field):
    with pytest.raises(ConfigError) as exc:
        get("dio").validate_point(point)
    assert exc.value.field == field


@pytest.mark.root
def test_no_space_is_a_count_error(built_native, scratch_ext4, tmp_path):
    ctx = RunContext(tmp_path, options={"directory": scratch_ext4.mountpoint, "count": 1000})
    with pytest.raises(ConfigError) as exc:
        get("dio").run_point({"workload": 1, "mode": "buffered", "block_size": 1 << 20}, ctx)
    assert exc.value.field == "count"


@pytest.mark.root
def test_driver_run_point(built_native, scratch_ext4, tmp_path):
    ctx = RunContext(tmp_path, options={"directory": scratch_ext4.mountpoint, "count": 4,
                                        "verify": True})
    res = get("dio").run_point({"workload": 4, "mode": "direct", "block_size": BS}, ctx)
    assert res.scalars["elapsed"] > 0
    assert res.scalars["throughput"] == pytest.approx(8 * BS / res.scalars["elapsed"])
    assert res.ops.size == 1 + 4 * 3 + 1  # open, 4 x (write, syncfs, read), close
    assert res.attrs["filesystem"] == "ext4" and res.attrs["freq_mode"] == "real"
    assert res.attrs["verified"] == "yes" and res.attrs["ops_per_run"] == 4


@pytest.mark.root
def test_driver_makes_its_own_scratch(built_native, tmp_path):
    ctx = RunContext(tmp_path, options={"count": 2})
    res = get("dio").run_point({"workload": 3, "mode": "direct", "block_size": BS}, ctx)
    assert res.attrs["filesystem"].startswith("ext4") and "loop" in res.attrs["block_device"]
    assert list(tmp_path.iterdir()) == []  # scratch image and trace removed
