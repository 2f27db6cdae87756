"""`abtlab doctor` checks and the machine facts for dataset attrs."""
from __future__ import annotations

import os
import platform

from abtlab.system import cpufreq, doctor, facts

NAMES = {"root", "loop devices", "mkfs.ext4", "tracefs + jbd2 events", "block throttling",
         "cpufreq", "RAPL energy", "perf", "fio", "MPI", "C backends"}


def test_report_has_every_check_and_the_facts():
    checks = doctor.report()
    assert {c.name for c in checks if c.kind == "check"} == NAMES
    assert {c.name for c in checks if c.kind == "fact"} >= {"CPU", "memory", "disks"}
    by = {c.name: c for c in checks}
    assert by["root"].ok == (os.geteuid() == 0)
    assert by["cpufreq"].ok == cpufreq.available()[0]
    assert all(c.detail for c in checks)


def test_render_says_ok_or_no_with_the_reason():
    checks = [doctor.Check("root", True, "running as root"),
              doctor.Check("cpufreq", False, "no cpufreq here"),
              doctor.Check("CPU", True, "Some CPU: 2 logical", "fact")]
    text = doctor.render(checks)
    assert "ok  root" in text and "NO  cpufreq" in text and "no cpufreq here" in text
    assert text.index("machine") < text.index("Some CPU")


def test_missing_backend_build_is_reported(tmp_path, monkeypatch):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "abt-x.c").write_text("int main(void){return 0;}\n")
    monkeypatch.setattr(doctor, "BACKENDS", tmp_path)
    check = doctor._backends()
    assert not check.ok and "abt-x" in check.detail


def test_facts_collect():
    f = facts.collect()
    assert f["kernel"] == platform.release()
    assert f["cpu_logical"] == os.cpu_count()
    assert f["memory_bytes"] > 2**20 and f["cpu_model"]
    assert f["abtlab_version"]
    assert all(isinstance(v, (str, int)) for v in f.values())
