"""What a guest run's numbers depend on beyond its spec: the qemu that ran it, the kernel
build and the initramfs build. In virtual time one vCPU repeats exactly only when all
three are the same, so anything that compares two guest runs asks here first."""
from __future__ import annotations

from collections.abc import Mapping

__all__ = ["GUEST_BUILD_ATTRS", "build_differences", "describe_differences"]

GUEST_BUILD_ATTRS = ("qemu", "guest_kernel_build", "guest_initramfs_build")


def build_differences(a: Mapping, b: Mapping) -> dict:
    """{attr: (a's, b's)} for each guest build attr the two attr sets disagree on (a
    dataset's attrs, or a point's); empty when they ran the same builds or are not guest
    runs (an attr neither has is no difference)."""
    return {k: (a.get(k), b.get(k)) for k in GUEST_BUILD_ATTRS
            if (a.get(k) or b.get(k)) and a.get(k) != b.get(k)}


def describe_differences(diff: Mapping, names=("the first", "the second")) -> str:
    """One line saying which builds differ, or '' when none does."""
    if not diff:
        return ""
    parts = "; ".join(f"{k}: {a or 'none'} vs {b or 'none'}" for k, (a, b) in diff.items())
    return (f"{names[0]} and {names[1]} ran different guest builds ({parts}): "
            f"their virtual times need not match")
