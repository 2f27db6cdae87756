"""Where a point runs: the host, the host with the kernel delayJC knobs, or a qemu guest
on one of the guest kernels.

spec           the machine factor (`--machine host | guest[:...]`), parsed once
kernels        the guest kernels and what differs between them, one row each
kernel_knobs   the guest kernel's knobs (legacy items, CFS settings, elevator, BFQ)
guest          qemu: building the guest, booting it for a batch of points
guest_disk     the scratch disk inside the guest (null_blk, or 3.4.2's brd)
guest_point    a group of points (a program's or a tool's) in one guest boot
host           a point (a program's or a tool's) on the host's scratch ext4
kernel_delayjc the kernel delayJC knobs of a patched host kernel
dispatch       the one place that sends a point to its machine, programs and tools alike
tool_runner    a third-party tool (IOzone, mdtest, fio): found, checked, its job and window
programs       how abtlab's C programs are found and answer
availability   whether something can run here, and why not
doctor         `abtlab doctor`: what can run on this machine, and why not
"""
