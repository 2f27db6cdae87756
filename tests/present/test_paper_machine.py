"""abtlab.present.paper_machine: the paper's Figs. 7-8 rows from a run, the paper's stated
values read from data/reference beside them (constructed runs with known answers)."""
import re

import matplotlib
import numpy as np
import xarray as xr

from abtlab.present import paper_machine as pm
from tests.run_data import make_run

matplotlib.use("Agg")


def _fig7a(ratio):
    ds = make_run(ratio, reps=6, rsd=0.02, policies=tuple(ratio), threads=(256,))
    ds = ds.expand_dims(file_size=[128 << 10]).transpose("policy", "freq_ghz", "threads", "file_size", "rep")
    ds.attrs["backend"] = "iozone"
    u = np.where(ds.freq_ghz.values[None, :, None, None, None] == 1.6, 240.0, 40.0) * np.ones(ds.throughput.shape)
    return ds.assign(unblocked_threads=(ds.throughput.dims, u))


def test_the_papers_stated_values_come_from_the_reference_file():
    rows = pm.published()
    assert any(r["figure"] == "Fig7a" for r in rows)
    # Fig. 7a's cell is Figs. 1-2's: the slowdown is stated there
    assert pm.paper_value("Fig7a", "iozone_slowdown_high_vs_low_freq") == [(3.3, 0.47)]
    assert sorted(pm.paper_value("Fig7a", "iozone_ext4_nonblocked_threads")) == [(1.6, 240.0), (3.3, 40.0)]
    assert pm.paper_value("Fig8b", "metarates_delayjc_over_ext4_speedup") == [(2.0, 1.82)]
    assert pm.paper_value("Fig2", "iozone_rsd_range") == []      # a range is not a point


def test_the_table_normalises_and_divides_as_the_paper_does():
    ds = _fig7a({"ext4": 0.5, "nojc": 2.0, "delayjc:window=16ms": 1.5})
    assert pm.figure_of(ds) == "Fig7a"
    t = pm.table(ds).set_index(["policy", "freq_ghz"])
    assert t.loc[("ext4", 1.6), "normalised"] == "1 (the reference)"
    assert t.loc[("ext4", 3.3), "normalised"].startswith("0.5")
    assert t.loc[("nojc", 3.3), "normalised"].startswith("2.0")
    # delayJC 1.5 x base at 3.3 GHz over ext4 0.5 x base: 3
    assert t.loc[("ext4", 3.3), "delayjc_over_ext4"].startswith("3.0")
    assert t.loc[("ext4", 1.6), "unblocked_threads"] == 240


def test_the_figure_has_the_papers_rows_and_says_what_the_data_is():
    fig = pm.plot_figure(_fig7a({"ext4": 0.5, "nojc": 2.0, "delayjc:window=16ms": 1.5}))
    assert len(fig.axes) == 4 and "SIMULATED" in fig._suptitle.get_text()
    labels = [t for ax in fig.axes for t in ax.get_legend_handles_labels()[1]]
    assert "paper (ext4): 0.53" in labels and "paper (delayJC / ext4): 3.65" in labels
    assert "paper (ext4): 40" in labels


def test_the_summary_is_computed_and_names_the_papers_values():
    text = pm.summary(_fig7a({"ext4": 0.5, "nojc": 2.0, "delayjc:window=16ms": 1.5}))
    assert text.startswith("ext4 at 3.3 GHz over 1.6 GHz: x0.5")
    assert "delayjc:window=16ms over ext4 at 3.3 GHz: x3.0" in text
    assert "(the paper, Fig7a: slowdown high vs low freq 0.47 at 3.3 GHz" in text


def _on_machines(ds, machines, attrs):
    """ds (policy, freq, threads, file_size, rep) on each of `machines` (a machine dim)."""
    out = xr.concat([ds] * len(machines), dim="machine").assign_coords(machine=machines)
    out.attrs.update(ds.attrs, **attrs)
    return out


LOCKSTEP = {"freq_mode": "virtual", "clock": "lockstep",
            "time_base": "virtual: guest CLOCK_MONOTONIC under qemu -icount, lock-step vCPUs"}


