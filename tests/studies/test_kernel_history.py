"""abtlab.studies.kernel_history and its tables and plots (abtlab.present.kernel_history_tables,
kernel_history_plots): the point, the rows, the answer table (on constructed datasets
with known ratios, one row missing) and the figures."""
import math

import matplotlib
import numpy as np
import pytest
import xarray as xr

from abtlab.present import kernel_history_plots as khp
from abtlab.present import kernel_history_tables as kht
from abtlab.studies import kernel_history as kh
from abtlab import stats
from abtlab.errors import ConfigError

matplotlib.use("Agg")

LOW = [100.0, 104.0, 96.0]


def _run(high, low=LOW, machines=None, freq_mode="emulated", clock="host"):
    """ext4 and nojc at 1.6 and 3.3 GHz, 3 reps; ext4's 3.3 GHz values are `high`,
    nojc's are twice the 1.6 GHz ones."""
    x = np.array([[low, high], [low, [2 * v for v in low]]], float)   # policy, freq, rep
    coords = {"policy": ["ext4", "nojc"], "freq_ghz": [1.6, 3.3], "threads": [64], "rep": [0, 1, 2]}
    dims = ("policy", "freq_ghz", "threads", "rep")
    x = x[:, :, None, :]
    if machines:
        x = np.repeat(x[:, :, :, None, :], len(machines), axis=3)
        dims = ("policy", "freq_ghz", "threads", "machine", "rep")
        coords["machine"] = machines
    return xr.Dataset({"throughput": (dims, x, {"units": "bytes/s"})}, coords=coords,
                      attrs={"freq_mode": freq_mode, "clock": clock, "backend": "test"})


@pytest.fixture
def hist():
    pt = kh.make_point(policy="ext4,nojc", reps=3)
    h = kh.History(pt)
    h.runs[kh.HOST] = _run([50.0, 52.0, 48.0], machines=["host"])               # 0.5: slower
    h.runs[kh.STOCK] = _run([101.0, 99.0, 100.0], machines=["guest:depth=256"], clock="virtual")
    h.missing[kh.LEGACY] = "cannot run here: no qemu"
    h.runs[kh.SIM] = _run([200.0, 210.0, 190.0], freq_mode="simulated")          # 2: faster
    return h


def test_answer_table_rows_ratios_and_missing_row(hist):
    t = kht.answer_table(hist)
    assert list(t.index) == list(kh.ROWS)
    col = "3.3/1.6 GHz [95% CI]"
    r, lo, hi = stats.ratio_ci(np.array([50.0, 52.0, 48.0]), np.array(LOW))   # what `abtlab stats --test` gives
    assert t.loc["host", col] == stats.format_ratio(r, lo, hi) and r == pytest.approx(0.5)
    assert "SLOWER" in t.loc["host", "note"] and "emulated" in t.loc["host", "data"]
    assert "no clear difference" in t.loc["guest 6.1", "note"] and "VIRTUAL" in t.loc["guest 6.1", "data"]
    assert t.loc["guest 6.1-legacy", col] == "-" and t.loc["guest 6.1-legacy", "note"] == "cannot run here: no qemu"
    assert t.loc["simulator", col].startswith("2.00 [") and "faster" in t.loc["simulator", "note"]
    assert t.loc["simulator", "data"] == "SIMULATED" and t.loc["host", "n"] == "3 / 3"
    assert t.loc["host", "machine"] == "host" and t.loc["guest 6.1", "machine"] == "guest:depth=256"


def test_ratio_table_every_policy_and_the_test(hist):
    df = kht.ratio_table(hist)
    nojc = df[df.policy == "nojc"].set_index("row")
    assert nojc.ratio.to_numpy() == pytest.approx([2.0, 2.0, 2.0])
    host = df[(df.policy == "ext4") & (df.row == "host")].iloc[0]
    assert host.p < 0.01                         # one-sided: slower at 3.3 GHz
    assert math.isnan(df[df.row == "guest 6.1-legacy"].ratio.iloc[0])
    with pytest.raises(ConfigError) as e:
        kht.answer_table(hist, policy="delayjc")
    assert e.value.field == "policy"


@pytest.mark.parametrize("kw, field", [
    (dict(threads="16,64"), "threads"), (dict(threads=0), "threads"),
    (dict(record_size="256k"), "record_size"), (dict(file_size="12q"), "file_size"),
    (dict(reps=1), "reps"), (dict(depth=0), "depth"), (dict(depth=512), "depth"),
    (dict(freqs="3.3"), "freqs"), (dict(freqs="1.6,x"), "freqs"), (dict(policy="nojc"), "policy"),
    (dict(policy="ext4,zfs"), "policy")])
def test_make_point_refuses_bad_parameters(kw, field):
    with pytest.raises(ConfigError) as e:
        kh.make_point(**kw)
    assert e.value.field == field


