"""A check for tests that compare two guest runs number for number."""
def assert_same_guest_build(a, b):
    """Two guest datasets compared number for number must have run the same qemu, kernel
    build and initramfs: otherwise a mismatch says so instead of 'arrays are not equal'."""
    from abtlab.data.provenance import build_differences, describe_differences
    diff = build_differences(a.attrs, b.attrs)
    assert not diff, describe_differences(diff)
