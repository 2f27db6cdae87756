"""fio on the guest machine: the command the guest runs and the host fio run's dataset
variables from the guest's output (the guest faked: its /out files are given), what is
refused before a boot, then (slow) a real fio job in the guest in virtual time."""
import os
from pathlib import Path

import pytest

import abtlab
from abtlab.backends import fio as fio_backend
from abtlab.machines import guest_point
from abtlab.backends.base import RunContext
from abtlab.errors import ConfigError, UnavailableError
from abtlab.machines import guest
from guest_builds import assert_same_guest_build

DATA = Path(__file__).resolve().parents[1] / "fixtures"
POINT = {"policy": "ext4", "freq_ghz": None, "threads": 4, "file_size": 128 * 1024,
         "record_size": 32 * 1024, "device": "none", "machine": "guest"}
INFO0 = ("3 transactions (1 requested), each up to 8192 blocks\n"
         "0 delayjc windows, 0 delayjc resets\n2 shadow waits, 300 us shadow wait\n")
INFO1 = ("6 transactions (3 requested), each up to 8192 blocks\n"
         "0 delayjc windows, 0 delayjc resets\n5 shadow waits, 1500 us shadow wait\n")
# the guest's trace (no kallsyms: a marker's caller is an address): a start-up commit
# (tid 4), two jobs writing and fsyncing (end_fsync), the commit of both (tid 5), and a
# commit after fio's last fsync (tid 6)
TRACE = """\
  abt-clockmark-9 [000] ..... 1.000100: 0xffffffff810a48ac: abtlab-clock-9-0
  jbd2/nullb1-8-60 [000] ..... 1.000200: jbd2_start_commit: dev 252,1 transaction 4 sync 0
  jbd2/nullb1-8-60 [000] ..... 1.000300: jbd2_end_commit: dev 252,1 transaction 4 sync 0 head 3
  fio-31 [000] ..... 1.200000: ext4_allocate_inode: dev 252,1 ino 12 dir 11 mode 0100644
  fio-31 [000] ..... 1.200010: ext4_da_write_begin: dev 252,1 ino 12 pos 0 len 32768
  fio-32 [000] ..... 1.200020: ext4_da_write_begin: dev 252,1 ino 13 pos 0 len 32768
  fio-31 [000] ..... 1.200030: ext4_da_write_end: dev 252,1 ino 12 pos 0 len 32768 copied 32768
  fio-32 [000] ..... 1.200040: ext4_da_write_end: dev 252,1 ino 13 pos 0 len 32768 copied 32768
  fio-31 [000] ..... 1.200100: ext4_sync_file_enter: dev 252,1 ino 12 parent 11 datasync 0
  fio-32 [000] ..... 1.200200: ext4_sync_file_enter: dev 252,1 ino 13 parent 11 datasync 0
  jbd2/nullb1-8-60 [000] ..... 1.200300: jbd2_start_commit: dev 252,1 transaction 5 sync 0
  jbd2/nullb1-8-60 [000] ..... 1.201300: jbd2_end_commit: dev 252,1 transaction 5 sync 0 head 4
  fio-31 [000] ..... 1.201400: ext4_sync_file_exit: dev 252,1 ino 12 ret 0
  fio-32 [000] ..... 1.201500: ext4_sync_file_exit: dev 252,1 ino 13 ret 0
  jbd2/nullb1-8-60 [000] ..... 1.600000: jbd2_start_commit: dev 252,1 transaction 6 sync 0
  jbd2/nullb1-8-60 [000] ..... 1.601000: jbd2_end_commit: dev 252,1 transaction 6 sync 0 head 5
  abt-clockmark-9 [000] ..... 1.900000: 0xffffffff810a48ac: abtlab-clock-9-1
"""


def _files():
    return {"status": b"ok\n", "rc": b"0\n", "stderr": b"", "trace": TRACE.encode(),
            "stdout": (DATA / "tools" / "fio-3.33-iozone4.json").read_bytes(),
            "trace.stats": b"overrun: 0\ndropped events: 0\n",
            "clock.before": b"abtlab-clock-9-0 1000099500 1000100500\n",
            "clock.after": b"abtlab-clock-9-1 1899999500 1900000500\n",
            "info.before": INFO0.encode(), "info.after": INFO1.encode(),
            "dumpe2fs": (DATA / "dumpe2fs_4k_journal32.txt").read_bytes()}


