"""Simulated vs measured comparison (abtlab.sim.validate) on small synthetic data."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from abtlab.errors import ConfigError
from abtlab.sim.validate import compare, simulate_like


def _ds(values, commits, freq_mode, device="none"):
    dims = ("freq_ghz", "threads", "device", "rep")
    coords = {"freq_ghz": [1.6, 3.3], "threads": [4, 8], "device": [device], "rep": [0, 1]}
    return xr.Dataset({"throughput": (dims, np.asarray(values, float)[..., None, :]),
                       "commits": (dims, np.asarray(commits, float)[..., None, :])},
                      coords=coords, attrs={"freq_mode": freq_mode, "backend": "iozone"})


def test_relative_errors_per_point():
    real = _ds([[[10, 30], [40, 40]], [[5, 5], [1, 3]]], [[[2, 2], [4, 4]], [[1, 3], [5, 5]]], "emulated")
    sim = _ds([[[22, 22], [20, 20]], [[5, 5], [4, 4]]], [[[2, 2], [2, 2]], [[4, 4], [5, 5]]],
              "simulated", device="loop")
    c = compare(real, sim)
    np.testing.assert_allclose(c.relerr_throughput.values, [[0.1, -0.5], [0.0, 1.0]])
    np.testing.assert_allclose(c.relerr_commits.values, [[0.0, -0.5], [1.0, 0.0]])
    assert c.attrs["sim_freq_mode"] == "simulated" and float(c.real_throughput[0, 0]) == 20


def test_only_shared_points_and_bad_input():
    real = _ds(np.ones((2, 2, 2)), np.ones((2, 2, 2)), "emulated")
    sim = real.sel(threads=[8]).copy()
    assert compare(real, sim).sizes["threads"] == 1
    with pytest.raises(ConfigError) as e:
        compare(real, real.mean("threads"))
    assert e.value.field == "sim_ds"
    with pytest.raises(ConfigError) as e:
        compare(real, real, metrics=["fcr"])
    assert e.value.field == "metrics"


def test_simulate_like_uses_the_real_levels():
    real = _ds(np.ones((2, 2, 2)), np.ones((2, 2, 2)), "emulated")
    sim = simulate_like(real, {"cores": 2}, reps=1, file_size=64 * 1024)
    assert list(sim.threads.values) == [4, 8] and sim.attrs["freq_mode"] == "simulated"
    assert compare(real, sim).sizes == {"freq_ghz": 2, "threads": 2}
    with pytest.raises(ConfigError):
        simulate_like(real.assign_attrs(backend="fio"), {})


def test_clock_ratios_side_by_side():
    """Each metric at the fast clock over the slow one, measured beside simulated."""
    from abtlab.sim.validate import format_ratios, ratios
    real = _ds([[[10, 30], [40, 40]], [[5, 5], [1, 3]]], [[[2, 2], [4, 4]], [[1, 3], [5, 5]]], "virtual")
    sim = _ds([[[22, 22], [20, 20]], [[5, 5], [4, 4]]], [[[2, 2], [2, 2]], [[4, 4], [5, 5]]],
              "simulated", device="loop")
    r = ratios(compare(real, sim))
    np.testing.assert_allclose(r.real_throughput.values, [5 / 20, 2 / 40])
    np.testing.assert_allclose(r.sim_throughput.values, [5 / 22, 4 / 20])
    np.testing.assert_allclose(r.sim_commits.values, [4 / 2, 5 / 2])
    text = format_ratios(r)
    assert "3.3 / 1.6 GHz" in text and "threads=8: throughput 0.05 vs 0.20" in text
    with pytest.raises(ConfigError) as e:
        ratios(compare(real, sim).sel(freq_ghz=[3.3]))
    assert e.value.field == "freq_ghz"
