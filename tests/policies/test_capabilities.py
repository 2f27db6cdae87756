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
