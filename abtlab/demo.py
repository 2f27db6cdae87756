"""`make demo`: the study notebooks executed on their embedded defaults into an HTML report.

Each notebook runs on the real kernel (scratch ext4 on a loop device) where root and
loop devices are here and on the simulator otherwise (`force_sim`: always the
simulator); real-I/O notebooks run one at a time, the others two at a time. The
result is <out>/index.html linking one self-contained HTML page per notebook.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["run_demo", "run_demo_report", "demo_items"]


def demo_items(force_sim=False) -> list:
    """One report item per study notebook (notebooks/NN_*.ipynb), on its defaults."""
    from .report import NOTEBOOK_DIR, Item, notebook_parameters
    items = []
    for nb in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")):
        sim = force_sim and "data" in notebook_parameters(nb)
        items.append(Item(nb, {"data": "sim"} if sim else {}, nb.stem))
    return items


def run_demo_report(out="demo-out", quiet=False, force_sim=False):
    """Run every study notebook into out/; return (outcomes, out/index.html)."""
    from .report import run_batch
    return run_batch(demo_items(force_sim), Path(out), workers=2,
                     title="abtlab demo: does a faster CPU slow parallel I/O here?",
                     progress=None if quiet else print)


def run_demo(out="demo-out", quiet=False, force_sim=False) -> Path:
    """Run every study notebook into out/; return out/index.html."""
    return run_demo_report(out, quiet, force_sim)[1]
