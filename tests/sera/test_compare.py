"""Policy comparison: each policy's choice on hand-made phases, then the simulator end to end."""
from __future__ import annotations

import pytest

import abtlab.sera as sera
from abtlab.cli import main
from abtlab.errors import ConfigError
from abtlab.system.energy import PowerModel

FREQS = (0.8, 1.3, 1.8, 2.5)
POWER = PowerModel(100.0, 10.0)


def phase(pattern, time_at, access_at, predict_at=None, name="io"):
    return sera.Phase(name, time_at, "modelled", pattern, access_at, predict_at)


def run(phases):
    df = sera.compare([sera.Workload("w", phases)], FREQS, POWER)
    return df.set_index("policy")


def test_long_io_gets_min_edp_short_io_keeps_highest():
    big, small = sera.IOPattern("write", 1 << 20), sera.IOPattern("write", 4096)
    io_bound = lambda f: 0.02 + 0.001 / f            # noqa: E731  mostly device time
    df = run([phase(big, io_bound, io_bound), phase(small, io_bound, lambda f: 1e-4 / f)])
    best = min(FREQS, key=lambda f: POWER.power(f) * io_bound(f) ** 2)
    assert best < 2.5
    assert df.loc["sera", "freqs_ghz"] == f"{best:g},2.5"
    assert df.loc["fixed-low", "freqs_ghz"] == "0.8" and df.loc["fixed-high", "freqs_ghz"] == "2.5"
    assert df.loc["sera", "energy_j"] < df.loc["fixed-high", "energy_j"]
    assert (df.energy_mode == "modelled").all() and (df.time_mode == "modelled").all()


def test_abt_aware_leaves_a_predicted_slowdown():
    """Short accesses (type I): SERA keeps 2.5 GHz; the ABT model predicts that 1.3 GHz is
    faster at this concurrency, so abt-aware takes 1.3 GHz."""
    pat = sera.IOPattern("sync", 0)
    slow_fast = {0.8: 1.10, 1.3: 1.00, 1.8: 1.06, 2.5: 1.12}
    df = run([phase(pat, slow_fast.get, lambda f: 1e-4, slow_fast.get)])
    assert sera.slowdown_freqs(slow_fast.get, FREQS) == {1.8, 2.5}
    assert df.loc["sera", "freqs_ghz"] == "2.5"
    assert df.loc["abt-aware", "freqs_ghz"] == "1.3"
    assert df.loc["abt-aware", "time_s"] < df.loc["sera", "time_s"]


def test_ondemand_follows_utilisation_with_lag():
    cpu_bound = lambda f: 2.0 / f                    # noqa: E731  u = 1 -> highest
    io_bound = lambda f: 1.0                         # noqa: E731  u -> floor -> lowest
    pat = sera.IOPattern("write", 1 << 20)
    df = run([phase(None, cpu_bound, None, name="cpu"), phase(pat, io_bound, io_bound)])
    # u at the 0.02 floor: lowest f >= 0.8 + 0.02 * (2.5 - 0.8) is 1.3 GHz (ondemand rounds up)
    assert df.loc["ondemand", "freqs_ghz"] == "1.3,2.5"
    # the I/O phase starts at 2.5 GHz for one sampling period before the governor drops
    assert df.loc["ondemand", "switches"] == 1


def test_bad_policy_and_freqs():
    w = [sera.Workload("w", [phase(None, lambda f: 1.0, None)])]
    with pytest.raises(ConfigError):
        sera.compare(w, FREQS, POWER, policies=("turbo",))
    with pytest.raises(ConfigError):
        sera.compare(w, (2.5,), POWER)
    with pytest.raises(ConfigError):
        sera.sim_workloads(["bonnie"])


def test_simulated_comparison_is_labelled(capsys):
    wl = sera.sim_workloads(["iozone", "fio-seq"], FREQS, reps=2)
    df = sera.compare(wl, FREQS)
    assert set(df.policy) == set(sera.POLICIES) and set(df.workload) == {"iozone", "fio-seq"}
    assert (df.time_mode == "simulated").all() and (df.energy_mode == "modelled").all()
    fh = df[df.policy == "fixed-high"]
    assert (fh["time_s_vs_fixed-high"] == 1).all()
    fl = df[(df.policy == "fixed-low") & (df.workload == "fio-seq")].iloc[0]
    assert fl.time_s > fh[fh.workload == "fio-seq"].iloc[0].time_s   # CPU share slows at 0.8
    assert main(["sera", "compare", "--workloads", "fio-seq", "--reps", "1"]) == 0
    out = capsys.readouterr().out
    assert "simulated" in out and "modelled" in out and "abt-aware" in out
