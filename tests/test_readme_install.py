"""The README's install line says how to install abtlab: from the checkout or a wheel
built there (no package index serves it)."""
import re
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_the_readme_installs_from_the_checkout_or_a_built_wheel():
    flat = " ".join(README.split())
    assert "pip install -e ." in flat and "python -m build" in flat and "dist/abtlab-" in flat
    # never a bare `pip install abtlab` (or abtlab[...]) as if an index served it
    assert not re.search(r"`pip install '?abtlab(\[[a-z,]+\])?'?`", flat)
