"""abtlab.system.quietness: how quiet the host is, for doctor --host and a host run."""
import subprocess
import sys
import time
from pathlib import Path

from abtlab.cli import main
from abtlab.system import quietness
from abtlab.system.quietness import Quietness


def test_a_quiet_host_has_no_warnings_and_a_busy_one_says_why():
    calm = Quietness(cpus=2, load1=0.1, busy=0.02, governor="performance")
    assert calm.warnings() == []
    busy = Quietness(cpus=2, load1=3.0, busy=0.9, governor="none", others=["pid 9: abtlab run sim"],
                     swap_pages=12)
    text = " ".join(busy.warnings())
    assert "90% busy" in text and "load average 3.00 on 2 CPUs" in text
    assert "1 other abtlab process running: pid 9: abtlab run sim" in text and "swapping" in text
    assert "governor none" in busy.line() and "load 3.00" in busy.line()


def test_the_check_measures_this_host():
    q = quietness.check(sample=0.2)
    assert q.cpus >= 1 and 0 <= q.busy <= 1 and q.load1 >= 0 and q.governor
    assert q.swap_used_mib >= 0 and q.swap_pages >= 0


def test_another_abtlab_run_is_seen_and_this_one_is_not(tmp_path):
    script = tmp_path / "abtlab"                 # a process whose command line is `abtlab run ...`
    script.write_text("import time; time.sleep(20)\n")
    other = subprocess.Popen([sys.executable, str(script), "run", "sim"])
    try:
        time.sleep(0.3)
        seen = quietness.other_runs()
        assert f"pid {other.pid}: abtlab run sim" in seen
    finally:
        other.kill()


def test_doctor_host_prints_the_line_and_its_verdict(capsys):
    code = main(["doctor", "--host"])
    out = capsys.readouterr().out
    assert out.startswith("host: CPUs ") and "governor" in out and "swap used" in out
    assert code == (1 if "not quiet:" in out else 0)


def test_a_host_run_records_how_quiet_the_host_was(tmp_path, capsys, monkeypatch):
    """The fake backend is not simulated: it takes the machine as a host run does."""
    busy = Quietness(cpus=2, load1=3.0, busy=0.9, governor="none")
    monkeypatch.setattr(quietness, "check", lambda: busy)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # tests/: fakebackend
    from abtlab import backends
    from abtlab.sweep import loop as sweep
    backends.register("fake", "fakebackend:FakeBackend")
    ds = sweep.run("fake", {"threads": [2]}, reps=2, out=tmp_path / "r.nc", quiet=True)
    assert ds.attrs[quietness.ATTR] == busy.line()
    err = capsys.readouterr().err
    assert "abtlab: warning: the host is not quiet: the CPUs were 90% busy" in err


def test_a_datasets_line_reads_back_as_its_quietness():
    """parse(line()) gives back what the line says (the other runs by count), and a
    dataset with no such attr, or another form, has none."""
    q = quietness.Quietness(cpus=2, load1=3.73, busy=0.98, governor="none (no cpufreq here)",
                            others=["pid 1: abtlab sweep a.toml", "pid 2: abtlab run"], swap_used_mib=12,
                            swap_pages=3)
    back = quietness.parse(q.line())
    assert back.line() == q.line() and len(back.others) == 2 and back.busy == 0.98 and back.load1 == 3.73
    assert len(back.warnings()) == len(q.warnings()) == 4
    assert quietness.parse(None) is None and quietness.parse("quiet") is None


def test_busy_reason_names_a_busy_hosts_load_and_nothing_for_a_quiet_one():
    busy = quietness.Quietness(cpus=2, load1=6.44, busy=1.0, governor="none").line()
    quiet = quietness.Quietness(cpus=2, load1=0.1, busy=0.02, governor="none").line()
    assert quietness.busy_reason({quietness.ATTR: busy}).startswith(
        "the host was busy as the run started (CPUs 100% busy, load 6.44 on 2 CPUs")
    assert quietness.busy_reason({quietness.ATTR: quiet}) == "" and quietness.busy_reason({}) == ""
