"""The C workload programs abt-iozone and abt-metarates, run for real on the root
filesystem (pytest's tmp_path) and checked through their traces."""
from __future__ import annotations

import errno
import os
import resource
import shutil
import signal
import subprocess
import tempfile

import numpy as np
import pytest

from abtlab import trace
from abtlab.trace import Flag, Op

IOZONE = "iozone/abt-iozone"
METARATES = "metarates/abt-metarates"


def run(backends, prog, *args, preexec_fn=None):
    return subprocess.run([str(backends / prog), *map(str, args)], capture_output=True,
                          text=True, timeout=60, preexec_fn=preexec_fn)


def per_tid(recs):
    """{tid: records of that tid}, checking the trace keeps thread order."""
    tids = recs["tid"]
    assert np.all(np.diff(tids.astype(np.int64)) >= 0), "records not in thread order"
    return {int(t): recs[tids == t] for t in np.unique(tids)}


def iozone(backends, tmp_path, *extra, threads=4, fsize="128k", rsize="32k"):
    out = tmp_path / "iozone.trace"
    p = run(backends, IOZONE, "--dir", tmp_path, "--threads", threads, "--file-size", fsize,
            "--record-size", rsize, "--trace", out, *extra)
    assert p.returncode == 0, p.stderr
    return trace.read(out, kind=trace.Kind.OPS), p


def parse_kv(text):
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


@pytest.mark.parametrize("prog", [IOZONE, METARATES])
def test_describe_matches_python_dtype(built_native, prog):
    p = run(built_native, prog, "--describe")
    assert p.returncode == 0, p.stderr
    d = parse_kv(p.stdout)
    assert d["name"] == os.path.basename(prog)
    assert int(d["record_size"]) == trace.RECORD_DTYPE.itemsize
    assert int(d["trace_kind"]) == trace.Kind.OPS
    assert "index" in d["tid"]


def test_iozone_ops_per_thread_and_bytes(built_native, tmp_path):
    recs, p = iozone(built_native, tmp_path)
    threads = per_tid(recs)
    assert sorted(threads) == [0, 1, 2, 3]
    want = [Op.OPEN, Op.BARRIER] + [Op.WRITE] * 4 + [Op.FSYNC, Op.CLOSE]
    for tid, r in threads.items():
        assert r["op"].tolist() == want
        w = r[r["op"] == Op.WRITE]
        assert w["bytes"].tolist() == [32768] * 4
        assert r["flags"][0] == Flag.CREAT and not np.any(r["flags"] & Flag.ERROR)
    # each thread's records carry its own kernel task: they join sched_switch by worker
    tasks = {tid: set(r["pid"].tolist()) for tid, r in threads.items()}
    assert all(len(t) == 1 for t in tasks.values()) and len(set.union(*tasks.values())) == 4
    assert np.all(recs["t_end_ns"] >= recs["t_start_ns"])
    assert np.all(np.diff(threads[0]["t_start_ns"].astype(np.int64)) > 0)
    assert parse_kv(p.stdout)["records"] == str(recs.size)
    assert not list(tmp_path.glob("abt-iozone.*")), "files not removed without --keep"


def test_iozone_barrier_separates_opens_from_writes(built_native, tmp_path):
    recs, _ = iozone(built_native, tmp_path, threads=6)
    opens, bars = recs[recs["op"] == Op.OPEN], recs[recs["op"] == Op.BARRIER]
    writes = recs[recs["op"] == Op.WRITE]
    assert opens["t_end_ns"].max() <= writes["t_start_ns"].min()
    assert bars["t_start_ns"].max() <= bars["t_end_ns"].min()
    for tid, r in per_tid(recs).items():
        bar_end = r[r["op"] == Op.BARRIER]["t_end_ns"][0]
        assert np.all(r[r["op"] == Op.WRITE]["t_start_ns"] >= bar_end)


def test_iozone_poll_start_releases_every_thread_after_every_open(built_native, tmp_path):
    """IOzone's start: each thread polls a flag (select, 1 us) that a parent sets once
    all are ready; the release is timer-paced, so first writes spread out in time."""
    recs, p = iozone(built_native, tmp_path, "--start", "poll", threads=8)
    assert parse_kv(p.stdout)["ops"] == str(8 * 8)   # open, start wait, 4 writes, fsync, close
    opens, waits = recs[recs["op"] == Op.OPEN], recs[recs["op"] == Op.BARRIER]
    assert len(waits) == 8
    assert opens["t_end_ns"].max() <= recs[recs["op"] == Op.WRITE]["t_start_ns"].min()
    for tid, r in per_tid(recs).items():
        wait_end = r[r["op"] == Op.BARRIER]["t_end_ns"][0]
        assert np.all(r[r["op"] == Op.WRITE]["t_start_ns"] >= wait_end)
    d = subprocess.run([str(built_native / IOZONE), "--describe", "--start", "poll"],
                       capture_output=True, text=True)
    assert parse_kv(d.stdout)["param.start"] == "poll"