def test_bad_data_is_refused_before_running():
    with pytest.raises(ConfigError) as e:
        kh.history_data("nowhere.nc", kh.make_point(threads=4))
    assert e.value.field == "data"


def test_guest_machines_are_canonical_specs():
    assert kh.guest_machines(256) == {kh.STOCK: "guest:depth=256",
                                      kh.LEGACY: "guest:kernel=6.1-legacy,depth=256"}
    assert kh.guest_machines(1) == {kh.STOCK: "guest", kh.LEGACY: "guest:kernel=6.1-legacy"}


def test_rows_from_a_dataset_with_a_machine_dim():
    pt = kh.make_point(reps=3, depth=256, threads=64)
    ds = _run([50.0, 52.0, 48.0], machines=["host", "guest:kernel=6.1-legacy,depth=256", "guest"])
    h = kh.History(pt)
    kh.add_dataset_rows(h, ds, "kh.nc")
    assert set(h.runs) == {kh.HOST, kh.LEGACY}
    assert h.runs[kh.LEGACY].machine.values.tolist() == ["guest:kernel=6.1-legacy,depth=256"]
    assert "not in kh.nc" in h.missing[kh.STOCK] and "guest:kernel=6.1-legacy" in h.missing[kh.STOCK]
    with pytest.raises(ConfigError) as e:
        kh.add_dataset_rows(kh.History(kh.make_point(threads=16)), ds)
    assert e.value.field == "threads"


def test_sim_only_says_why_each_row_is_missing():
    h = kh.history_data("sim", kh.make_point(threads=8, policy="ext4", reps=2))
    assert set(h.runs) == {kh.SIM} and h.runs[kh.SIM].attrs["freq_mode"] == "simulated"
    assert all("data='sim'" in h.missing[r] for r in (kh.HOST, kh.STOCK, kh.LEGACY))
    fig = khp.plot_timelines(h)
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert len(titles) == 2 and all("SIMULATED" in t for t in titles)


def test_guest_rows_in_auto_without_a_built_kernel(monkeypatch, tmp_path):
    monkeypatch.setenv("ABTLAB_KERNEL_CACHE", str(tmp_path))
    from abtlab.machines import guest
    monkeypatch.setattr(guest, "available", lambda: (True, ""))
    ok, why = kh.guest_ready()
    assert not ok and "not built" in why
    h = kh.History(kh.make_point())
    kh._guest_rows(h, "auto", quiet=True)
    assert not h.runs and h.missing[kh.STOCK] == h.missing[kh.LEGACY] == f"cannot run here: {why}"


def test_kernel_key_is_the_built_kernel(built_guest):
    """guest_ready's cache key is build-kernel.sh's (bzImage links into its folder)."""
    bz, _ = built_guest
    assert bz.resolve().parent.name == kh.kernel_key()


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
    hist.runs[kh.STOCK] = _run([50.0, 60.0, 55.0], low=[10.0, 100.0, 20.0], machines=["guest:depth=256"])
    assert kht.ratio_table(hist).query("row == 'guest 6.1' and policy == 'ext4'").ci_high.item() == math.inf
    ax = khp.plot_ratios(hist).axes[0]
    marks = [t for t in ax.texts if "unbounded" in t.get_text()]
    assert len(marks) == 2                          # ext4 and nojc of that row (same low runs)
    assert all(abs(t.xy[0] - kh.ROWS.index(kh.STOCK)) < 0.5 for t in marks)


def test_history_from_a_stored_dataset(tmp_path):
    """data = a path: host and guest rows from the file, the simulator at the point."""
    import abtlab
    path = tmp_path / "kh.nc"
    abtlab.save(_run([50.0, 52.0, 48.0], machines=["host", "guest:depth=256"]), path)
    h = kh.history_data(str(path), kh.make_point(reps=3, threads=64, depth=256))
    assert list(h.runs) == [kh.HOST, kh.STOCK, kh.SIM]
    assert h.missing == {kh.LEGACY: "not in kh.nc (machines: host, guest:depth=256)"}
    t = kht.answer_table(h)
    assert t.loc["host", "3.3/1.6 GHz [95% CI]"].startswith("0.50 [")
    assert t.loc["simulator", "data"] == "SIMULATED"


def test_terms_table_gives_each_row_its_timing_terms_in_ms():
    from abtlab.model.terms import TERMS
    h = kh.history_data("sim", kh.make_point(threads=8, reps=2))
    t = kht.terms_table(h)
    assert list(t.index.get_level_values(0).unique()) == [kh.SIM]
    assert {f"{k}_ms" for k in TERMS if k != "writers_before_first_commit"} <= set(t.columns)
    assert (t["write_op_unblocked_ms"] > 0).all() and (t["data"] == "SIMULATED").all()
    with pytest.raises(ConfigError, match="policy"):
        kht.terms_table(h, policy="nope")
