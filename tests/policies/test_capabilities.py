"""What a policy needs to run, asked by the run paths instead of its kind."""
import pytest

from abtlab import policies


@pytest.mark.parametrize("spec, preload, patched, knobs, journal, mechanism", [
    ("ext4", False, False, (), True, "stock jbd2"),
    ("nojc", False, False, (), False, "stock jbd2"),
    ("batch:min_us=0,max_us=100", False, False, (), True, "stock jbd2"),
    ("delayjc:window=16ms", True, False, (), True, "LD_PRELOAD libdelayjc.so"),
    ("kdelayjc:window=2ms,max_resets=8", False, True,
     (("delayjc_max_resets", 8), ("delayjc_window_us", 2000)), True, "kernel delayjc (jbd2 patch)"),
])
def test_each_policy_says_what_it_needs(spec, preload, patched, knobs, journal, mechanism):
    pol = policies.parse(spec)
    assert (pol.needs_preload, pol.needs_patched_kernel, pol.kernel_knobs(), pol.journal,
            pol.mechanism) == (preload, patched, knobs, journal, mechanism)
    assert pol.needs_kernel_knobs == bool(knobs)


def test_the_window_is_written_after_its_bound():
    names = [k for k, _ in policies.parse("kdelayjc:window=1ms").kernel_knobs()]
    assert names == ["delayjc_max_resets", "delayjc_window_us"]


@pytest.mark.parametrize("spec, window, mode, sim", [
    ("ext4", 0.0, "ext4", (0.0, 0.0)),
    ("nojc", None, "nojc", (0.0, 0.0)),
    ("batch:min_us=10,max_us=100", None, "batch", (10.0, 100.0)),
    ("delayjc:window=16ms", 16000.0, "fixed", (16000.0, 0.0)),
    ("delayjc:adaptive", None, "adaptive", (0.0, 0.0)),
    ("kdelayjc:window=2ms,max_resets=8", 2000.0, None, None),
])
def test_each_policy_says_its_window_and_its_simulator_model(spec, window, mode, sim):
    """The delay decision, the studies' tables and the simulator ask these, not the kind."""
    pol = policies.parse(spec)
    assert (pol.window_us, pol.sim_mode) == (window, mode)
    assert pol.tunes_window == (mode == "adaptive")
    if sim is not None:
        assert pol.sim_window() == sim


def test_each_kind_is_one_class_in_one_table():
    labels = {"ext4": "ext4", "nojc": "nojc", "batch": "batch:min_us=1,max_us=2",
              "delayjc": "delayjc:window=4ms", "kdelayjc": "kdelayjc:window=1ms"}
    assert set(policies.KINDS) == set(labels)
    for kind, cls in policies.KINDS.items():
        pol = policies.parse(labels[kind])
        assert type(pol) is cls and pol.kind == kind and policies.parse(pol.label) == pol


def test_the_simulator_refuses_a_policy_it_has_no_model_of():
    from abtlab.errors import ConfigError
    from abtlab.sim import params
    with pytest.raises(ConfigError) as err:
        params._policy_code(policies.parse("kdelayjc:window=2ms"))
    assert err.value.field == "policy" and "delayjc" in err.value.accepted
    assert params._policy_code(policies.parse("delayjc:window=2ms"))[1:] == (2000.0, 0.0)
