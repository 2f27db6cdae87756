"""benchmarks.agreement's table: ratios and their CI from the measured values."""
import json

from benchmarks import agreement


def _result(tool):
    rows = {"4x16 ext4": {"abtlab": [10.0, 12.0, 11.0], "tool": tool,
                          "commits_abtlab": [32, 32, 32], "commits_tool": [32, 31, 32],
                          "process_commits_tool": [35, 36, 35], "tool_window": [10.5, 11.5, 11.0]}}
    return {"var": "fcr_aggregate", "own": "metarates", "tool": "mdtest", "rows": rows}


def test_table_flags_a_ci_that_excludes_one():
    text = agreement.table(_result([5.0, 6.1, 5.4]))
    line = next(ln for ln in text.splitlines() if ln.startswith("4x16 ext4"))
    assert "32/32 (35)" in line and "(CI excludes 1)" in line and "2.00 [1.92, 2.11]" in line
    assert "tool, files/window" in text


def test_table_agreeing_ci_is_not_flagged(tmp_path, capsys):
    res = _result([10.2, 11.9, 11.1])
    assert "excludes" not in agreement.table(res)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"mdtest": res}))
    assert agreement.main(["--from-json", str(path)]) == 0
    assert "metarates vs mdtest" in capsys.readouterr().out


def test_window_rate_is_files_over_the_window():
    assert agreement.window_rate({"threads": 4, "files": 16}, {"elapsed": 0.032}) == 2000


def test_layout_table_rates_each_program_against_mdtest_u():
    def row(rate, blocks):
        return {"rate": rate, "mean_fsync": [0.002, 0.002, 0.002], "commits": [9, 9, 9],
                "blocks": [blocks] * 3, "commit_ms": [1.0, 1.1, 1.2],
                **{k: [0.0, 0.1, 0.2] for k in agreement.PHASES}}
    rows = {"16x4 ext4|mdtest -u": row([10.0, 12.0, 11.0], 130),
            "16x4 ext4|abt-metarates": row([20.0, 24.0, 22.0], 60)}
    lines = agreement.layout_table(rows).splitlines()
    own = next(ln for ln in lines if "abt-metarates" in ln)
    assert "2.00 [2.00, 2.00]" in own and " 60 " in own and "1.10" in own
    assert "1.00 [1.00, 1.00]" in lines[1]