def test_iozone_no_fsync_keep_and_direct(built_native, tmp_path):
    recs, _ = iozone(built_native, tmp_path, "--no-fsync", "--keep", "--direct",
                     threads=2, fsize="64k", rsize="16k")
    assert not np.any(recs["op"] == Op.FSYNC)
    assert np.all(recs[recs["op"] != Op.BARRIER]["flags"] & Flag.DIRECT)
    files = sorted(tmp_path.glob("abt-iozone.*"))
    assert [f.name for f in files] == ["abt-iozone.0", "abt-iozone.1"]
    assert all(f.stat().st_size == 65536 for f in files)


def test_no_record_writes_no_trace(built_native, tmp_path):
    p = run(built_native, IOZONE, "--dir", tmp_path, "--threads", 3, "--no-record")
    assert p.returncode == 0, p.stderr
    out = parse_kv(p.stdout)
    assert out["records"] == "0" and out["ops"] == str(3 * 8)
    p = run(built_native, METARATES, "--dir", tmp_path, "--workers", 2, "--no-record")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("processes", [False, True])
def test_metarates_counts(built_native, tmp_path, processes):
    out = tmp_path / "m.trace"
    extra = ["--processes", "--dilate", "1.5"] if processes else []
    p = subprocess.Popen([str(built_native / METARATES), "--dir", str(tmp_path), "--workers",
                          "3", "--files", "4", "--trace", str(out), *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    recs = trace.read(out)
    threads = per_tid(recs)
    assert sorted(threads) == [0, 1, 2]
    for r in threads.values():
        assert r["op"].tolist() == [Op.BARRIER] + [Op.OPEN, Op.FSYNC, Op.CLOSE] * 4
        dil = Flag.DILATED if processes else 0  # dilation works in forked workers too
        assert np.all(r["flags"] & Flag.DILATED == dil)
        assert np.all(r[r["op"] == Op.OPEN]["flags"] == Flag.CREAT | dil)
        assert np.all(r["pid"] == r["pid"][0])
    pids = {int(r["pid"][0]) for r in threads.values()}
    # one kernel task per worker, none of them the parent: a forked child, or a thread
    assert len(pids) == 3 and p.pid not in pids
    bars = recs[recs["op"] == Op.BARRIER]
    assert bars["t_start_ns"].max() <= bars["t_end_ns"].min()
    assert not list(tmp_path.glob("abt-metarates.*"))


def test_metarates_write_bytes_writes_each_file_before_its_fsync(built_native, tmp_path):
    out = tmp_path / "m.trace"
    p = run(built_native, METARATES, "--dir", tmp_path, "--workers", 2, "--files", 3,
            "--write-bytes", 5000, "--trace", out, "--keep")
    assert p.returncode == 0, p.stderr
    for r in per_tid(trace.read(out)).values():
        assert r["op"].tolist() == [Op.BARRIER] + [Op.OPEN, Op.WRITE, Op.FSYNC, Op.CLOSE] * 3
        assert r[r["op"] == Op.WRITE]["bytes"].tolist() == [5000] * 3
    files = sorted(tmp_path.glob("abt-metarates.*"))
    assert len(files) == 6 and {f.stat().st_size for f in files} == {5000}


def test_open_failure_mid_run_is_recorded(built_native, tmp_path):
    (tmp_path / "abt-iozone.1").mkdir()  # open(O_WRONLY) of a directory fails: EISDIR
    out = tmp_path / "t"
    p = run(built_native, IOZONE, "--dir", tmp_path, "--threads", 3, "--trace", out)
    assert p.returncode == 1 and "open" in p.stderr
    threads = per_tid(trace.read(out))
    bad = threads[1]
    assert bad["op"].tolist() == [Op.OPEN, Op.BARRIER]
    assert bad["flags"][0] & Flag.ERROR and bad["bytes"][0] == errno.EISDIR
    assert threads[0]["op"].tolist()[-1] == Op.CLOSE  # the others ran to the end

    (tmp_path / "abt-metarates.0.2").mkdir()
    p = run(built_native, METARATES, "--dir", tmp_path, "--workers", 2, "--trace", out)
    assert p.returncode == 1
    w0 = per_tid(trace.read(out))[0]
    assert w0["op"].tolist() == [Op.BARRIER] + [Op.OPEN, Op.FSYNC, Op.CLOSE] * 2 + [Op.OPEN]
    assert w0["flags"][-1] & Flag.ERROR and w0["bytes"][-1] == errno.EISDIR


def test_write_failure_mid_run_is_recorded(built_native, tmp_path):
    def limit_file_size():  # writes past 64 KiB fail with EFBIG instead of SIGXFSZ
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))

    out = tmp_path / "t"
    p = run(built_native, IOZONE, "--dir", tmp_path, "--threads", 2, "--trace", out,
            preexec_fn=limit_file_size)
    assert p.returncode == 1 and "write" in p.stderr
    for r in per_tid(trace.read(out)).values():
        assert r["op"].tolist() == [Op.OPEN, Op.BARRIER] + [Op.WRITE] * 3 + [Op.CLOSE]
        assert r["flags"][4] & Flag.ERROR and r["bytes"][4] == errno.EFBIG
        assert r["bytes"][2:4].tolist() == [32768, 32768]