@pytest.fixture
def fake_guest(tmp_path, monkeypatch):
    """A built guest with the fio overlay, and a boot that returns _files() (seen: what
    the boot was given)."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("bzImage", "initramfs.cpio.gz", fio_backend.OVERLAY):
        (out / name).write_bytes(b"x")
    seen = {}

    def boot_batch(runs, machine, workdir, **kw):
        seen.update(runs=runs, machine=machine, **kw)
        return guest.GuestResult([guest._point(_files())], "console", "", 1.0)
    monkeypatch.setattr(guest, "ensure_built", lambda **kw: (out / "bzImage", out / "initramfs.cpio.gz"))
    monkeypatch.setattr(guest, "boot_batch", boot_batch)
    return seen


def _run(tmp_path, point=POINT, **ctx):
    ctx = RunContext(workdir=tmp_path, seed=3, options=ctx.pop("options", {}), **ctx)
    be = fio_backend.FioBackend()
    return be.run_point(be.validate_point(dict(point)), ctx)


def test_guest_fio_runs_the_overlays_fio_on_the_guests_ext4(tmp_path, fake_guest):
    res = _run(tmp_path, freq_mode="virtual", f_ref_ghz=1.0, point={**POINT, "freq_ghz": 0.5})
    run = fake_guest["runs"][0]
    assert run.argv[0] == "/usr/bin/fio"
    assert "--directory=/mnt/data" in run.argv
    assert "--numjobs=4" in run.argv
    assert [Path(o).name for o in fake_guest["overlays"]] == ["fio.cpio.gz"]
    assert "ext4/ext4_da_write_begin" in fake_guest["events"]
    assert "jbd2/jbd2_end_commit" in fake_guest["events"]
    assert fake_guest["machine"].shift == 1      # virtual 0.5 GHz: one instruction per 2 ns
    assert res.attrs["tool_command"].startswith("/usr/bin/fio --output-format=json")


def test_guest_fio_gives_the_host_runs_variables(tmp_path, fake_guest):
    res = _run(tmp_path)
    # the window is fio's first write to its last fsync: commit 5 only
    assert res.commits["tid"].tolist() == [5]
    assert res.scalars["commits"] == 1.0
    assert res.scalars["fsync_calls"] == 2.0
    assert res.scalars["elapsed"] == pytest.approx(0.00149)
    assert res.scalars["jbd2_info_commits"] == 3.0    # the whole point, as on the host
    assert res.scalars["jbd2_shadow_waits"] == 3.0    # as the guest's IOzone points
    jobs = fio_backend.parse_fio(_files()["stdout"].decode())["jobs"]
    assert res.scalars["throughput"] == sum(j["bytes_per_s"] for j in jobs)
    assert res.attrs["tool"] == "fio"
    assert res.attrs["tool_version"] == "fio-3.33"
    assert res.attrs["machine"] == "guest"
    assert res.attrs["clock"] == "virtual"
    assert res.attrs["fs_block_size"] == 4096
    assert "null_blk" in res.attrs["device"]
    assert not list(tmp_path.glob("guest-*"))


def test_guest_fio_under_delayjc_preloads_the_guests_library(tmp_path, fake_guest, built_native):
    _run(tmp_path, point={**POINT, "policy": "delayjc:window=2ms"})
    run = fake_guest["runs"][0]
    assert run.argv[0] == "/usr/bin/fio"     # fio is dynamic: no -dyn build to pick
    assert run.env["LD_PRELOAD"] == "/abt/libdelayjc.so"
    assert run.env["ABT_DELAYJC_STATS"] == "/out/p1/batches.trace"


def test_kernel_delayjc_is_for_the_guest_machine_only(tmp_path, fake_guest):
    kpol = "kdelayjc:window=2ms,max_resets=8"
    _run(tmp_path, point={**POINT, "policy": kpol})
    assert fake_guest["runs"][0].knobs[:2] == [(guest_point.DELAYJC_KNOBS[0], 8),
                                               (guest_point.DELAYJC_KNOBS[1], 2000)]
    with pytest.raises(ConfigError) as err:
        fio_backend.FioBackend().validate_point({**POINT, "policy": kpol, "machine": "host"})
    assert err.value.field == "policy"
    assert "--machine guest" in str(err.value)


def test_fio_missing_from_the_guest_build_says_how_to_get_it(tmp_path, fake_guest):
    (tmp_path / "out" / fio_backend.OVERLAY).unlink()
    with pytest.raises(UnavailableError) as err:
        _run(tmp_path)
    assert str(err.value) == ("fio is not in the guest's initramfs: install fio (apt) and "
                              "rebuild (make -C backends/kernel)")
    assert "runs" not in fake_guest


@pytest.mark.parametrize("field, kw", [
    ("exe", {"options": {"exe": "/usr/bin/true"}}),
    ("job", {"options": {"job": __file__}}),
    ("freq", {"freq_mode": "emulated", "f_ref_ghz": 1.0})])
def test_what_the_guest_cannot_run_is_refused_before_a_boot(tmp_path, fake_guest, field, kw):
    point = {**POINT, "freq_ghz": 0.5} if field == "freq" else POINT
    with pytest.raises(ConfigError) as err:
        _run(tmp_path, point=point, **kw)
    assert err.value.field == field
    assert "runs" not in fake_guest


def _sweep(tmp_path, name, reps=1, **kw):
    out = tmp_path / name
    abtlab.run("fio", out=out, machine="guest", threads=8, file_size=128 * 1024,
               record_size=128 * 1024, reps=reps, warmup=0, quiet=True, seed=5, **kw)
    return abtlab.load(out)


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.timeout(1500)  # a first kernel build on a busy 2-core machine
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install the guest's Debian packages")
def test_fio_in_the_guest_is_traced_and_deterministic(tmp_path, built_guest):
    """8 jobs x 128k with end_fsync, twice in virtual time: throughput, commits equal to
    the journal's own count over fio's window, and the same numbers both times."""
    import numpy as np
    if not (Path(built_guest[1]).parent / fio_backend.OVERLAY).exists():
        pytest.skip(fio_backend.NOT_IN_GUEST)
    a = _sweep(tmp_path, "a.nc")
    b = _sweep(tmp_path, "b.nc")
    assert_same_guest_build(a, b)
    assert a.attrs["clock"] == "virtual"
    assert a.attrs["tool_version"].startswith("fio-")
    assert (a["throughput"] > 0).all()
    assert (a["commits"] > 0).all()
    assert (a["fsync_calls"] == 8).all()
    np.testing.assert_array_equal(a["commits"].values, a["jbd2_info_commits"].values)
    for v in ("throughput", "elapsed", "commits", "commit_end", "commit_handles"):
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.timeout(1500)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install the guest's Debian packages")
def test_a_sweeps_fio_points_share_one_boot(tmp_path, built_guest, monkeypatch):
    """Two policies x two repetitions of fio in the guest: one boot for all four points
    (the sweep batches a guest machine's consecutive points), each point traced on its
    own fresh ext4 (NOJC commits nothing, ext4 commits)."""
    import numpy as np
    from abtlab.machines import guest
    if not (Path(built_guest[1]).parent / fio_backend.OVERLAY).exists():
        pytest.skip(fio_backend.NOT_IN_GUEST)
    boots, real = [], guest.boot_batch
    monkeypatch.setattr(guest, "boot_batch", lambda runs, *a, **k: boots.append(len(runs)) or real(runs, *a, **k))
    ds = _sweep(tmp_path, "batch.nc", policy="ext4;nojc", reps=2)
    assert boots == [4]
    commits = ds["commits"].squeeze()
    assert (commits.sel(policy="ext4") > 0).all() and (commits.sel(policy="nojc") == 0).all()
    np.testing.assert_array_equal(ds["commits"].values, ds["jbd2_info_commits"].values)
    assert (ds["fsync_calls"] == 8).all()
