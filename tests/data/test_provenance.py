"""abtlab.data.provenance: which guest builds two runs differ in, said in one line."""
from abtlab.data.provenance import build_differences, describe_differences

A = {"qemu": "qemu 10.0.2 (Debian bookworm-backports, unpacked in /c)", "guest_kernel_build": "0290aa57974021f7",
     "guest_initramfs_build": "ab12", "policy": "ext4"}


def test_the_same_builds_differ_in_nothing():
    assert build_differences(A, dict(A, policy="nojc")) == {}
    assert describe_differences({}) == ""


def test_host_runs_have_no_guest_builds_to_differ_in():
    assert build_differences({"machine": "host"}, {"machine": "host"}) == {}


def test_each_differing_build_is_named_with_both_values():
    b = dict(A, qemu="qemu 7.2.22 (system)", guest_initramfs_build="cd34")
    diff = build_differences(A, b)
    assert set(diff) == {"qemu", "guest_initramfs_build"}
    line = describe_differences(diff, names=("serial", "cluster"))
    assert "serial and cluster ran different guest builds" in line
    assert "qemu 7.2.22 (system)" in line and "ab12 vs cd34" in line


def test_a_build_one_run_lacks_is_a_difference():
    diff = build_differences(A, {k: v for k, v in A.items() if k != "guest_kernel_build"})
    assert diff == {"guest_kernel_build": ("0290aa57974021f7", None)}
    assert "0290aa57974021f7 vs none" in describe_differences(diff)
