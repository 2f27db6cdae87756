"""delayJC: configuration refusal, stats loading, and group-commit correctness with
real threads on a real loop ext4 (records from abt-fsyncers, batches from the library)."""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from abtlab.policies import delayjc
from abtlab import trace
from abtlab.errors import ConfigError, TraceError

FIXED = {"ABT_DELAYJC_POLICY": "fixed", "ABT_DELAYJC_WINDOW_US": "2000",
         "ABT_DELAYJC_MAX_RESETS": "64", "ABT_DELAYJC_MAX_AGE_US": "1000000"}


def _run(built, args, env_extra, timeout=60, check=True):
    env = {**os.environ, "LD_PRELOAD": str(built / "delayjc" / "libdelayjc.so"), **env_extra}
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def _fsyncers(built, fs_dir, tmp_path, env, *extra, timeout=60, check=True):
    ops, stats = tmp_path / "ops.bin", tmp_path / "batches.bin"
    args = [str(built / "fsyncers" / "abt-fsyncers"), "--dir", str(fs_dir), "--trace", str(ops), *extra]
    p = _run(built, args, {**env, "ABT_DELAYJC_STATS": str(stats)}, timeout, check)
    return p, ops, stats


def _served_by_later_flush(ops, b):
    """True per op: some flush started at/after the op began and ended before it returned."""
    order = np.argsort(b["flush_start"])
    starts, ends = b["flush_start"][order], b["flush_end"][order]
    suffix_min_end = np.minimum.accumulate(ends[::-1])[::-1]
    idx = np.searchsorted(starts, ops["t_start_ns"].astype(np.int64), side="left")
    ok = idx < starts.size
    ok[ok] = suffix_min_end[idx[ok]] <= ops["t_end_ns"][ok].astype(np.int64)
    return ok


# ---- configuration: refuse to run, naming the variable ----------------------------

@pytest.mark.parametrize("var,value", [
    ("ABT_DELAYJC_POLICY", "sometimes"), ("ABT_DELAYJC_WINDOW_US", "-1"),
    ("ABT_DELAYJC_WINDOW_US", "16ms"), ("ABT_DELAYJC_MAX_RESETS", None),
    ("ABT_DELAYJC_MAX_AGE_US", "0"), ("ABT_DELAYJC_FAULT_ERRNO", "EWHATEVER"),
    ("ABT_DELAYJC_STATS", ""), ("ABT_DELAYJC_FLUSH", "sometimes"),
])
def test_invalid_env_refused(built_native, var, value):
    env = dict(FIXED)
    if value is None:
        env.pop(var)
        os.environ.pop(var, None)
    else:
        env[var] = value
    p = _run(built_native, ["/bin/true"], env, check=False)
    assert p.returncode == 2
    assert var in p.stderr and "accepted" in p.stderr


def test_adaptive_refuses_a_window(built_native):
    env = {**FIXED, "ABT_DELAYJC_POLICY": "adaptive"}
    p = _run(built_native, ["/bin/true"], env, check=False)
    assert p.returncode == 2 and "ABT_DELAYJC_WINDOW_US" in p.stderr


def test_preload_env_matches_policy(built_native, tmp_path):
    env = delayjc.preload_env("delayjc:window=16ms,max_resets=8", tmp_path / "s.bin")
    assert env["LD_PRELOAD"].endswith("libdelayjc.so")
    assert env["ABT_DELAYJC_WINDOW_US"] == "16000" and env["ABT_DELAYJC_MAX_RESETS"] == "8"
    assert env["ABT_DELAYJC_STATS"] == str(tmp_path / "s.bin")
    with pytest.raises(ConfigError, match="policy"):
        delayjc.preload_env("ext4")
    # the library accepts exactly what the policy produces
    _run(built_native, ["/bin/true"], delayjc.preload_env("delayjc:adaptive"))


def test_load_batches_rejects_a_non_trace(tmp_path):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"not a trace at all, just text....")
    with pytest.raises(TraceError):
        delayjc.load_batches(bad)


