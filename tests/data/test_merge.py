"""abtlab.data.merge and `abtlab merge`: datasets of one design pooled along rep."""
import numpy as np
import pytest

import abtlab.sim as sim
from abtlab.cli import main
from abtlab.data import schema, store
from abtlab.data.merge import merge_reps
from abtlab.data.runs import commits, ops
from abtlab.errors import ConfigError

KW = dict(threads=[4, 8], freq_ghz=[1.6, 3.3], cores=2)


@pytest.fixture(scope="module")
def two():
    return sim.simulate(reps=2, seed=0, **KW), sim.simulate(reps=3, seed=10, **KW)


def test_reps_follow_each_other_with_their_records(two):
    a, b = two
    m = merge_reps([a, b], names=["a.nc", "b.nc"])
    schema.validate(m)
    assert m.sizes["rep"] == 5 and list(m.rep.values) == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(m.throughput.isel(rep=slice(0, 2)), a.throughput)
    np.testing.assert_array_equal(m.throughput.isel(rep=slice(2, 5)), b.throughput)
    # every run's op and commit records are its own after renumbering
    for src, first in ((a, 0), (b, 2)):
        for idx in np.ndindex(src.run_id.shape):
            mi = idx[:-1] + (idx[-1] + first,)
            got, want = int(m.run_id.values[mi]), int(src.run_id.values[idx])
            np.testing.assert_array_equal(ops(m, got)["t_end_ns"], ops(src, want)["t_end_ns"])
            np.testing.assert_array_equal(commits(m, got)["end"], commits(src, want)["end"])
    assert m.sizes["op"] == a.sizes["op"] + b.sizes["op"]
    assert len(np.unique(m.run_id.values)) == m.run_id.size
    assert "a.nc (reps 2, seed 0" in m.attrs["merged_from"] and "b.nc (reps 3, seed 10" in m.attrs["merged_from"]
    assert m.attrs["seed"] == "0 | 10"


def test_other_designs_are_refused_naming_what_differs(two):
    a, b = two
    with pytest.raises(ConfigError) as e:
        merge_reps([a, b.isel(threads=0)], names=["a", "b"])          # no threads factor
    assert e.value.field == "datasets" and "factors" in str(e.value) and "threads" in str(e.value)
    other = b.copy()
    other.attrs["freq_mode"] = "real"
    with pytest.raises(ConfigError, match="freq_mode"):
        merge_reps([a, other])
    with pytest.raises(ConfigError):
        merge_reps([a])


def test_emulated_sweeps_with_other_highest_levels_are_refused(two):
    """An emulated frequency is relative to its sweep's highest level: 2.8 GHz of a sweep up
    to 2.8 ran at native speed, as 3.3 did in a sweep up to 3.3."""
    a, b = two
    ea, eb = a.copy(), b.copy()
    for ds, top in ((ea, 3.3), (eb, 2.8)):
        ds.attrs.update(freq_mode="emulated", f_ref_ghz=top)
    with pytest.raises(ConfigError, match=r"b: f_ref_ghz = 2.8'; accepted: f_ref_ghz = 3.3, as in a"):
        merge_reps([ea, eb], names=["a", "b"])
    eb.attrs["f_ref_ghz"] = 3.3
    assert merge_reps([ea, eb]).sizes["rep"] == 5


def test_cli_merge_writes_and_never_replaces_without_force(two, tmp_path, capsys):
    a, b = two
    pa, pb, out = tmp_path / "a.nc", tmp_path / "b.nc", tmp_path / "m.nc"
    store.save(a, pa)
    store.save(b, pb)
    assert main(["merge", str(pa), str(pb), "--out", str(out)]) == 0
    assert store.load(out).sizes["rep"] == 5
    before = out.read_bytes()
    assert main(["merge", str(pa), str(pb), "--out", str(out)]) == 2      # exists: refused
    assert out.read_bytes() == before and "--force" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("x")
    assert main(["merge", str(pa), str(tmp_path / "notes.txt"), "--out", str(tmp_path / "n.nc")]) == 2
    assert not (tmp_path / "n.nc").exists()


def test_selections_keep_their_runs_apart(two):
    """A selection keeps the records of the runs it dropped: ids after it never collide."""
    a, b = two
    m = merge_reps([a.isel(freq_ghz=[0]), b.isel(freq_ghz=[0])])
    for idx in np.ndindex(b.isel(freq_ghz=[0]).run_id.shape):
        mi = idx[:-1] + (idx[-1] + 2,)
        got, want = int(m.run_id.values[mi]), int(b.isel(freq_ghz=[0]).run_id.values[idx])
        np.testing.assert_array_equal(ops(m, got)["t_end_ns"], ops(b, want)["t_end_ns"])


def test_a_refusal_names_values_as_plain_values(two):
    """What differs reads as typed (real; 4, 8), not as numpy reprs."""
    a, b = two
    other = b.copy()
    other.attrs["freq_mode"] = np.str_("real")
    with pytest.raises(ConfigError, match=r"freq_mode = real'; accepted: freq_mode = simulated,") as e:
        merge_reps([a, other])
    assert "np." not in str(e.value)
    with pytest.raises(ConfigError) as e:
        merge_reps([a, b.isel(threads=0)], names=["a", "b"])
    assert "accepted: the factors of a: " in str(e.value) and "np." not in str(e.value)


def test_a_dataset_merged_with_itself_or_its_seed_is_refused_saying_why(two, tmp_path):
    a, _ = two
    with pytest.raises(ConfigError, match=r"a2\.nc repeats \d+ run records? of a\.nc exactly.*"
                                          r"--keep-duplicates"):
        merge_reps([a, a.copy()], names=["a.nc", "a2.nc"])
    m = merge_reps([a, a.copy()], names=["a.nc", "a2.nc"], keep_duplicates=True)
    assert "a2.nc repeats" in m.attrs["duplicates"] and m.sizes["rep"] == 2 * a.sizes["rep"]
    same = a.copy()
    same["throughput"] = same["throughput"] * 1.01           # other values, same seed and spec
    same.attrs[schema.SWEEP_SPEC] = a.attrs[schema.SWEEP_SPEC] = '{"seed": 0}'
    with pytest.raises(ConfigError, match=r"b\.nc ran with the seed \(0\) and configuration of a\.nc"):
        merge_reps([a, same], names=["a.nc", "b.nc"])


def test_merge_of_the_same_file_twice_is_refused_by_the_command(two, tmp_path, capsys):
    a, _ = two
    store.save(a, tmp_path / "a.nc")
    assert main(["merge", str(tmp_path / "a.nc"), str(tmp_path / "a.nc"), "--out",
                 str(tmp_path / "m.nc")]) == 2
    assert "repeats" in capsys.readouterr().err and not (tmp_path / "m.nc").exists()
