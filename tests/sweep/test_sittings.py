import numpy as np
import pytest

import abtlab
from abtlab.errors import ConfigError
from abtlab.sweep import spec
from abtlab.sweep.sittings import sitting_path

TOP = 'backend = "sim"\nseed = 4\nrepetitions = 2\n'
FACTORS = '\n[factors]\nthreads = 16\npolicy = "ext4"\nfreq = "1.6,2.4,3.3"\ndevice = "loop"\n'


def _spec(tmp_path, sittings: str):
    p = tmp_path / "s.toml"
    p.write_text(TOP + sittings + FACTORS)
    return p


def _n(ds):
    """Finished repetitions per frequency."""
    return (ds["run_id"] >= 0).sum("rep").squeeze().values.tolist()


def test_sittings_pool_into_out_with_their_files_beside_it(tmp_path):
    p = _spec(tmp_path, "[[sittings]]\nseed = 1\n[[sittings]]\nseed = 2\nrepetitions = 3\n")
    out = tmp_path / "grid.nc"
    ds = spec.run_spec(p, out=out, quiet=True, command="abtlab sweep s.toml")
    assert ds.sizes["rep"] == 5 and _n(ds) == [5, 5, 5]
    assert sitting_path(out, 1).name == "grid.sitting-1.nc" and sitting_path(out, 2).exists()
    back = abtlab.load(out)
    assert back.attrs["command"] == "abtlab sweep s.toml"
    assert "grid.sitting-1.nc: seed 1" in back.attrs["sittings"]
    # the sittings are other seeds, so other runs
    first = back["throughput"].isel(rep=slice(0, 2)).values
    assert not np.allclose(first, back["throughput"].isel(rep=slice(2, 4)).values)


def test_resume_takes_finished_sittings_as_they_are(tmp_path):
    p = _spec(tmp_path, "[[sittings]]\nseed = 1\n[[sittings]]\nseed = 2\n")
    out = tmp_path / "grid.nc"
    spec.run_spec(p, out=out, quiet=True)
    before = sitting_path(out, 1).stat().st_mtime_ns
    with pytest.raises(ConfigError) as e:     # a finished output is never replaced unasked
        spec.run_spec(p, out=out, quiet=True)
    assert e.value.field == "out"
    again = spec.run_spec(p, out=out, quiet=True, resume=True)
    assert sitting_path(out, 1).stat().st_mtime_ns == before and again.sizes["rep"] == 4


def test_a_sitting_at_some_levels_only(tmp_path):
    """The paper's grid: more repetitions at the ends of the clock axis than between."""
    p = _spec(tmp_path, '[[sittings]]\nseed = 1\n[[sittings]]\nseed = 2\nrepetitions = 3\n'
                        'factors = { freq = "1.6,3.3" }\n')
    ds = spec.run_spec(p, out=tmp_path / "grid.nc", quiet=True)
    assert ds["freq_ghz"].values.tolist() == [1.6, 2.4, 3.3]
    assert _n(ds) == [5, 2, 5]


def test_one_sitting_is_its_own_dataset(tmp_path):
    p = _spec(tmp_path, "[[sittings]]\nseed = 7\nrepetitions = 3\n")
    ds = spec.run_spec(p, out=tmp_path / "one.nc", quiet=True)
    assert ds.sizes["rep"] == 3 and abtlab.load(tmp_path / "one.nc").attrs["seed"] in (7, "7")


@pytest.mark.parametrize("text,field", [
    ("[[sittings]]\nrepetitions = 2\n", "sittings[1].seed"),
    ("[[sittings]]\nseed = 1\n[[sittings]]\nseed = 1\n", "sittings[2].seed"),
    ("[[sittings]]\nseed = 1\ncolour = 2\n", "sittings[1].colour"),
    ('[[sittings]]\nseed = 1\nfactors = { files = [4] }\n', "sittings[1].factors.files"),
    ("[[sittings]]\nseed = 1\nrepetitions = 0\n", "sittings[1].repetitions"),
    ("[[sittings]]\nseed = 1\n[[sittings]]\nseed = 2\n[sittings.repetitions]\nmin = 1\n",
     "sittings[2].repetitions.min"),
    ('[[sittings]]\nseed = 1\nfactors = { freq = "emulated:1.6" }\n', "sittings[1].factors.freq"),
    ("sittings = 3\n", "sittings"),
])
def test_bad_sittings_name_the_field_before_anything_runs(tmp_path, text, field):
    p = _spec(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        spec.run_spec(p, out=tmp_path / "o.nc", quiet=True)
    assert e.value.field == field
    assert list(tmp_path.iterdir()) == [p]


def test_resume_ignores_where_failed_points_are_kept(tmp_path):
    """guest_failed_dir says where a failed guest point's files go, not what is measured:
    a sitting run with it resumes without it (and the other way round)."""
    from abtlab.data import store
    p = _spec(tmp_path, "")
    out = tmp_path / "one.nc"
    spec.run_spec(p, out=out, quiet=True)
    stored, _ = store.stored_spec(out)
    store.check_resume(out, {**stored, "options": {**stored["options"], "guest_failed_dir": "/x"}})
    with pytest.raises(ConfigError) as e:
        store.check_resume(out, {**stored, "options": {**stored["options"], "fsync": False}})
    assert e.value.field.startswith("fsync")


def test_one_sitting_alone_is_the_dataset_kept_beside_the_pool(tmp_path):
    from abtlab.cli import main
    from abtlab.sweep.sittings import only_sitting
    p = _spec(tmp_path, '[[sittings]]\nseed = 1\n[[sittings]]\nseed = 2\nrepetitions = 3\n'
                        'factors = { freq = "1.6,3.3" }\n')
    spec.run_spec(p, out=tmp_path / "grid.nc", quiet=True)
    assert main(["sweep", str(p), "--sitting", "2", "--out", str(tmp_path / "two.nc"), "--quiet"]) == 0
    kept, alone = abtlab.load(sitting_path(tmp_path / "grid.nc", 2)), abtlab.load(tmp_path / "two.nc")
    assert np.array_equal(kept["throughput"].values, alone["throughput"].values)
    with pytest.raises(ConfigError) as e:
        only_sitting(spec.load_spec(p), 3)
    assert e.value.field == "--sitting" and "1 to 2" in e.value.accepted
