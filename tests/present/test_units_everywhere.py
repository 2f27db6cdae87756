"""Every table a simulated run prints, read by a person: no e-notation, within 100 columns,
and the same number in the same unit in `abtlab run`, `abtlab stats`, a lab's check (as
`abtlab lab check` prints it) and notebook 08's mechanism table."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from abtlab.data.display import WIDTH, number
from abtlab.data.store import load
from abtlab.present import classroom, kernel_history_tables
from abtlab.studies import kernel_history

E_NOTATION = re.compile(r"\d[eE][+-]?\d")
ROOT = Path(__file__).resolve().parents[2]
# notebook 08's simulator row at its defaults, as one `abtlab run`
RUN = ["run", "sim", "--threads", "32", "--file-size", "64k", "--record", "32k", "--policy",
       "ext4,nojc", "--device", "hdd7200", "--reps", "4", "--seed", "1", "--freq", "1.6,3.3",
       "-o", "queue_depth=1", "--quiet"]


def _abtlab(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "abtlab", *args], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    nc = tmp_path_factory.mktemp("units") / "run.nc"
    texts = {"run": _abtlab(*RUN, "--out", str(nc)),
             "stats": _abtlab("stats", str(nc), "--slowdown", "--test", "--anova"),
             "stats --format markdown": _abtlab("stats", str(nc), "--slowdown", "--format", "markdown")}
    return nc, texts


def _ext4_low_mean_mib(nc):
    ds = load(nc).squeeze(drop=True)        # the factors with one level
    return float(ds.throughput.sel(policy="ext4", freq_ghz=1.6).mean("rep")) / 2 ** 20, ds


def test_no_printed_table_has_e_notation_or_runs_past_100_columns(printed):
    _, texts = printed
    for name, text in texts.items():
        assert not E_NOTATION.search(text), (name, E_NOTATION.search(text))
        if "markdown" not in name:       # a markdown table is one line per row by design
            wide = [ln for ln in text.splitlines() if len(ln) > WIDTH]
            assert not wide, (name, wide)


def test_the_same_number_in_the_same_unit_across_run_stats_lab_and_notebook_08(printed):
    nc, texts = printed
    mib, ds = _ext4_low_mean_mib(nc)
    shown = number(mib)
    run_row = next(ln for ln in texts["run"].splitlines() if ln.split()[:2] == ["ext4", "1.6"])
    assert run_row.split()[2] == shown and "throughput [MiB/s]" in texts["run"]
    stats_row = next(ln for ln in texts["stats"].splitlines() if ln.split()[1:3] == ["ext4", "1.6"])
    assert stats_row.split()[3] == shown and "mean [MiB/s]" in texts["stats"]
    # lab 1's first check, with the answer key that `abtlab lab check` prints
    mean = ds.throughput.mean("rep")
    os.environ[classroom.ANSWER_KEY_ENV] = "1"
    try:
        fb = classroom.check_change(None, float(mean.sel(policy="ext4", freq_ghz=1.6)),
                                    float(mean.sel(policy="ext4", freq_ghz=3.3)),
                                    "ext4 throughput (write op timed)", units="bytes/s")
    finally:
        os.environ.pop(classroom.ANSWER_KEY_ENV)
    assert f": {shown} -> " in str(fb) and " MiB/s " in str(fb)
    # notebook 08's mechanism table, its simulator row on the same dataset
    point = kernel_history.make_point(32, "64k", "32k", "hdd7200", 1, "ext4,nojc", "1.6,3.3", 4, 1)
    hist = kernel_history.History(point, runs={kernel_history.SIM: ds})
    table = kernel_history_tables.mechanism_table(hist, policy="ext4")
    assert number(table.loc[(kernel_history.SIM, 1.6), "throughput [MiB/s]"]) == shown
    assert not E_NOTATION.search(table.to_string(float_format=number))
