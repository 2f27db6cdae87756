"""abtlab.run's options -> typed levels: every factor a backend sweeps gets its default
or the parsed list, options pass through, and anything else is refused naming it."""
import pytest

from abtlab import backends
from abtlab.errors import ConfigError
from abtlab.sweep.runner import build_levels

backends.register("fake", "fakebackend:FakeBackend")


def test_defaults_and_parsed_lists():
    levels, options = build_levels("fake", threads="2,4,8")
    assert levels == {"policy": ["ext4"], "threads": [2, 4, 8]}
    assert options == {}


def test_policies_are_parsed_once_into_values_and_options_pass_through():
    """The levels are Policy values (parsed here, at the edge), shown by their canonical spec."""
    levels, options = build_levels("fake", policy="ext4;delayjc:window=16ms", delay=0.5)
    assert [type(p).__name__ for p in levels["policy"]] == ["Policy", "DelayPolicy"]   # a class per kind
    assert list(map(str, levels["policy"])) == ["ext4", "delayjc:window=16ms,max_resets=64,max_age=1s"]
    assert options == {"delay": 0.5}


@pytest.mark.parametrize("kw, field", [
    ({"threads": "two"}, "threads"),
    ({"colour": "red"}, "colour"),
    ({"policy": "ext5"}, "policy"),
])
def test_bad_values_are_refused_naming_the_field(kw, field):
    with pytest.raises(ConfigError) as err:
        build_levels("fake", **kw)
    assert err.value.field == field
