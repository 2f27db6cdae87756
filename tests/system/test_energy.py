"""Energy: RAPL powercap on a fake sysfs tree (incl. a counter wrap), perf parsing,
source selection, and the labelled power model."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from abtlab.errors import ConfigError, RunError, UnavailableError
from abtlab.system import energy as E


def rapl_tree(root, zones=((0, 1000, 10_000),)):
    """powercap zones intel-rapl:N with energy_uj / max_energy_range_uj, plus a subzone."""
    for n, uj, rng in zones:
        d = root / f"intel-rapl:{n}"
        d.mkdir(parents=True)
        (d / "name").write_text(f"package-{n}\n")
        (d / "energy_uj").write_text(f"{uj}\n")
        (d / "max_energy_range_uj").write_text(f"{rng}\n")
        sub = root / f"intel-rapl:{n}:0"
        sub.mkdir()
        (sub / "energy_uj").write_text("5\n")
        (sub / "max_energy_range_uj").write_text(f"{rng}\n")
    return root


def set_uj(root, n, uj):
    (root / f"intel-rapl:{n}" / "energy_uj").write_text(f"{uj}\n")


def test_rapl_zones_are_packages_only(tmp_path):
    root = rapl_tree(tmp_path, ((0, 1, 10), (1, 2, 10)))
    assert [z.name for z in E.rapl_zones(root)] == ["package-0", "package-1"]
    assert E.rapl_zones(tmp_path / "none") == []


def test_delta_handles_one_wrap():
    assert E.delta_uj(100, 400, 1000) == 300
    assert E.delta_uj(900, 50, 1000) == 150


def test_meter_sums_zones_across_a_wrap(tmp_path):
    root = rapl_tree(tmp_path, ((0, 9_000, 10_000), (1, 100, 50_000)))
    with E.RaplMeter(root) as m:
        set_uj(root, 0, 9_500)
        set_uj(root, 1, 700)
        m.sample()                 # 500 + 600
        set_uj(root, 0, 1_500)     # wrapped: 10_000 - 9_500 + 1_500 = 2_000
        set_uj(root, 1, 1_700)     # +1_000
    assert m.total_uj == 500 + 600 + 2_000 + 1_000
    assert m.joules == pytest.approx(0.0041)
    assert m.describe()["energy_mode"] == "measured"


def test_meter_unavailable_without_rapl(tmp_path):
    with pytest.raises(UnavailableError, match="intel-rapl"):
        E.RaplMeter(tmp_path)


def test_source_selection(tmp_path):
    assert E.energy_source(rapl_tree(tmp_path / "pc"), tmp_path / "pmu")[0] == "rapl"
    src, why = E.energy_source(tmp_path / "empty", tmp_path / "pmu")
    assert src == "model" and "modelled" in why


def test_parse_perf_stat():
    out = "# started on ...\n\n12.34,Joules,power/energy-pkg/,1000303030,100.00,,\n"
    assert E.parse_perf_stat(out) == pytest.approx(12.34)
    with pytest.raises(RunError):
        E.parse_perf_stat("<not supported>,,power/energy-pkg/,0,100.00,,")


def test_power_model_fit_reproduces_sera_io_powers():
    m = E.sera_io_node_model()
    for f, p in E.SERA_IO_TABLE3_POWER:
        assert m.power(f) == pytest.approx(p, rel=0.02)
    assert m.power(2.5, util=0.0) == pytest.approx(m.p_static_w)
    with pytest.raises(ConfigError) as err:
        E.PowerModel(p_static_w=-1, c_w=1)
    assert err.value.field == "power_model.p_static_w"


def test_attach_energy_labels_and_records_parameters():
    ds = xr.Dataset({"elapsed": ("freq_ghz", [2.0, 1.0])}, coords={"freq_ghz": [1.0, 2.0]})
    m = E.PowerModel(10.0, 2.0, v0=1.0, kv=0.0)
    out = E.attach_energy(ds, m, util=0.5)
    np.testing.assert_allclose(out.energy_j.values, [(10 + 1.0) * 2, (10 + 2.0) * 1])
    np.testing.assert_allclose(out.edp.values, out.energy_j.values * ds.elapsed.values)
    assert out.attrs["energy_mode"] == "modelled" and out.attrs["power_model_p_static_w"] == 10
    assert all("modelled" in out[v].attrs["long_name"] for v in ("power_w", "energy_j", "edp"))
    with pytest.raises(ConfigError):
        E.attach_energy(ds, m, time_var="nope")
