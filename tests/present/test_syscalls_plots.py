"""abtlab.present.syscalls_plots: the spinlock vs mutex heatmaps beside the paper's grid
and the direct vs buffered speedups (data: abtlab.studies.syscalls)."""
from __future__ import annotations

import numpy as np
import pytest

from abtlab.present import syscalls_plots as scp
from abtlab.studies import syscalls as sc

from tests.studies.syscalls_data import constructed_elapsed


def test_plot_lock_comparison_titles(tmp_path):
    ds = sc.add_lock_speedup(constructed_elapsed(np.full((3, 2), 1.5)))
    fig = scp.plot_lock_comparison(ds, path=tmp_path / "locks.png")
    titles = [ax.get_title() for ax in fig.axes]
    assert "measured here (2 hardware threads)" in titles[0]
    assert "i7-2600K (8 hardware threads), from the paper" in titles[1]
    assert "log2(here / paper)" in titles[2]
    assert (tmp_path / "locks.png").stat().st_size > 0


@pytest.mark.root
def test_plot_dio_comparison_of_a_small_real_grid(built_native, scratch_ext4, tmp_path):
    ds = sc.dio_grid(scratch_ext4.mountpoint, block_sizes=[4096, 16384], workloads=[1, 3],
                     reps=2, max_bytes=64 << 10)
    fig = scp.plot_dio_comparison(ds, path=tmp_path / "dio.png")
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert any("from the paper" in lb for lb in labels)
    assert any("measured here" in lb for lb in labels)