def test_load_and_summary_of_written_stats(tmp_path):
    recs = np.zeros(4, trace.RECORD_DTYPE)
    recs[0] = (1, 0, trace.Op.BATCH, 3, 5, 100, 200)
    recs[1] = (1, 0, trace.Op.FLUSH, 0, 5, 210, 400)
    recs[2] = (1, 0, trace.Op.BATCH, 0, 2, 500, 600)
    recs[3] = (1, 0, trace.Op.FLUSH, trace.Flag.ERROR, errno.EIO, 600, 700)
    trace.write(tmp_path / "s.bin", recs, kind=trace.Kind.BATCHES)
    b = delayjc.load_batches(tmp_path / "s.bin")
    assert list(b["members"]) == [5, 2] and list(b["resets"]) == [3, 0]
    assert list(b["error"]) == [0, errno.EIO]
    s = delayjc.summary(b, sync_calls=7)
    assert s["batches"] == 2 and s["mean_members"] == 3.5 and s["failed_flushes"] == 1


# ---- real threads on a real loop ext4 ---------------------------------------------

ADAPTIVE = {"ABT_DELAYJC_POLICY": "adaptive", "ABT_DELAYJC_MAX_RESETS": "64",
            "ABT_DELAYJC_MAX_AGE_US": "1000000"}


@pytest.mark.root
@pytest.mark.parametrize("policy,flush", [(FIXED, "fsync"), (FIXED, "syncfs"),
                                          (ADAPTIVE, "fsync"), (ADAPTIVE, "syncfs")])
def test_every_sync_waits_for_a_flush_that_began_after_it(built_native, scratch_ext4, tmp_path,
                                                          policy, flush):
    env = {**policy, "ABT_DELAYJC_FLUSH": flush}
    p, ops_path, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, env,
                                   "--threads", "8", "--files", "12")
    ops, b = trace.read(ops_path), delayjc.load_batches(stats)
    assert ops.size == 96 and not np.any(ops["flags"] & trace.Flag.ERROR)
    assert _served_by_later_flush(ops, b).all()
    assert b["members"].sum() == 96
    assert np.all(b["open"] <= b["close"]) and np.all(b["close"] <= b["flush_start"])


@pytest.mark.root
@pytest.mark.parametrize("flush", ["fsync", "syncfs"])
def test_injected_error_reaches_every_member(built_native, scratch_ext4, tmp_path, flush):
    env = {**FIXED, "ABT_DELAYJC_FAULT_ERRNO": "EIO", "ABT_DELAYJC_FLUSH": flush}
    p, ops_path, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, env,
                                   "--threads", "6", "--files", "4", "--sync", "fdatasync")
    ops, b = trace.read(ops_path), delayjc.load_batches(stats)
    assert ops.size == 24
    assert np.all(ops["flags"] & trace.Flag.ERROR) and np.all(ops["bytes"] == errno.EIO)
    assert np.all(b["error"] == errno.EIO) and b["members"].sum() == 24
    assert "errors: 24\n" in p.stdout


@pytest.mark.root
def test_max_resets_closes_a_batch_under_a_steady_stream(built_native, scratch_ext4, tmp_path):
    # arrivals every 100 ms for 1.5 s, window 300 ms: only the reset bound closes batches
    env = {**FIXED, "ABT_DELAYJC_WINDOW_US": "300000", "ABT_DELAYJC_MAX_RESETS": "2",
           "ABT_DELAYJC_MAX_AGE_US": "60000000"}
    _, ops_path, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, env,
                                   "--threads", "16", "--stagger-us", "100000")
    b = delayjc.load_batches(stats)
    assert b["resets"].max() <= 2
    assert b["members"].size >= 2 and b["members"].sum() == 16
    assert _served_by_later_flush(trace.read(ops_path), b).all()


@pytest.mark.root
def test_one_thread_does_not_deadlock(built_native, scratch_ext4, tmp_path):
    p, ops_path, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, FIXED,
                                   "--threads", "1", "--files", "5", timeout=30)
    b = delayjc.load_batches(stats)
    assert list(b["members"]) == [1] * 5


