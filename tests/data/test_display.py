"""abtlab.data.display: one unit per quantity, numbers written out."""
import re

import numpy as np
import pandas as pd
import pytest

from abtlab.data.display import (WIDTH, display_unit, frame_text, number, quantity, to_display,
                                 wrap)

E_NOTATION = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize("x, shown", [
    (4323.4, "4323"), (39211.3, "39211"), (4.19e9, "4190000000"), (0.012345, "0.01235"),
    (1.5, "1.5"), (2.0, "2"), (1.43e-7, "0.000000143"), (-0.5, "-0.5"), (0, "0"), (7, "7"),
    (np.int64(12), "12"), (float("nan"), "-"), (None, "-"), (float("inf"), "inf")])
def test_a_number_keeps_four_significant_digits_written_out(x, shown):
    assert number(x) == shown
    assert not E_NOTATION.search(number(x))


def test_every_magnitude_is_written_without_an_exponent():
    for k in range(-12, 16):
        for m in (1.0, 3.14159, 9.9999):
            assert not E_NOTATION.search(number(m * 10.0 ** k)), (m, k)


@pytest.mark.parametrize("units, values, shown", [
    ("bytes/s", [4.19e9], ("MiB/s", 2 ** -20)),
    ("bytes/s", [2e11], ("GiB/s", 2 ** -30)),       # from 100 GiB/s: MiB/s would take six digits
    ("s", [0.296], ("ms", 1e3)), ("s", [12.0], ("s", 1.0)),
    ("ns", [5e6], ("ms", 1e-6)), ("files/s", [300.0], ("files/s", 1.0)), ("1", [3], ("1", 1.0))])
def test_the_display_unit_comes_from_the_stored_unit_and_the_largest_value(units, values, shown):
    assert display_unit(units, values) == shown


def test_a_quantity_carries_its_unit():
    assert quantity(4.19e9, "bytes/s") == "3996 MiB/s"
    assert quantity(0.0125, "s") == "12.5 ms"
    assert quantity(0.87, "1") == "0.87"


def test_a_mean_and_its_ci_share_one_unit():
    df = pd.DataFrame({"mean": [0.5, 0.9], "ci_low": [0.4, 0.8], "ci_high": [0.6, 1.2], "n": [3, 3]})
    out = to_display(df, {c: "s" for c in ("mean", "ci_low", "ci_high")})
    # ci_high reaches 1.2 s: the three columns are in s, not ms for two of them
    assert list(out.columns) == ["mean [s]", "ci_low [s]", "ci_high [s]", "n"]


def test_a_wide_table_and_a_long_title_fit_the_width():
    df = pd.DataFrame({f"a rather long column name {i}": [1.5e9 / (i + 1)] for i in range(8)})
    text = frame_text(df)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert not E_NOTATION.search(text)
    assert max(len(line) for line in wrap("word " * 60).splitlines()) <= WIDTH
