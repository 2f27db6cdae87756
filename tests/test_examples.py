"""Every sweep spec in examples/ is one a user can rerun: it loads, its factors build
levels, its options are its driver's and its machines parse (nothing runs)."""
from pathlib import Path

import pytest

from abtlab.backends import get as get_backend
from abtlab.machines.spec import parse_machines
from abtlab.sweep.runner import build_levels
from abtlab.sweep.spec import load_spec

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))
SPECS = [p for p in EXAMPLES if "\nbackend" in "\n" + p.read_text()]


def test_the_examples_include_the_paper_cells():
    names = {p.name for p in SPECS}
    assert {"paper_cells.toml", "paper_cells_4vcpu.toml", "paper_cells_512k_slices.toml"} <= names


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_an_example_spec_loads_and_builds_its_levels(path):
    spec = load_spec(path)
    factors = dict(spec.factors)
    freq = factors.pop("freq", None)
    levels, options = build_levels(spec.backend, freq=freq, **factors)
    assert levels and all(levels.values())
    get_backend(spec.backend).validate_options({**options, **spec.options})
    if "machine" in levels:
        assert len(parse_machines(levels["machine"])) == len(levels["machine"])
