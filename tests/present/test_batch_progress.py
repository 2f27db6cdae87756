"""abtlab.present.batch_progress: starts, ends as they come, an ETA from recorded
durations, and a wait on the machine's lock shown at once with its holder."""
import contextlib
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace as NS

from abtlab.present import report
from abtlab.present.batch_progress import BatchProgress, lock_holder, recorded_durations
from abtlab.present.report import Item, run_batch
from tests.present.test_report import _notebook


def test_a_batch_says_each_start_and_end_and_an_eta_from_the_last_durations(tmp_path, monkeypatch):
    # slow ends after fast whatever the machine's load: it waits for the file fast writes
    flag = tmp_path / "fast-done"
    slow = _notebook(tmp_path / "slow.ipynb", f"t = 3\nflag = {str(flag)!r}\n",
                     "import os, time\nwhile not os.path.exists(flag): time.sleep(0.05)\n"
                     "time.sleep(t)\n")
    fast = _notebook(tmp_path / "fast.ipynb", f"flag = {str(flag)!r}\n",
                     "open(flag, 'w').close()\nprint('quick')\n")
    store = tmp_path / "durations.json"
    monkeypatch.setattr(report, "BatchProgress",
                        lambda *a, **k: BatchProgress(*a, **k, store=store))
    items = [Item(slow, {}, "slow"), Item(fast, {}, "fast")]
    lines = []
    run_batch(items, tmp_path / "out", workers=2, progress=lines.append)
    assert lines[0].endswith("ETA ? (from recorded durations)")
    starts = [ln for ln in lines if ln.startswith("start")]
    assert len(starts) == 2 and all("no recorded duration" in ln for ln in starts)
    ends = [ln.split()[3] for ln in lines if ln.startswith("ok")]
    assert ends == ["fast", "slow"]                 # as they end, not in item order
    assert set(recorded_durations(store)) == {"slow|default", "fast|default"}
    lines.clear()
    run_batch(items, tmp_path / "out2", workers=2, progress=lines.append)
    eta = float(lines[0].split("ETA ")[1].split(" s")[0])
    assert 2 <= eta <= 60 and "took" in lines[1]


def test_the_eta_counts_real_notebooks_one_after_another():
    items = [NS(name=n, notebook=NS(stem=n), parameters={}) for n in "abcde"]
    p = BatchProgress(items, "/nonexistent", 2, say=None, real={"a"}, store="/nonexistent/d.json")
    p.expected = {"a": 10.0, "b": 20.0, "c": 20.0}
    assert p.eta() == 10.0 + 20.0               # a alone, then b and c side by side
    p.finished |= {"a", "b"}
    assert p.eta() == 20.0
    p.expected = {"a": 0.0, "b": 30.0, "c": 10.0, "d": 10.0, "e": 10.0}
    p.finished = {"a"}
    items = [NS(name=n) for n in "cdeb"]
    assert [it.name for it in p.order(items)] == ["b", "c", "d", "e"]
    assert p.eta() == 30.0                      # b on one worker, c, d, e on the other


def _outside_holder(lock, tmp_path):
    """A process outside this one's tree (started by a shell that exits at once, as
    another user's run would be) holding the machine lock at `lock`; its pid."""
    code = ("import time\nfrom abtlab.system.runlock import MachineLock\n"
            f"with MachineLock('abtlab run iozone (test)', path={str(lock)!r}):\n"
            f"    open({str(tmp_path / 'held')!r}, 'w').write('1'); time.sleep(30)\n")
    script = tmp_path / "hold.py"
    script.write_text(code)
    pid = int(subprocess.run(["sh", "-c", f"{sys.executable} {script} >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True).stdout)
    t0 = time.monotonic()
    while not (tmp_path / "held").exists() and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    return pid


def test_a_wait_on_the_machine_lock_is_shown_within_two_seconds_with_its_holder(tmp_path):
    lock = tmp_path / "real.lock"
    pid = _outside_holder(lock, tmp_path)
    try:
        assert lock_holder(lock).startswith(f"pid {pid}: abtlab run iozone (test)")
        lines = []
        items = [NS(name="01", notebook=NS(stem="01"), parameters={})]
        p = BatchProgress(items, tmp_path, 1, say=lines.append, real={"01"},
                          store=tmp_path / "d.json", lock_path=lock)
        t0 = time.monotonic()
        p.begin("running 1 notebook")
        while not any(ln.startswith("waiting") for ln in lines) and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        assert time.monotonic() - t0 < 2
        assert f"pid {pid}: abtlab run iozone (test)" in lines[-1]
        os.kill(pid, signal.SIGKILL)
        t1 = time.monotonic()
        while not lines[-1].startswith("the machine is free") and time.monotonic() - t1 < 5:
            time.sleep(0.05)
        assert lines[-1].startswith("the machine is free")
        p.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
