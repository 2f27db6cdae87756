"""`abtlab doctor` checks and the machine facts for dataset attrs."""
from __future__ import annotations

import os
import platform

from abtlab.backends import doctor
from abtlab.system import cpufreq, facts

NAMES = {"root", "loop devices", "mkfs.ext4", "tracefs + jbd2 events", "block throttling",
         "cpufreq", "RAPL energy", "perf", "iozone (backend iozone-tool)",
         "mdtest (backend mdtest)", "fio (backend fio)", "MPI", "C backends"}


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


def test_tools_listed_with_where_found_or_how_to_get_them(tmp_path, monkeypatch):
    tool = tmp_path / "iozone"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("ABTLAB_MDTEST", raising=False)
    monkeypatch.setenv("ABTLAB_IOZONE", str(tool))
    by = {c.name: c for c in doctor.report()}
    assert by["iozone (backend iozone-tool)"].ok
    assert by["iozone (backend iozone-tool)"].detail == str(tool)
    md = by["mdtest (backend mdtest)"]
    assert not md.ok and "ABTLAB_MDTEST" in md.detail and "hpc/ior" in md.detail
    monkeypatch.setenv("ABTLAB_IOZONE", str(tmp_path / "missing"))
    bad = {c.name: c for c in doctor.report()}["iozone (backend iozone-tool)"]
    assert not bad.ok and "ABTLAB_IOZONE" in bad.detail
