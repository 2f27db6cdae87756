"""abtlab.studies.notebook_studies: data sources of the notebooks, the delay table and the
optimal delay, the measures from traces. Their figures (abtlab.present.study_plots) are
tested in tests/present/test_study_plots.py."""
import pytest

from abtlab.studies import notebook_studies as studies
from abtlab.errors import ConfigError


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


def test_trace_tables(delay_ds):
    tm = studies.trace_measures(delay_ds)
    assert len(tm) == delay_ds.run_id.size
    # measures from the traces agree with the simulator's own
    one = tm.iloc[0]
    sel = {d: one[d] for d in delay_ds.run_id.dims}
    assert one.throughput == pytest.approx(float(delay_ds.throughput.sel(sel)), rel=1e-6)
    tb = studies.trace_metrics(delay_ds)
    assert (tb.bps > 0).all() and (tb.elapsed > 0).all()


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