@pytest.fixture
def shm_dir():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm tmpfs")
    d = tempfile.mkdtemp(prefix="abt-dilate-", dir="/dev/shm")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_dilation_stretches_cpu_bound_writes(built_native, shm_dir, tmp_path):
    """Buffered writes to tmpfs are pure CPU: with --dilate 4 they take clearly longer."""
    sums = {1: [], 4: []}
    for _ in range(5):
        for f in sums:  # interleaved, so machine load hits both alike
            out = tmp_path / f"d{f}.trace"
            p = run(built_native, IOZONE, "--dir", shm_dir, "--threads", 2, "--file-size",
                    "1m", "--record-size", "32k", "--no-fsync", "--dilate", f, "--trace", out)
            assert p.returncode == 0, p.stderr
            recs = trace.read(out)
            dilated = (recs["flags"] & Flag.DILATED) != 0
            assert dilated.all() if f > 1 else not dilated.any()
            w = recs[recs["op"] == Op.WRITE]
            sums[f].append(int((w["t_end_ns"] - w["t_start_ns"]).sum()))
    assert np.median(sums[4]) > 1.5 * np.median(sums[1]), sums


IOZ_BAD = [
    (["--threads", "0"], "--threads"),
    (["--threads", "x1"], "--threads"),
    (["--record-size", "256k"], "--record-size"),
    (["--file-size", "100k"], "--file-size"),
    (["--file-size", "12q"], "--file-size"),
    (["--file-size", "-5"], "--file-size"),
    (["--dilate", "0.9"], "--dilate"),
    (["--dilate", "nan"], "--dilate"),
    (["--direct", "--file-size", "6000", "--record-size", "1000"], "--record-size"),
    (["--dir", "/proc"], "--dir"),
    (["--dir", "{tmp}/missing"], "--dir"),
    (["--dir", "{tmp}/afile"], "--dir"),
    (["--trace", "{tmp}/t"], "--trace"),  # together with --no-record
    (["--bogus"], "--bogus"),
    (["--start", "fork"], "--start"),
]
MR_BAD = [
    (["--workers", "0"], "--workers"),
    (["--files", "0"], "--files"),
    (["--files", "1e3"], "--files"),
    (["--dilate", "abc"], "--dilate"),
    (["--dir", "/proc"], "--dir"),
    (["--dir", "{tmp}/missing"], "--dir"),
    (["--write-bytes", "-1"], "--write-bytes"),
    (["--write-bytes", "1g"], "--write-bytes"),
]


@pytest.mark.parametrize("prog,args,opt", [(IOZONE, a, o) for a, o in IOZ_BAD]
                         + [(METARATES, a, o) for a, o in MR_BAD])
def test_bad_arguments_exit_2_naming_option(built_native, tmp_path, prog, args, opt):
    (tmp_path / "afile").write_text("")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    base = ["--dir", tmp_path, "--no-record"]
    p = run(built_native, prog, *base, *args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{opt}:" in lines[0] and "accepted" in lines[0], p.stderr
    assert not list(tmp_path.glob("abt-*")) and not (tmp_path / "t").exists()
