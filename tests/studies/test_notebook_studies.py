"""abtlab.studies.notebook_studies: data sources of the notebooks, the delay table and the
optimal delay; and their figures (abtlab.present.study_plots)."""
import matplotlib
import numpy as np
import pytest

import abtlab.present.accessor  # noqa: F401  (registers ds.abt)
from abtlab.present import study_plots
from abtlab.studies import notebook_studies as studies
from abtlab.errors import ConfigError

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def delay_ds():
    return studies.delay_sweep(windows_ms=(1, 16), threads=(32,), freqs=(1.6, 3.3), reps=2)


def test_study_data_sources(tmp_path):
    sim = studies.study_data("sim", sim=dict(threads="16", freq="1.6,3.3"), reps=1)
    assert sim.attrs["freq_mode"] == "simulated" and sim.sizes["freq_ghz"] == 2
    path = tmp_path / "run.nc"
    import abtlab
    abtlab.save(sim, path)
    assert float(studies.study_data(str(path)).throughput.sum()) == pytest.approx(float(sim.throughput.sum()))
    # auto without a real configuration is the simulator
    assert studies.study_data("auto", sim=dict(threads="16"), reps=1).attrs["backend"] == "sim"


@pytest.mark.parametrize("kw, field", [(dict(data="nowhere.nc"), "data"), (dict(data="sim", reps=0), "reps")])
def test_study_data_bad_input(kw, field):
    with pytest.raises(ConfigError) as e:
        studies.study_data(**kw)
    assert e.value.field == field


def test_delay_policies():
    assert studies.delay_policies([2, 8], 5) == ["ext4", "delayjc:window=2ms,max_resets=5",
                                                 "delayjc:window=8ms,max_resets=5"]
    with pytest.raises(ConfigError, match="windows_ms"):
        studies.delay_policies([])
    with pytest.raises(ConfigError, match="max_resets"):
        studies.delay_policies([1], -1)


def test_delay_table_and_optimum(delay_ds):
    t = studies.delay_table(delay_ds)
    assert sorted(set(t.window_ms)) == [0.0, 1.0, 16.0] and len(t) == 6
    best = studies.optimal_delay(delay_ds)
    assert len(best) == 2
    for _, b in best.iterrows():
        pts = t[t.freq_ghz == b.freq_ghz]
        ext4 = pts[pts.window_ms == 0].iloc[0]
        ok = pts[(pts.commit_wait_ms <= ext4.commit_wait_ms) | (pts.window_ms == 0)]
        assert b.throughput_mib_s == ok.throughput_mib_s.max()
        assert b.gain_over_ext4 == pytest.approx(b.throughput_mib_s / ext4.throughput_mib_s)
    # a bound nothing but ext4 meets leaves ext4
    assert set(studies.optimal_delay(delay_ds, max_commit_wait_ms=1e-9).window_ms) == {0.0}
    with pytest.raises(ConfigError, match="max_commit_wait_ms"):
        studies.optimal_delay(delay_ds, max_commit_wait_ms=-1)


def test_window_from_policy_labels(delay_ds):
    """A dataset from abtlab.run has no window_ms coordinate: it comes from the spec."""
    t = studies.delay_table(delay_ds.drop_vars("window_ms"))
    assert sorted(set(t.window_ms)) == [0.0, 1.0, 16.0]


def test_plots_and_trace_tables(delay_ds):
    assert len(study_plots.plot_delay_tradeoff(delay_ds).axes) == 2
    fig = study_plots.plot_commit_timeline(delay_ds)
    assert "SIMULATED" in fig.axes[0].get_title().upper()
    tm = studies.trace_measures(delay_ds)
    assert len(tm) == delay_ds.run_id.size
    # measures from the traces agree with the simulator's own
    one = tm.iloc[0]
    sel = {d: one[d] for d in delay_ds.run_id.dims}
    assert one.throughput == pytest.approx(float(delay_ds.throughput.sel(sel)), rel=1e-6)
    tb = studies.trace_metrics(delay_ds)
    assert (tb.bps > 0).all() and (tb.elapsed > 0).all()
    with pytest.raises(ConfigError, match="run_id"):
        study_plots.plot_commit_timeline(delay_ds, run_id=10 ** 6)


def test_frequency_workloads_bad_data():
    with pytest.raises(ConfigError, match="data"):
        studies.frequency_workloads("real")


def test_study_data_guest(monkeypatch):
    """data='guest' runs the study's guest factors; a study without them, a host spec or
    a machine that cannot boot the guest is refused before anything runs."""
    from abtlab.errors import UnavailableError
    from abtlab.machines import guest
    with pytest.raises(ConfigError) as e:
        studies.study_data("guest", sim=dict(threads="16"))
    assert e.value.field == "data"
    with pytest.raises(ConfigError) as e:
        studies.study_data("guest", guest=dict(machine="host", threads=4))
    assert e.value.field == "guest_machine"
    monkeypatch.setattr(guest, "available", lambda: (False, "qemu-system-x86_64 not found"))
    with pytest.raises(UnavailableError, match="qemu-system-x86_64 not found"):
        studies.study_data("guest", guest=dict(machine="guest:kernel=6.1-legacy", threads=4))


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
