"""plot_metric: one line per policy with its 95% CI band, clipped to what the quantity
can be, and a label that says how few repetitions made a wide band."""
import matplotlib
import numpy as np
import pytest
import xarray as xr

matplotlib.use("Agg")

from abtlab.present.plots import plot_metric, plot_unblocked  # noqa: E402


def _ds(values, var="threads_clear_of_commits", threads=64):
    v = np.asarray(values, float)                                    # freq x rep
    return xr.Dataset({var: (("freq_ghz", "rep"), v)},
                      coords={"freq_ghz": [1.6, 3.3], "rep": np.arange(v.shape[1]),
                              "policy": "ext4", "threads": threads},
                      attrs={"freq_mode": "simulated", "backend": "sim"})


def _band(fig):
    poly = fig.axes[0].collections[0]
    y = np.concatenate([p.vertices[:, 1] for p in poly.get_paths()])
    return y.min(), y.max()


@pytest.mark.parametrize("var,threads,lo,hi", [("threads_clear_of_commits", 64, 0.0, 64.0),
                                               ("commits", 64, 0.0, None)])
def test_band_is_clipped_to_the_possible_range(var, threads, lo, hi):
    fig = plot_metric(_ds([[2, 60], [30, 64]], var, threads), var)   # n=2: a t-band of +-hundreds
    ymin, ymax = _band(fig)
    assert ymin == pytest.approx(lo)
    if hi is not None:
        assert ymax == pytest.approx(hi)
    else:
        assert ymax > 64                                              # commits have no upper bound
    label = fig.axes[0].get_legend_handles_labels()[1][0]
    assert label == "ext4 (n=2)"


def test_band_keeps_negative_values_when_the_data_has_them():
    fig = plot_metric(_ds([[-5, 1], [-3, 4]], "delta"), "delta")
    assert _band(fig)[0] < -5


def test_enough_repetitions_need_no_note():
    rng = np.random.default_rng(1)
    fig = plot_metric(_ds(rng.normal(50, 2, (2, 8)), "throughput"), "throughput")
    assert fig.axes[0].get_legend_handles_labels()[1][0] == "ext4"


def _counts(evidence=True):
    ds = _ds([[10, 12], [30, 34]])
    ev = ds["threads_clear_of_commits"] * 0 + (np.array([[8.0, 9.0], [20.0, 22.0]]) if evidence else np.nan)
    return ds.assign(unblocked_threads=ev)


def test_unblocked_beside_clear_of_commits_each_labelled():
    fig = plot_unblocked(_counts())
    left, right = fig.axes
    assert "unblocked threads (trace evidence)" in left.get_ylabel()
    assert "threads clear of commits (span overlap)" in right.get_ylabel()
    assert left.lines[0].get_ydata().tolist() == [8.5, 21.0]
    assert right.lines[0].get_ydata().tolist() == [11.0, 32.0]
    assert "simulated" in fig._suptitle.get_text().lower()


def test_unblocked_without_evidence_says_so():
    fig = plot_unblocked(_counts(evidence=False))
    left, right = fig.axes
    assert not left.lines and "no trace evidence" in left.texts[0].get_text()
    assert right.lines[0].get_ydata().tolist() == [11.0, 32.0]


def test_unblocked_faceted_has_a_row_per_count():
    ds = xr.concat([_counts().assign_coords(threads=t) for t in (64, 256)], "threads")
    fig = plot_unblocked(ds, facet="threads")
    assert len(fig.axes) == 4
    assert [a.get_title() for a in fig.axes] == ["threads=64", "threads=256"] * 2
    assert "unblocked" in fig.axes[0].get_ylabel() and "clear of commits" in fig.axes[2].get_ylabel()
