"""`abtlab doctor` checks and the machine facts for dataset attrs."""
from __future__ import annotations

import os
import platform
import subprocess

from abtlab import about, backends
from abtlab.machines import doctor
from abtlab.machines.kernels import KERNELS
from abtlab.machines import guest
from abtlab.system import cpufreq, facts

NAMES = {"root", "loop devices", "mkfs.ext4", "tracefs + jbd2 events", "block throttling",
         "cpufreq", "RAPL energy", "perf", "iozone (backend iozone-tool)",
         "mdtest (backend mdtest)", "fio (backend fio)", "MPI", "abtlab files", "C programs",
         "guest machine"}
GUEST = {"qemu", "guest kernel 6.1", "guest initramfs", "guest kernel 3.4.2"}
KERNEL = about.NATIVE / "kernel"


def test_report_has_every_check_and_the_facts():
    checks = doctor.report([backends.get(n) for n in backends.names()])
    assert {c.name for c in checks if c.kind == "check"} == NAMES | (GUEST if guest.available()[0] else set())
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
    monkeypatch.setattr(doctor, "NATIVE", tmp_path)
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
    drivers = [backends.get(n) for n in ("iozone-tool", "mdtest", "fio")]
    by = {c.name: c for c in doctor.report(drivers)}
    assert by["iozone (backend iozone-tool)"].ok
    assert by["iozone (backend iozone-tool)"].detail == str(tool)
    md = by["mdtest (backend mdtest)"]
    assert not md.ok and "ABTLAB_MDTEST" in md.detail and "hpc/ior" in md.detail
    from abtlab.backends import mdtest
    assert md.detail.endswith(f"({mdtest.HOW})")     # the driver's own advice, not a copy
    monkeypatch.setenv("ABTLAB_IOZONE", str(tmp_path / "missing"))
    bad = {c.name: c for c in doctor.report(drivers)}["iozone (backend iozone-tool)"]
    assert not bad.ok and "ABTLAB_IOZONE" in bad.detail


def test_left_out_programs_are_named_with_the_builds_reason(tmp_path, monkeypatch):
    (tmp_path / "slowdisk").mkdir()
    (tmp_path / "slowdisk" / "abt-slowdisk.c").write_text("int main(void){return 0;}\n")
    (tmp_path / "build.log").write_text("skipping slowdisk/abt-slowdisk: pkg-config finds no fuse3\n")
    monkeypatch.setattr(doctor, "NATIVE", tmp_path)
    check = doctor._backends()
    assert not check.ok and "pkg-config finds no fuse3" in check.detail and str(tmp_path) in check.detail


def test_files_say_checkout_here():
    check = doctor._files()
    assert check.ok and check.detail == f"checkout {about.ROOT}" and not about.INSTALLED


def _fake_qemu(folder, version):
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "qemu-system-x86_64"
    exe.write_text(f"#!/bin/sh\necho 'QEMU emulator version {version} (test)'\n")
    exe.chmod(0o755)
    return exe


def test_qemu_is_the_one_qemu_sh_would_pick(tmp_path, monkeypatch):
    system = _fake_qemu(tmp_path / "bin", "7.2.22")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("ABTLAB_QEMU_CACHE", str(tmp_path / "cache"))
    old = doctor._qemu()
    assert old.ok and "7.2.22" in old.detail and str(system) in old.detail
    assert "one vCPU" in old.detail and "bookworm-backports" in old.detail
    cached = _fake_qemu(tmp_path / "cache" / "root/usr/bin", "10.0.2")
    new = doctor._qemu()
    assert new.ok and new.detail == f"QEMU 10.0.2 ({cached})"
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("ABTLAB_QEMU_CACHE", str(tmp_path / "empty"))
    none = doctor._qemu()
    assert not none.ok and "no qemu-system-x86_64" in none.detail


def test_kernel_cache_key_is_build_kernel_sh_s(tmp_path, monkeypatch):
    key = subprocess.run("cat delayjc.patch legacy.patch nullblk-disk.patch ../include/abt_disk.h "
                         "guest.config build.env | sha256sum | cut -c1-16",
                         shell=True, cwd=KERNEL, capture_output=True, text=True, check=True).stdout.strip()
    assert KERNELS["6.1"].build_key() == KERNELS["6.1-legacy"].build_key() == key
    monkeypatch.setenv("ABTLAB_KERNEL_CACHE", str(tmp_path))
    cold = doctor.Check("guest kernel 6.1", *KERNELS["6.1"].build_check())
    assert not cold.ok and "first guest run builds it" in cold.detail and "CPU-minutes" in cold.detail
    (tmp_path / key).mkdir()
    (tmp_path / key / "bzImage").write_bytes(b"x" * 2_000_000)
    warm = {c.name: c for c in doctor._kernels()}["guest kernel 6.1"]
    assert warm.ok and warm.detail == f"cached {tmp_path / key / 'bzImage'} (2.0 MB)"


def test_initramfs_built_or_what_the_first_run_does(tmp_path, monkeypatch):
    monkeypatch.setattr(doctor, "NATIVE", tmp_path)
    cold = doctor._initramfs()
    assert not cold.ok and "first guest run builds it" in cold.detail
    (tmp_path / "kernel" / "out").mkdir(parents=True)
    (tmp_path / "kernel" / "out" / "initramfs.cpio.gz").write_bytes(b"x" * 4_000_000)
    assert doctor._initramfs().ok


def test_k342_source_cached_build_or_refusal(tmp_path, monkeypatch):
    monkeypatch.setenv("ABTLAB_K342_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ABTLAB_K342_GIT", raising=False)
    monkeypatch.setenv("ABTLAB_K342_SRC", str(tmp_path / "nosource"))
    none = doctor.Check("guest kernel 3.4.2", *KERNELS["3.4.2"].build_check())
    assert not none.ok and "no source at" in none.detail and "ABTLAB_K342_SRC" in none.detail
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Makefile").write_text("SUBLEVEL = 2\n")
    monkeypatch.setenv("ABTLAB_K342_SRC", str(tmp_path / "src"))
    cold = {c.name: c for c in doctor._kernels()}["guest kernel 3.4.2"]
    assert not cold.ok and f"from {tmp_path / 'src'}" in cold.detail and "CPU-minutes" in cold.detail


def test_tools_say_their_version_when_they_can(tmp_path, monkeypatch):
    tool = tmp_path / "iozone"
    tool.write_text("#!/bin/sh\n[ \"$1\" = -v ] && echo '       Version $Revision: 3.506 $'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("ABTLAB_IOZONE", str(tool))
    assert backends.get("iozone-tool").doctor_check()[1].reason == f"{tool} (3.506)"
    fio = tmp_path / "fio"
    fio.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo fio-3.33\n")
    fio.chmod(0o755)
    monkeypatch.setenv("ABTLAB_FIO", str(fio))
    assert backends.get("fio").doctor_check()[1].reason == f"{fio} (3.33)"
