import xarray as xr

from abtlab.stats.values import provenance_label


def test_labels_say_what_was_emulated():
    assert provenance_label(xr.Dataset(attrs={"freq_mode": "real"})) == "measured"
    assert provenance_label(xr.Dataset(attrs={"freq_mode": "simulated"})) == "SIMULATED"
    mixed = xr.Dataset(attrs={"freq_mode": "emulated", "device_profile": "none | hdd7200",
                              "device_emulation": "emulated device (FUSE latency model)"})
    assert provenance_label(mixed) == "measured, emulated frequency, emulated device (hdd7200)"
    virtual = provenance_label(xr.Dataset(attrs={"freq_mode": "virtual", "clock": "virtual"}))
    assert virtual.startswith("measured, frequency by icount shift") and "VIRTUAL time" in virtual
