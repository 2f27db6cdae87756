"""abtlab.present.kernel_history_plots: the ratio figure of the kernel history study (on
constructed datasets with known ratios, one row missing) and its run timelines."""
import math

import matplotlib
import pytest

from abtlab.errors import ConfigError
from abtlab.present import kernel_history_plots as khp
from abtlab.present import kernel_history_tables as kht
from abtlab.studies import kernel_history as kh

from tests.studies.kernel_history_data import constructed, history

matplotlib.use("Agg")


@pytest.fixture
def hist():
    return history()


def test_plot_ratios_labels_every_row(hist):
    fig = khp.plot_ratios(hist)
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0].startswith("host") and "emulated" in ticks[0]
    assert "virtual time" in ticks[1] and "not run" in ticks[2] and "SIMULATED" in ticks[3]
    assert any("cannot run here" in t.get_text() for t in ax.texts)
    assert "SIMULATED" in ax.get_title() and "VIRTUAL" in ax.get_title()
    assert any(line.get_ydata()[0] == 1.0 for line in ax.get_lines())   # the line at 1
    with pytest.raises(ConfigError):
        khp.plot_timelines(hist)                                          # no traces here


def test_plot_ratios_says_when_a_ci_is_unbounded(hist):
    hist.runs[kh.STOCK] = constructed([50.0, 60.0, 55.0], low=[10.0, 100.0, 20.0], machines=["guest:depth=256"])
    assert kht.ratio_table(hist).query("row == 'guest 6.1' and policy == 'ext4'").ci_high.item() == math.inf
    ax = khp.plot_ratios(hist).axes[0]
    marks = [t for t in ax.texts if "unbounded" in t.get_text()]
    assert len(marks) == 2                          # ext4 and nojc of that row (same low runs)
    assert all(abs(t.xy[0] - kh.ROWS.index(kh.STOCK)) < 0.5 for t in marks)


def test_timelines_of_the_simulator_only_say_simulated():
    h = kh.history_data("sim", kh.make_point(threads=8, policy="ext4", reps=2))
    fig = khp.plot_timelines(h)
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert len(titles) == 2 and all("SIMULATED" in t for t in titles)
