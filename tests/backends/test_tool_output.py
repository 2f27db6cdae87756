"""Parsers of the real tools' outputs, on outputs captured from real runs (tests/fixtures/tools)."""
from pathlib import Path

import pytest

from abtlab.backends.tool_output import parse_fio, parse_iozone, parse_mdtest
from abtlab.errors import RunError

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "tools"


def test_iozone_children_and_each_child_in_bytes():
    out = parse_iozone((DATA / "iozone-3.471-t4-C.txt").read_text())
    assert out["version"] == "3.471" and out["threads"] == 4
    assert out["children_bytes_per_s"] == pytest.approx(663691.41 * 1024)
    assert out["parent_bytes_per_s"] == pytest.approx(388136.47 * 1024)
    assert out["child_bytes"] == [128 * 1024] * 4
    assert out["child_bytes_per_s"][2] == pytest.approx(186296.70 * 1024)
    # IOzone's headline is the sum of its children's rates (eq. 3's shape)
    assert sum(out["child_bytes_per_s"]) == pytest.approx(out["children_bytes_per_s"], rel=1e-6)


def test_iozone_without_per_child_lines_still_parses():
    out = parse_iozone((DATA / "iozone-3.471-t4-noC.txt").read_text())
    assert out["child_bytes_per_s"] == [] and out["children_bytes_per_s"] > 0


def test_iozone_truncated_output_is_an_error_that_says_what_is_missing():
    text = (DATA / "iozone-3.471-t4-C.txt").read_text()
    with pytest.raises(RunError, match="Children see throughput"):
        parse_iozone(text.split("Children see")[0])
    with pytest.raises(RunError, match="3 children of 4"):
        parse_iozone(text.replace("\tChild[3]", "\tnope[3]"))


def test_mdtest_creation_rate_tasks_and_version():
    out = parse_mdtest((DATA / "mdtest-4.1.0-np4-P.txt").read_text())
    assert out["version"] == "mdtest-4.1.0+dev" and out["tasks"] == 4 and out["files"] == 64
    # the rate table, not the time table (-P prints both, the time one second)
    assert out["create_rate_mean"] == pytest.approx(6127.824)
    assert out["create_rate_max"] == out["create_rate_min"] == out["create_rate_mean"]


def test_mdtest_without_summary_is_an_error():
    text = (DATA / "mdtest-4.1.0-np4-P.txt").read_text()
    with pytest.raises(RunError, match="File creation"):
        parse_mdtest(text.split("SUMMARY rate")[0])


def test_fio_json_per_job():
    out = parse_fio((DATA / "fio-3.33-iozone4.json").read_text())
    assert out["version"] == "fio-3.33" and len(out["jobs"]) == 4
    job = out["jobs"][0]
    assert job["bytes"] == 131072 and job["runtime_s"] == pytest.approx(0.003)
    assert job["bytes_per_s"] == 43690666


def test_fio_text_output_or_a_failed_job_is_an_error():
    with pytest.raises(RunError, match="not JSON|no jobs"):
        parse_fio("iozone: (g=0): rw=write, bs=(R) 32.0KiB\n")
    text = (DATA / "fio-3.33-iozone4.json").read_text().replace('"error" : 0', '"error" : 5', 1)
    with pytest.raises(RunError, match="error 5"):
        parse_fio(text)
