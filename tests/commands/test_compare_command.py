"""`abtlab compare` and `abtlab stats --format` on simulated runs."""
import json

import pytest

from abtlab.cli import main


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    for name, extra in (("s1", ["--seed", "1"]), ("s2", ["--seed", "2"]),
                        ("d1", ["--seed", "1", "--policy", "delayjc:window=16ms"])):
        assert main(["run", "sim", "--freq", "1.6,3.3", "--reps", "5", "--quiet", *extra,
                     "--out", str(d / f"{name}.nc")]) == 0
    return d


def test_compare_names_a_policy_that_differs_faster_and_seeds_not_significant(runs, capsys):
    capsys.readouterr()
    assert main(["compare", str(runs / "s1.nc"), str(runs / "s2.nc")]) == 0
    same = capsys.readouterr().out
    assert same.count("not significant") == 2 and "MiB/s" in same
    assert main(["compare", str(runs / "s1.nc"), str(runs / "d1.nc")]) == 0
    differ = " ".join(capsys.readouterr().out.split())       # titles wrap at 100 columns
    assert "policy: A ext4, B delayjc" in differ and differ.count("x faster") == 2


def test_compare_json_and_stats_markdown_json(runs, capsys):
    capsys.readouterr()
    assert main(["compare", str(runs / "s1.nc"), str(runs / "d1.nc"), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = got["tables"][0]["rows"]
    assert len(rows) == 2 and all(r["verdict"].endswith("x faster") for r in rows)
    assert main(["stats", str(runs / "s1.nc"), "--slowdown", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| freq_ghz | mean [MiB/s] |" in md and "|---|" in md
    assert main(["stats", str(runs / "s1.nc"), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["tables"][0]["rows"]
    assert [r["freq_ghz"] for r in rows] == [1.6, 3.3] and rows[0]["mean [MiB/s]"] > 100


def test_compare_refuses_a_bad_variable_by_its_option(runs, capsys):
    assert main(["compare", str(runs / "s1.nc"), str(runs / "s2.nc"), "--var", "nope"]) == 2
    assert "--var: got 'nope'" in capsys.readouterr().err