@pytest.mark.root
def test_fork_mid_run_does_not_deadlock(built_native, scratch_ext4, tmp_path):
    env = {**FIXED, "ABT_DELAYJC_WINDOW_US": "50000"}
    _, ops_path, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, env,
                                   "--threads", "4", "--files", "3", "--fork", timeout=60)
    kids = list(tmp_path.glob("batches.bin.*"))
    assert len(kids) == 1                     # the child batched its own sync and wrote it
    b = delayjc.load_batches(tmp_path / "batches.bin")
    assert b["members"].sum() == 12 + 1


@pytest.mark.root
def test_exit_with_a_batch_open_flushes_it(built_native, scratch_ext4, tmp_path):
    # window 20 s: the batch is still open when main calls exit() after 300 ms
    env = {**FIXED, "ABT_DELAYJC_WINDOW_US": "20000000", "ABT_DELAYJC_MAX_AGE_US": "60000000"}
    _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, env,
              "--threads", "2", "--exit-after-ms", "300", timeout=15)
    b = delayjc.load_batches(tmp_path / "batches.bin")
    assert b["members"].sum() == 2 and np.all(b["flush_end"] > b["flush_start"])
    assert np.all(b["close"] - b["open"] < 20_000_000_000)


@pytest.mark.root
def test_fio_fsync_under_preload(built_native, scratch_ext4, tmp_path):
    if not shutil.which("fio"):
        pytest.skip("fio is not installed (make test installs it from Debian)")
    stats = tmp_path / "fio.bin"
    env = {**FIXED, "ABT_DELAYJC_STATS": str(stats)}
    args = ["fio", "--name=djc", f"--directory={scratch_ext4.mountpoint}", "--rw=write",
            "--bs=4k", "--size=128k", "--fsync=1", "--numjobs=4", "--thread",
            "--group_reporting", "--output-format=json"]
    p = _run(built_native, args, env, timeout=120)
    job = json.loads(p.stdout)["jobs"][0]
    assert job["error"] == 0 and job["sync"]["total_ios"] > 0
    b = delayjc.load_batches(stats)
    # every fsync fio counted went through a batch, and none failed
    assert b["members"].sum() == job["sync"]["total_ios"] and not b["error"].any()


def _windows_us(stats):
    """Window per batch in us, in order of opening: the BATCH record's tid field
    (docs/journal/delayjc.md, Stats)."""
    recs = trace.read(stats, kind=trace.Kind.BATCHES)
    batch = recs[recs["op"] == trace.Op.BATCH]
    return batch["tid"][np.argsort(batch["t_start_ns"], kind="stable")].astype(np.int64)


@pytest.mark.root
def test_adaptive_lone_thread_is_never_delayed(built_native, scratch_ext4, tmp_path):
    # one thread: each arrival gap covers the previous flush, so the controller never
    # has evidence for a window: every batch is the caller alone, opened with window 0
    _, ops_path, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, ADAPTIVE,
                                   "--threads", "1", "--files", "40", timeout=60)
    b = delayjc.load_batches(stats)
    assert list(b["members"]) == [1] * 40 and b["resets"].max() == 0
    assert np.all(_windows_us(stats) == 0)
    assert _served_by_later_flush(trace.read(ops_path), b).all()


@pytest.mark.root
def test_adaptive_window_is_bounded_and_recorded(built_native, scratch_ext4, tmp_path):
    # many threads, many batches: the controller may probe, but a window never
    # exceeds max_age and every batch before the first period ends uses window 0
    env = {**ADAPTIVE, "ABT_DELAYJC_MAX_AGE_US": "3000"}
    _, ops_path, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, env,
                                   "--threads", "16", "--files", "20")
    b, w = delayjc.load_batches(stats), _windows_us(stats)
    assert w.size == b["members"].size and b["members"].sum() == 320
    assert np.all(w <= 3000)
    assert np.all(w[:8] == 0)              # the first period (8 batches) measures window 0
    assert _served_by_later_flush(trace.read(ops_path), b).all()


@pytest.mark.root
def test_fixed_records_its_window(built_native, scratch_ext4, tmp_path):
    _, _, stats = _fsyncers(built_native, scratch_ext4.mountpoint, tmp_path, FIXED,
                            "--threads", "4", "--files", "3")
    assert np.all(_windows_us(stats) == 2000)
