import pytest

from abtlab.factors import levels
from abtlab.errors import ConfigError


def test_sizes():
    assert levels.parse_sizes("128k,1m,4096", "file_size") == [131072, 1048576, 4096]


@pytest.mark.parametrize("text", ["0", "abc", "12q", "-4k"])
def test_bad_size(text):
    with pytest.raises(ConfigError, match="file_size"):
        levels.parse_sizes(text, "file_size")


def test_ints():
    assert levels.parse_ints("16,64", "threads") == [16, 64]
    for bad in ("0", "x", "16,", ""):
        if bad == "16,":
            assert levels.parse_ints(bad, "threads") == [16]
            continue
        with pytest.raises(ConfigError, match="threads"):
            levels.parse_ints(bad, "threads")


def test_freq():
    ax = levels.parse_freq("emulated:1.6,2.0,3.3")
    assert ax.mode == "emulated" and ax.levels == [1.6, 2.0, 3.3] and ax.f_ref == 3.3
    assert levels.parse_freq("1.6,3.3", default_mode="simulated").mode == "simulated"


@pytest.mark.parametrize("text", ["1.6,3.3", "emulated:", "emulated:1.6,,3.3", "emulated:1.6,x",
                                  "turbo:3.3", "emulated:-1", "emulated:1.6,1.6"])
def test_bad_freq_names_field(text):
    with pytest.raises(ConfigError) as e:
        levels.parse_freq(text)
    assert e.value.field == "freq"


def test_freq_from_python_lists():
    assert levels.parse_freq([1.6, 3.3], default_mode="simulated").levels == [1.6, 3.3]
    assert levels.parse_freq(3.3, default_mode="simulated").levels == [3.3]
    with pytest.raises(ConfigError):
        levels.parse_freq([1.6, 3.3])  # a real backend must say emulated: or real:
