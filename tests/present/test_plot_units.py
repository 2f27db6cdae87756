"""Plots label their axes in abtlab.data.display's units, from the variables' units."""
import matplotlib
import numpy as np

from abtlab.present.plots import plot_metric
from tests.run_data import make_run

matplotlib.use("Agg")


def _ylabel(ds, var):
    fig = plot_metric(ds, var)
    return fig.axes[0].get_ylabel(), fig.axes[0].get_lines()[0].get_ydata()


def test_rates_in_mib_s_times_in_ms_or_s_counts_by_name():
    ds = make_run(reps=3, base=4.19e9)
    label, y = _ylabel(ds, "throughput")
    assert label == "throughput (MiB/s)" and 3000 < np.nanmax(y) < 5000
    ds["mean_commit_wait"] = ds["throughput"] * 0 + 0.03
    ds["mean_commit_wait"].attrs["units"] = "s"
    label, y = _ylabel(ds, "mean_commit_wait")
    assert label == "mean commit wait (ms)" and np.allclose(y, 30)
    ds["elapsed"] = ds["throughput"] * 0 + 2.5
    ds["elapsed"].attrs["units"] = "s"
    assert _ylabel(ds, "elapsed")[0] == "elapsed (s)"
    ds["commits"] = ds["throughput"] * 0 + 5
    ds["commits"].attrs["units"] = "1"
    assert _ylabel(ds, "commits")[0] == "journal commits (commits)"
