"""The sensitivity sweep (abtlab.sim.explore): shape, signature logic, bad axes."""
from __future__ import annotations

import numpy as np
import pytest

from abtlab.errors import ConfigError
from abtlab.sim import explore

SMALL = dict(threads=24, reps=2)


def test_sweep_shape_and_signature():
    ds = explore.sensitivity(axes={"write_fixed_us": [30.0, 400.0], "data_flush": ["fsync", "commit"]},
                             **SMALL)
    assert dict(ds.sizes) == {"write_fixed_us": 2, "data_flush": 2, "policy": 2, "freq_ghz": 2}
    assert ds.attrs["freq_mode"] == "simulated"
    e = ds.sel(policy="ext4")
    ratio = e.throughput.sel(freq_ghz=3.3) / e.throughput.sel(freq_ghz=1.6)
    np.testing.assert_allclose(ds.ext4_speedup, ratio)
    want = ((ratio < 1) & (ds.fewer_batched) & (ds.more_commits) & (ds.delayjc_over_ext4 > 1))
    assert (ds.paper_like == want).all()
    assert np.all(ds.commits.sel(policy=ds.attrs["delay_policy"]) <= e.commits + 1e-9)
    table = explore.format_table(ds)
    assert len(table.splitlines()) == 1 + 4 and "paper-like" in table


def test_device_axis_goes_to_the_device():
    ds = explore.sensitivity(axes={"commit_fixed_us": [1000.0, 40000.0]}, **SMALL)
    w = ds.mean_write.sel(policy="ext4", freq_ghz=1.6)
    assert float(w.isel(commit_fixed_us=1)) > float(w.isel(commit_fixed_us=0))


@pytest.mark.parametrize("axes,field", [({"warp": [1]}, "axes.warp"),
                                        ({"freq_ghz": [1.0]}, "axes.freq_ghz"),
                                        ({"cores": []}, "axes.cores")])
def test_bad_axes_are_named(axes, field):
    with pytest.raises(ConfigError) as e:
        explore.sensitivity(axes=axes, **SMALL)
    assert e.value.field == field