def test_the_guest_line_is_computed_from_the_runs_and_says_virtual_time():
    fig7a = _on_machines(_fig7a({"ext4": 0.5, "nojc": 2.0, "delayjc:window=16ms": 1.5}),
                         ["guest:clock=lockstep,cpus=4,kernel=3.4.2"], LOCKSTEP)
    ab = _fig7a({"ext4": 2.0, "nojc": 2.0, "delayjc:window=16ms": 2.0}).sel(policy=["ext4"])
    ab = _on_machines(ab, ["guest:clock=lockstep,cpus=4", "guest:clock=lockstep,cpus=4,kernel=6.1-legacy"],
                      LOCKSTEP)
    # the legacy preset 1.5x faster again at 3.3 GHz: 3x where stock 6.1 is 2x
    ab["throughput"] = ab.throughput * xr.DataArray([1.0, 1.5], dims="freq_ghz").where(
        ab.machine == ab.machine[1], 1.0)
    text = pm.in_the_guest(fig7a, ab, ("fig7a.nc", "ab.nc"))
    assert text.startswith("The paper's machine in the guest (VIRTUAL TIME; Linux 3.4.2, 4 vCPUs each "
                           "at the clock; stored result fig7a.nc, 6 repetitions): ext4 at 3.3 over 1.6 GHz x0.5")
    assert "unblocked threads 240 -> 40 of 256" in text
    assert "delayjc over ext4 at 3.3 GHz x3.0" in text
    # each kernel of the A/B its own ratio: 2x on stock 6.1, 3x on the legacy preset
    m = re.search(r"\(VIRTUAL TIME; ab\.nc\), ext4 at 3\.3 over 1\.6 GHz: Linux 6\.1 x([\d.]+) \[[^]]+\], "
                  r"unblocked threads 240 -> 40 of 256; Linux 6\.1-legacy x([\d.]+) \[", text)
    assert m and abs(float(m[1]) - 2) < 0.05 and abs(float(m[2]) - 3) < 0.08, text
    p = pm.paper_iozone()
    assert text.endswith(f"The paper (Linux 3.4.2): x{p['ratio']}, unblocked {p['unblocked_low']} -> "
                         f"{p['unblocked_high']} of 256, delayJC x{p['delayjc_gain']} at 3.3 GHz.")
    # data of another kind says its own kind, not virtual time
    other = fig7a.copy()
    other.attrs = dict(fig7a.attrs, freq_mode="simulated", clock="")
    assert "(SIMULATED;" in pm.in_the_guest(other) and "VIRTUAL" not in pm.in_the_guest(other)


def test_the_guest_line_of_the_stored_results_is_their_data():
    """Notebook 08's line on the stored results: its ratio is the stored runs' own."""
    from abtlab.results.stored import dataset
    from abtlab.stats.ratios import format_ratio, ratio_ci
    run, ab = dataset("paper_fig7a_342"), dataset("paper_machine_61_ab")
    text = pm.in_the_guest(run, ab, ("paper_fig7a_342", "paper_machine_61_ab"))
    ext4 = run.throughput.sel(policy="ext4")
    want = format_ratio(*ratio_ci(ext4.sel(freq_ghz=3.3).values.ravel(), ext4.sel(freq_ghz=1.6).values.ravel()))
    assert f"ext4 at 3.3 over 1.6 GHz x{want}" in text and "VIRTUAL TIME" in text
    assert "Linux 6.1 x" in text and "Linux 6.1-legacy x" in text


def test_the_kernels_delayjc_in_a_sitting_at_the_ends_only():
    """Fig. 7a's grid: kdelayjc ran at 1.6 and 3.3 GHz only; its other clocks are missing
    (NaN), as a sitting that did not run them leaves them."""
    ds = _fig7a({"ext4": 0.5, "nojc": 2.0, "delayjc:window=16ms": 1.5, "kdelayjc:window=16ms": 1.2})
    ds = ds.reindex(freq_ghz=[1.6, 2.4, 3.3])          # 2.4 GHz: no runs of any policy yet
    ds["throughput"].loc[{"policy": ["ext4", "nojc", "delayjc:window=16ms"], "freq_ghz": 2.4}] = 1e9
    t = pm.table(ds).set_index(["policy", "freq_ghz"])
    assert ("kdelayjc:window=16ms", 2.4) not in t.index and ("ext4", 2.4) in t.index
    assert t.loc[("ext4", 3.3), "kdelayjc_over_ext4"].startswith("2.4")
    assert t.loc[("ext4", 2.4), "kdelayjc_over_ext4"] == "-"
    assert t.loc[("ext4", 3.3), "n"] == 6
    labels = [t for ax in pm.plot_figure(ds).axes for t in ax.get_legend_handles_labels()[1]]
    assert "kdelayjc:window=16ms / ext4" in labels and "delayjc:window=16ms / ext4" in labels
    assert "kdelayjc:window=16ms over ext4 at 3.3 GHz: x2.4" in pm.summary(ds)


def test_one_row_per_cell_with_the_papers_values():
    ds = _fig7a({"ext4": 0.5, "nojc": 2.0, "delayjc:window=16ms": 1.5})
    row = pm.cells([ds]).iloc[0]
    assert row["figure"] == "Fig7a" and row["clocks"] == "1.6 -> 3.3 GHz" and row["n"] == "6, 6"
    assert row["ext4 fast/slow"].startswith("0.5") and row["nojc fast/slow"].startswith("2.0")
    assert row["delayjc/ext4 at 3.3"].startswith("3.0") and row["unblocked"] == "240 -> 40"
    assert row["paper ext4 fast/slow"] == "0.53 at 3.3 GHz" and row["paper delayJC/ext4"] == "3.65 at 3.3 GHz"
    # a cell whose ext4 ran at one clock only says so
    one = ds.sel(freq_ghz=[3.3])
    assert pm.cells([one]).iloc[0]["ext4 fast/slow"] == "no ext4 at two clocks"
