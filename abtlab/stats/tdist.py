"""Student's t quantile in plain Python, for the CIs every run's summary prints.

scipy.special (`stdtrit`, what scipy.stats.t.ppf calls) costs a new process ~0.5 s of
imports on a 2-core VM, more than a simulated `abtlab run` spends on its summary; this is
the same quantity, to ~2e-11 relative (tests/stats/test_tdist.py compares the two): the t
tail is a regularized incomplete beta function, evaluated by its continued fraction
(Lentz's method, as in Press et al., Numerical Recipes, sec. 6.4), and inverted by
Newton's method inside a bisection bracket; above 1e4 degrees of freedom, the
Cornish-Fisher expansion.
"""
from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["t_ppf", "t_sf"]

_TINY = 1e-300
_EPS = 1e-16
# beyond this many degrees of freedom the beta function's log-gammas cancel (~1e-6 lost
# at 1e9), and the Cornish-Fisher expansion in 1/df is exact to double precision
_LARGE_DF = 1e4


def _beta_fraction(a, b, x):
    """The continued fraction of I_x(a, b), converging for x < (a + 1) / (a + b + 2)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        for num in (m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + num / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def _ibeta(a, b, x, y):
    """The regularized incomplete beta function I_x(a, b); y = 1 - x, given exactly."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, y) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom, t >= 0."""
    s = df + t * t
    return 0.5 * _ibeta(df / 2.0, 0.5, df / s, t * t / s)


def _pdf(t, df):
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
                    - (df + 1) / 2 * math.log1p(t * t / df))


def _cornish_fisher(z, df):
    """The t quantile from the normal one z, to the 1/df^4 term (Abramowitz and Stegun,
    Handbook of Mathematical Functions, 26.7.5)."""
    z2 = z * z
    terms = (z * (z2 + 1) / 4,
             z * ((5 * z2 + 16) * z2 + 3) / 96,
             z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / 384,
             z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / 92160)
    return z + sum(c / df ** (k + 1) for k, c in enumerate(terms))


def t_ppf(p: float, df: float) -> float:
    """The p quantile of Student's t with df > 0 degrees of freedom: -inf and inf at
    p = 0 and 1, NaN for p outside [0, 1], df <= 0 or NaN."""
    if not (0.0 <= p <= 1.0) or not df > 0.0:
        return math.nan
    if p in (0.0, 1.0):
        return math.copysign(math.inf, p - 0.5)
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df == 1.0:
        return math.tan(math.pi * (p - 0.5))
    if df >= _LARGE_DF:
        return _cornish_fisher(NormalDist().inv_cdf(p), df)
    q = 1.0 - p
    lo, hi = 0.0, max(1.0, NormalDist().inv_cdf(p))
    while t_sf(hi, df) > q:
        lo, hi = hi, 2.0 * hi
    t = hi
    for _ in range(200):
        f = t_sf(t, df) - q            # decreasing in t
        if f > 0:
            lo = t
        else:
            hi = t
        nxt = t + f / _pdf(t, df)
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - t) <= 4 * _EPS * nxt:
            return nxt
        t = nxt
    return t
