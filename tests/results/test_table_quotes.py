"""Quotes of the labs whose answer is a table (lab 6's ranking, lab 7's policy table):
computed by the lab's own answer function from the stored runs, on constructed runs."""
import numpy as np
import pytest
import xarray as xr

from abtlab.errors import ConfigError
from abtlab.results.quotes import quote
from abtlab.results.table_quotes import summary
from abtlab.studies import lab_studies


def _bps_runs(noise, n=12, seed=1):
    """Runs where BPS falls exactly as run time rises (Table 1's direction) and the other
    metrics are noise around a constant (noise=0: every metric but BPS is pure noise)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(1.0, 3.0, n)
    data = {"runtime": ("run", t), "bps": ("run", 100.0 / t + noise * rng.normal(size=n))}
    for m in ("iops", "bandwidth", "arpt"):
        data[m] = ("run", 50.0 + rng.normal(size=n))
    return xr.Dataset(data, attrs={"source": "constructed runs"})


def test_rank_quotes_the_labs_ranking_and_its_winner():
    ds = _bps_runs(noise=0.0)
    table = lab_studies.bps_table(ds)
    bps = table.set_index("metric").loc["bps"]
    assert quote(ds, "rank", metric="bps") == f"{bps.normalized:+.2f} [{bps.ci_low:+.2f}, {bps.ci_high:+.2f}]"
    assert bps.normalized > 0.9 and quote(ds, "winner") == "bps" == table.attrs["winner"]
    assert quote(ds, "levels", dim="run") == "12"
    assert "winner: bps" in summary(ds, "runtime")


def test_winner_says_none_measurable_where_no_lead_excludes_0():
    rng = np.random.default_rng(3)
    flat = xr.Dataset({v: ("run", rng.normal(10.0, 1.0, 6)) for v in ("runtime", "bps", "iops",
                                                                       "bandwidth", "arpt")})
    assert lab_studies.bps_table(flat).attrs["winner"] is None
    assert quote(flat, "winner") == "none measurable"


def _sera_runs(sera_energy):
    pol = ["fixed-high", "fixed-low", "ondemand", "sera"]
    energy = np.array([[10.0, 11.0, 9.0], [9.0, 9.9, 8.1], [9.5, 10.4, 8.6], list(sera_energy)])
    time = np.array([[1.0, 1.1, 0.9]] * 4)
    return xr.Dataset({"time_s": (("policy", "rep"), time), "energy_j": (("policy", "rep"), energy),
                       "edp": (("policy", "rep"), time * energy),
                       "freqs_ghz": ("policy", ["2.5", "0.8", "1.3,2.5", "1.3"])},
                      coords={"policy": pol, "rep": [0, 1, 2]},
                      attrs=dict(workload="constructed", seeds=3, time_mode="simulated", energy_mode="modelled"))


def test_policy_quotes_the_labs_geometric_mean_over_seeds():
    ds = _sera_runs((8.0, 8.8, 7.2))        # 0.8 of fixed-high's at every seed
    row = lab_studies.sera_table(ds).set_index("policy").loc["sera"]
    assert quote(ds, "policy", policy="sera", of="energy") == \
        f"{row.energy_ratio:.2f} [{row.energy_ratio_lo:.2f}, {row.energy_ratio_hi:.2f}]" == "0.80 [0.80, 0.80]"
    assert quote(ds, "policy", policy="sera", of="time") == "1.00 [1.00, 1.00]"
    noisy = quote(_sera_runs((7.0, 11.5, 8.0)), "policy", policy="sera")
    lo, hi = (float(x) for x in noisy.split("[")[1].rstrip("]").split(", "))
    assert lo < 1 < hi                     # a CI that includes no-difference is quoted as such


@pytest.mark.parametrize("field, kw, named", [
    ("rank", {"metric": "flops"}, "metric"),
    ("policy", {"policy": "sera", "of": "power"}, "of"),
    ("policy", {"policy": "turbo"}, "policy"),
    ("levels", {"dim": "case"}, "dim"),
    ("winner", {"metric": "bps"}, "quote winner"),
])
def test_a_table_quote_refuses_what_the_table_has_not(field, kw, named):
    ds = _bps_runs(0.0) if field in ("rank", "winner", "levels") else _sera_runs((8.0, 8.8, 7.2))
    with pytest.raises(ConfigError) as exc:
        quote(ds, field, **kw)
    assert exc.value.field == named
