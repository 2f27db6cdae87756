"""The qemu guest harness: its pieces without qemu, then (slow) a real boot that shows
the kernel delayJC direction: a 5 ms window gives fewer jbd2 commits than none."""
import os
import shutil
import subprocess
import tarfile

import pytest

from abtlab.errors import ConfigError, RunError, UnavailableError
from abtlab.system import cleanup, guest

INFO = ("12 transactions (10 requested), each up to 2048 blocks\n"
        "3 delayjc windows, 5 delayjc resets\naverage: \n  0ms waiting for transaction\n")


def test_parse_info_reads_stock_and_patched_counters():
    assert guest.parse_info(INFO) == {"transactions": 12, "requested": 10,
                                      "delayjc_windows": 3, "delayjc_resets": 5}
    stock = "7 transactions (0 requested), each up to 2048 blocks\naverage: \n"
    assert guest.parse_info(stock) == {"transactions": 7, "requested": 0}
    with pytest.raises(RunError):
        guest.parse_info("garbage")


@pytest.mark.skipif(not shutil.which("cpio"), reason="cpio (Debian package cpio) not installed")
def test_run_cpio_unpacks_with_cpio(tmp_path):
    blob = guest.run_cpio({"run.env": b"A=1\n", "odd": b"12345"})
    (tmp_path / "r.gz").write_bytes(blob)
    subprocess.run("zcat r.gz | cpio -id --quiet", shell=True, cwd=tmp_path, check=True)
    assert (tmp_path / "abt" / "run.env").read_bytes() == b"A=1\n"
    assert (tmp_path / "abt" / "odd").read_bytes() == b"12345"


def test_run_env_quotes_every_word(tmp_path):
    run = guest.GuestRun(argv=["printf", "%s|", "a b", "it's", "$HOME"], window_us=2000,
                         max_resets=8, env={"X": "y z"})
    script = guest._run_env(run) + 'echo "$WINDOW_US $MAX_RESETS $MOUNT_OPTS"\nrun_workload\n'
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    assert out == "2000 8 defaults\na b|it's|$HOME|"


def test_qemu_argv_uses_tcg_and_throttles_only_when_asked():
    argv = guest.qemu_argv("bz", "rd", "d.img", "o.img", iops=0)
    assert argv[:3] == [guest.QEMU, "-accel", "tcg"] and "-no-reboot" in argv
    assert not any("throttling" in a for a in argv)
    assert any("throttling.iops-total=50" in a for a in guest.qemu_argv("b", "r", "d", "o", iops=50))
    with pytest.raises(ConfigError) as err:
        guest.qemu_argv("b", "r", "d", "o", iops=-1)
    assert err.value.field == "guest iops"
    with pytest.raises(ConfigError):
        guest.qemu_argv("b", "r", "d", "o", smp=9)


def _files(**over):
    f = {"status": b"ok\n", "rc": b"0\n", "stdout": b"", "stderr": b"", "dmesg": b"",
         "info.before": INFO.encode(), "info.after": INFO.encode()}
    f.update(over)
    return f


def test_result_fails_on_kernel_bug_or_guest_failure():
    assert guest._result(_files(), "boot ok\n", 1.5).rc == 0
    with pytest.raises(RunError, match="sleeping function"):
        guest._result(_files(), "BUG: sleeping function called from invalid context\n", 1)
    with pytest.raises(RunError, match="mount"):
        guest._result(_files(status=b"mount\n"), "", 1)


def test_read_out_reads_the_tar_the_guest_writes(tmp_path):
    img = tmp_path / "out.img"
    with open(img, "wb") as f:
        f.truncate(1 << 20)
    src = tmp_path / "out"
    src.mkdir()
    (src / "rc").write_text("0\n")
    with open(img, "r+b") as f, tarfile.open(fileobj=f, mode="w") as tar:
        tar.add(src / "rc", arcname="./rc")
    assert guest._read_out(img) == {"rc": b"0\n"}
    with pytest.raises(RunError, match="no results"):
        (tmp_path / "empty.img").write_bytes(b"x" * 1024)
        guest._read_out(tmp_path / "empty.img")


def test_start_qemu_kills_on_timeout(tmp_path):
    pid_file = tmp_path / "pid"
    with pytest.raises(RunError, match="did not finish"):
        guest._start_qemu(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 30", "x"],
                          tmp_path / "c.log", 2.0)
    assert not any("qemu" in p for p in cleanup.pending())
    assert not os.path.exists(f"/proc/{pid_file.read_text().strip()}")


def _boot_commits(tmp_path, window_us, threads=16):
    run = guest.GuestRun(argv=["/abt/abt-metarates", "--workers", str(threads), "--files", "8",
                               "--dir", "/mnt/data", "--trace", "/out/ops.trace"],
                         window_us=window_us, max_resets=8)
    res = guest.boot(run, tmp_path / f"w{window_us}", image_mb=128, timeout=300)
    assert res.rc == 0, res.stderr
    a, b = res.info_after, res.info_before
    return a["transactions"] - b["transactions"], a["delayjc_windows"] - b["delayjc_windows"]


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a first kernel build on a busy 2-core machine
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install the guest's Debian packages")
def test_guest_window_gives_fewer_commits(tmp_path):
    """16 workers x 8 create+fsync in the TCG guest: 5 ms window vs stock (window 0)."""
    ok, why = guest.available()
    if not ok:
        pytest.skip(why)
    try:
        guest.ensure_built()
    except UnavailableError as exc:
        pytest.skip(str(exc))
    stock, stock_windows = _boot_commits(tmp_path, 0)
    delayed, windows = _boot_commits(tmp_path, 5000)
    assert stock_windows == 0          # window 0 is the stock path: no delayed commit
    assert windows > 0                 # the knob reached jbd2 and opened windows
    assert delayed < stock, f"commits: window 5ms {delayed}, stock {stock}"
