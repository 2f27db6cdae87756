"""What a new user meets first: each friction answered by a message that says what to do."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from abtlab.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def one_freq(tmp_path_factory):
    path = tmp_path_factory.mktemp("onb") / "one.nc"
    assert main(["run", "sim", "--reps", "2", "--quiet", "--out", str(path)]) == 0
    return path


def test_a_slowdown_of_a_one_frequency_run_suggests_two_frequencies(one_freq, capsys):
    assert main(["stats", str(one_freq), "--slowdown"]) == 2
    err = capsys.readouterr().err
    assert "--slowdown" in err and "--freq 1.6,3.3" in err


def test_a_foreign_netcdf_is_named_not_an_abtlab_dataset(tmp_path, capsys):
    path = tmp_path / "foreign.nc"
    xr.Dataset({"throughput": ("x", np.arange(3.0))}).to_netcdf(path, engine="h5netcdf")
    assert main(["stats", str(path)]) == 2
    assert "not an abtlab dataset" in capsys.readouterr().err
    assert main(["compare", str(path), str(path)]) == 2
    assert "not an abtlab dataset" in capsys.readouterr().err


def test_a_typo_in_a_subcommands_option_prints_that_subcommands_usage(tmp_path, capsys):
    assert main(["lab", "check", "--out", str(tmp_path), "--gust"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: abtlab lab check") and "unrecognized arguments: --gust" in err
    assert main(["run", "sim", "--out", str(tmp_path / "x.nc"), "--frq", "1.6"]) == 2
    assert capsys.readouterr().err.startswith("usage: abtlab run")


@pytest.mark.parametrize("name", ["overwrite", "overwite", "-overwrite", "\u2014overwrite"])
def test_lab_copy_refuses_a_name_that_looks_like_a_mistyped_option(tmp_path, capsys, name):
    os.chdir(tmp_path)
    assert main(["lab", "copy", "--", name]) == 2
    assert "did you mean --overwrite?" in capsys.readouterr().err
    assert not (tmp_path / name).exists()


def test_lab_copy_refuses_a_folder_with_something_in_it(tmp_path, capsys):
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "student_work.ipynb").write_text("{}")
    assert main(["lab", "copy", str(tmp_path / "course")]) == 2
    assert "a new or empty folder" in capsys.readouterr().err
    assert main(["lab", "copy", str(tmp_path / "new")]) == 0
    from abtlab.present.classroom import lab_notebooks
    assert sorted(p.name for p in (tmp_path / "new").glob("lab_*.ipynb")) == \
        sorted(p.name for p in lab_notebooks())


def test_the_docs_build_hides_the_themes_end_of_life_banner():
    """`make docs` sets what the theme reads as its templates load (as `mkdocs` runs)."""
    recipe = re.search(r"^docs:\n\t(.+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    env = dict(kv.split("=", 1) for kv in recipe.split() if re.fullmatch(r"[A-Z0-9_]+=\S*", kv))
    assert env, recipe
    code = "import sys; sys.argv = ['mkdocs']; import material.templates"
    pytest.importorskip("material")
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "NO_MKDOCS_2_WARNING"})
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, **env})
    assert "end of life" in loud.stderr          # the banner this silences is there
    assert "end of life" not in quiet.stderr and quiet.returncode == 0
