"""abtlab.stats.tdist gives scipy's Student t quantile without importing scipy."""
import math

import pytest
from scipy.special import stdtrit

from abtlab.stats.tdist import t_ppf, t_sf

DFS = [1, 1.5, 2, 3, 4.7, 9, 29, 99, 1000, 9999, 1e4, 12345.6, 1e6, 1e9, 1e13]
PS = [0.025, 0.3, 0.5001, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.999999]


@pytest.mark.parametrize("df", DFS)
def test_the_quantile_is_scipys(df):
    for p in PS:
        assert t_ppf(p, df) == pytest.approx(float(stdtrit(df, p)), rel=2e-11, abs=1e-14), p


def test_the_tail_inverts_the_quantile():
    for df in (2, 7.5, 300):
        assert t_sf(t_ppf(0.975, df), df) == pytest.approx(0.025, rel=1e-12)


def test_outside_its_domain_it_is_nan_as_scipys():
    for p, df in ((1.5, 3), (-0.1, 3), (0.9, 0), (0.9, -1), (0.9, math.nan), (math.nan, 3)):
        assert math.isnan(t_ppf(p, df)) and math.isnan(float(stdtrit(df, p)))
    assert (t_ppf(0.0, 3), t_ppf(0.5, 3), t_ppf(1.0, 3)) == (-math.inf, 0.0, math.inf)
