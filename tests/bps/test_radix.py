import numpy as np
import pytest

from abtlab.bps import radix


@pytest.mark.parametrize("dtype", [np.uint64, np.int64, np.float64])
def test_radix_equals_numpy_sort(dtype, monkeypatch):
    monkeypatch.setattr(radix, "MIN_SIZE", 1000)
    rng = np.random.default_rng(1)
    a = (rng.integers(0, 2 ** 40, 50_000) if dtype != np.float64 else rng.random(50_000) * 1e3).astype(dtype)
    a[:10] = a[10]  # ties
    np.testing.assert_array_equal(radix.sort_keys(a), np.sort(a))


def test_negative_and_special_values_fall_back(monkeypatch):
    monkeypatch.setattr(radix, "MIN_SIZE", 10)
    a = np.array([3.0, -1.0, -0.0, 2.0, 0.0] * 5)
    np.testing.assert_array_equal(radix.sort_keys(a), np.sort(a))
    b = np.array([5, -3, 2, 0, -7] * 5, dtype=np.int64)
    np.testing.assert_array_equal(radix.sort_keys(b), np.sort(b))


def test_overlap_time_same_with_radix(monkeypatch):
    from abtlab import bps
    monkeypatch.setattr(radix, "MIN_SIZE", 1000)
    rng = np.random.default_rng(2)
    s = rng.integers(0, 10 ** 9, 20_000).astype(np.int64)
    e = s + rng.integers(1, 10 ** 5, 20_000)
    order = np.argsort(s)
    ref = bps.overlap_time(s[order], e[order])  # sorted path: running maximum
    assert bps.overlap_time(s, e) == ref        # shuffled path: radix-sorted columns
