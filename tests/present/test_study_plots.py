"""abtlab.present.study_plots: the delay window's trade-off and a run's commit timeline,
on a simulated delay sweep (abtlab.studies.notebook_studies)."""
import matplotlib
import numpy as np
import pytest

import abtlab.present.accessor  # noqa: F401  (registers ds.abt)
from abtlab.errors import ConfigError
from abtlab.present import study_plots
from abtlab.studies import notebook_studies as studies

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def delay_ds():
    return studies.delay_sweep(windows_ms=(1, 16), threads=(32,), freqs=(1.6, 3.3), reps=2)


def test_plots(delay_ds):
    assert len(study_plots.plot_delay_tradeoff(delay_ds).axes) == 2
    fig = study_plots.plot_commit_timeline(delay_ds)
    assert "SIMULATED" in fig.axes[0].get_title().upper()
    with pytest.raises(ConfigError, match="run_id"):
        study_plots.plot_commit_timeline(delay_ds, run_id=10 ** 6)


def test_commit_timelines_one_per_clock_or_a_line_saying_the_data_has_no_records(delay_ds, capsys):
    from abtlab.results.stored import reduced
    one = delay_ds.sel(policy="ext4")
    figs = study_plots.plot_commit_timelines(one, (1.6, 3.3))
    assert len(figs) == 2 and all("SIMULATED" in f.axes[0].get_title().upper() for f in figs)
    assert study_plots.plot_commit_timelines(reduced(one), (1.6, 3.3)) == []
    assert "No commit timeline: this data keeps no op and commit records" in capsys.readouterr().out


def test_commit_timeline_draws_each_threads_first_to_last_write(delay_ds):
    """One line per thread (up to max_threads), from its first write's start to its last
    write's end, in the classifier's thread order."""
    from abtlab.model import classify
    from abtlab.trace import Op
    rid = int(delay_ds.abt.run_ids(policy="ext4", freq_ghz=3.3)[0])
    fig = study_plots.plot_commit_timeline(delay_ds, run_id=rid, max_threads=20)
    ops = delay_ds.abt.ops(rid)
    writes, t0 = ops[ops["op"] == Op.WRITE], int(ops["t_start_ns"].min())
    tids = classify(ops, delay_ds.abt.commits(rid))["tid"][:20]
    want = [[(i, (writes["t_start_ns"][writes["tid"] == t].min() - t0) / 1e6),
             (i, (writes["t_end_ns"][writes["tid"] == t].max() - t0) / 1e6)] for i, t in enumerate(tids)]
    segs = [[(y, x) for x, y in seg] for seg in fig.axes[0].collections[0].get_segments()]
    np.testing.assert_allclose(np.array(segs, float), np.array(want, float))


def test_delay_tradeoff_ticks_are_the_windows_run(delay_ds):
    fig = study_plots.plot_delay_tradeoff(delay_ds)
    for ax in fig.axes:
        assert ax.get_xscale() == "log"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "16"]
        assert ax.get_xticks().tolist() == [1.0, 16.0]
