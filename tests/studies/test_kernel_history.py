"""abtlab.studies.kernel_history: the point, and the rows run, loaded or missing (on
constructed datasets with known ratios). Its tables and plots are tested in
tests/present/test_kernel_history_tables.py and test_kernel_history_plots.py."""
import pytest

from abtlab.studies import kernel_history as kh
from abtlab.errors import ConfigError

from tests.studies.kernel_history_data import constructed


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
    ds = constructed([50.0, 52.0, 48.0], machines=["host", "guest:kernel=6.1-legacy,depth=256", "guest"])
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


def test_history_from_a_stored_dataset(tmp_path):
    """data = a path: host and guest rows from the file, the simulator at the point."""
    import abtlab
    path = tmp_path / "kh.nc"
    abtlab.save(constructed([50.0, 52.0, 48.0], machines=["host", "guest:depth=256"]), path)
    h = kh.history_data(str(path), kh.make_point(reps=3, threads=64, depth=256))
    assert list(h.runs) == [kh.HOST, kh.STOCK, kh.SIM]
    assert h.missing == {kh.LEGACY: "not in kh.nc (machines: host, guest:depth=256)"}
