"""stats.ratios: what the slowdown table says of a point."""
import numpy as np


def test_identical_repetitions_are_one_run_not_a_ci():
    """A deterministic machine can repeat a run exactly: the table says so instead of a
    zero-width interval; one differing repetition gives the CI back."""
    import xarray as xr
    from abtlab.stats.ratios import slowdown, slowdown_table
    same = np.array([[2.0, 2.0, 2.0], [4.0, 4.0, 4.0]])
    ds = xr.Dataset({"throughput": (("freq_ghz", "rep"), same)},
                    coords={"freq_ghz": [1.6, 3.3], "rep": [0, 1, 2]})
    sd = slowdown(ds)
    assert bool(sd["identical"].sel(freq_ghz=3.3)) and float(sd["ratio"].sel(freq_ghz=3.3)) == 2.0
    assert "identical" in slowdown_table(sd)["slowdown"].iloc[1]
    varied = ds.copy(deep=True)
    varied["throughput"][1, 2] = 4.1
    row = slowdown_table(slowdown(varied))["slowdown"].iloc[1]
    assert "identical" not in row and row.startswith("2.0") and "[" in row
