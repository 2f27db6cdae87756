"""Which disk the guests get for each device profile: the drive model in 6.1's null_blk
(nullblk-disk.patch) and in 3.4.2's brd (k342/09-brd-disk-model.patch), fixed:<time> as
it says."""
from __future__ import annotations

import pytest

from abtlab.machines import guest_disk
from abtlab.machines.kernels import KERNELS


@pytest.mark.parametrize("profile", ["hdd7200", "hdd7200-nocache", "ssd-sata"])
def test_named_profiles_run_the_drive_model_in_null_blk(profile):
    d = guest_disk.for_profile(profile, 256)
    attrs = d.configfs(3)
    names = [k for k, _ in attrs]
    assert dict(attrs)["disk_model"] == profile and dict(attrs)["irqmode"] == "2"
    # null_blk's own latency and bandwidth cap are off: the model times every request
    assert dict(attrs)["completion_nsec"] == "0" and dict(attrs)["mbps"] == "0"
    # the model is the write cache (nullblk-disk.patch advertises it); null_blk's own off
    assert dict(attrs)["cache_size"] == "0"
    assert names.index("disk_fixed_ns") < names.index("disk_model")
    assert f"disk_model={profile}" in d.describe()["guest_disk"]


def test_fixed_profile_is_null_blk_s_own_timer():
    d = guest_disk.for_profile("fixed:12.67ms", 256)
    attrs = dict(d.configfs(0))
    assert (attrs["completion_nsec"], attrs["mbps"], attrs["irqmode"]) == ("12670000", "0", "2")
    assert "disk_model" not in attrs


@pytest.mark.parametrize("profile", ["hdd7200", "hdd7200-nocache", "ssd-sata"])
def test_3_4_2_runs_the_same_drive_model_in_brd(profile):
    d = guest_disk.for_profile(profile, 256, row=KERNELS["3.4.2"])
    assert isinstance(d, guest_disk.Brd)
    params = d.settings(0)
    names = [k for k, _ in params]
    # brd's own timer and bandwidth cap are off; disk_model last: it starts a fresh drive
    # with disk_fixed_ns, and every parameter is written every point (they outlive it)
    assert dict(params) == {"completion_nsec": "0", "mbps": "0", "disk_fixed_ns": "0",
                            "disk_model": profile}
    assert names[-1] == "disk_model"
    assert f"disk_model={profile}" in d.describe()["guest_disk"]
    assert "completion_nsec" not in d.describe()["guest_disk"]


def test_3_4_2_without_a_model_clears_the_one_the_last_point_set():
    for p, nsec in (("fixed:12.67ms", "12670000"), ("none", "0")):
        params = dict(guest_disk.for_profile(p, 256, row=KERNELS["3.4.2"]).settings(0))
        assert params["disk_model"] == "" and params["completion_nsec"] == nsec


def test_profiles_without_a_model_write_no_model_attributes():
    for p in ("none", "latency:seek=1,rot=1,bw=5,flush=1", "iops=100"):
        assert "disk_model" not in dict(guest_disk.for_profile(p, 256).configfs(0))
