"""Answer-first pages: each study notebook opens with its answer (a package function that
prints it in a sentence), `abtlab report`'s index opens with what each notebook answered,
and `abtlab lab check` gives each lab's answer key instead of "[NO PREDICTION YET]"."""
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from abtlab.present import answers, classroom
from abtlab.present.report import NOTEBOOK_DIR, Item, Outcome, write_index
from abtlab.stats import slowdown
from tests.run_data import make_run

STUDIES = sorted(NOTEBOOK_DIR.glob("0*.ipynb"))


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_study_notebook_opens_with_its_answer(path):
    """A markdown '## The answer' and, right after it, the first code cell past the
    parameters and imports, which calls abtlab.present.answers once."""
    cells = nbformat.read(path, as_version=4).cells
    code = [i for i, c in enumerate(cells) if c.cell_type == "code"]
    params = next(i for i in code if "parameters" in cells[i].metadata.get("tags", []))
    imports = next(i for i in code if "from abtlab.present import answers" in cells[i].source)
    assert imports == next(i for i in code if i > params)          # imports come right after
    first = next(i for i in code if i > imports)
    assert cells[first - 1].cell_type == "markdown"
    assert cells[first - 1].source.startswith("## The answer")
    calls = [ln for ln in cells[first].source.splitlines() if ln.startswith("answers.")]
    assert len(calls) == 1 and "(" in calls[0]


def test_slowdown_answer_is_a_sentence_from_the_data(capsys):
    ds = make_run({"ext4": 0.5, "nojc": 1.0}, reps=8, rsd=0.02, threads=(256,))
    answers.slowdown(ds)
    out = capsys.readouterr().out.strip()
    sd = slowdown(ds).sel(freq_ghz=3.3, threads=256)
    r = float(sd.ratio.sel(policy="ext4"))
    assert out.startswith("Answer: throughput at 3.3 GHz over 1.6 GHz (SIMULATED)")
    assert f"ext4: x{r:.2f} [" in out and "slower at the faster clock" in out
    assert "1 of 2 configurations are slower" in out


def test_lab_check_without_prediction_gives_the_answer_key(monkeypatch):
    kw = dict(before=2.0, after=1.0, what="throughput", ci=(0.4, 0.6))
    monkeypatch.delenv(classroom.ANSWER_KEY_ENV, raising=False)
    assert str(classroom.check_change(None, **kw)).startswith("[NO PREDICTION YET]")
    monkeypatch.setenv(classroom.ANSWER_KEY_ENV, "1")
    key = str(classroom.check_change(None, **kw))
    assert key.startswith("[ANSWER KEY] throughput: 2 -> 1 (x0.50")
    assert "measured change: down; graded correct: 'slower'" in key
    assert "graded correct: an estimate from 0.425 to 0.575" in str(
        classroom.check_number(None, 0.5, "ratio", rel_tol=0.15))
    assert "graded correct: 16 (of [0, 1, 16])" in str(classroom.check_choice(None, 16.0, [0, 1, 16], "window"))
    # a written prediction is graded as before
    assert str(classroom.check_change("slower", **kw)).startswith("[CORRECT]")


def _executed(tmp_path, name, lines):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(...)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="\n".join(lines) + "\n")]
    nb.cells = [cell]
    p = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, p)
    return p


def test_index_opens_with_the_answers(tmp_path):
    nb = NOTEBOOK_DIR / "01_slowdown.ipynb"
    ok = Outcome(Item(nb, name="one"), "ok", 3.0,
                 _executed(tmp_path, "one", ["backend=sim", "Answer: ext4: x0.53 [0.45, 0.61]"]))
    bad = Outcome(Item(nb, name="two"), "failed", 1.0, None, error="RunError: no disk")
    page = write_index([ok, bad], tmp_path).read_text()
    assert page.index("<h2>Answers</h2>") < page.index("<h2>Notebooks</h2>")
    answers_part = page[page.index("<h2>Answers</h2>"):page.index("<h2>Notebooks</h2>")]
    assert "Answer: ext4: x0.53 [0.45, 0.61]" in answers_part and "backend=sim" not in answers_part
    assert "failed: RunError: no disk" in answers_part


@pytest.mark.slow
def test_lab_check_prints_and_indexes_each_labs_answer_key(tmp_path):
    out = subprocess.run([sys.executable, "-m", "abtlab", "lab", "check", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "NO PREDICTION YET" not in out.stdout
    assert out.stdout.count("[ANSWER KEY]") >= 3 and "graded correct:" in out.stdout
    page = (tmp_path / "index.html").read_text()
    first = page[page.index("<h2>Answers</h2>"):page.index("<h2>Notebooks</h2>")]
    assert first.count("[ANSWER KEY]") >= 3
    assert "NO PREDICTION YET" not in Path(tmp_path / "lab_1_faster_cpu__data-sim.html").read_text()


def _lock_grid(speedup, noise, reps=6):
    """A constructed lock grid: t_mutex / t_spin = speedup per cell, each rep's ratio off
    by a factor exp(+-noise), exp(+-noise/2), ... (symmetric: the geometric mean is speedup)."""
    import numpy as np
    from abtlab.studies import syscalls as sc
    from tests.studies.syscalls_data import constructed_elapsed
    ds = constructed_elapsed(np.asarray(speedup, float), reps=reps)
    wobble = noise * np.array([(1 if k % 2 else -1) / (1 + k // 2) for k in range(reps)])
    ds["elapsed"].loc[{"lock": "mutex"}] = ds.elapsed.sel(lock="mutex") * np.exp(wobble)
    return sc.add_lock_speedup(ds)


def test_syscalls_answer_says_no_difference_where_the_ci_includes_1(capsys):
    import numpy as np
    here = _lock_grid(np.full((3, 2), 1.02), noise=0.3)
    assert (here.spin_speedup_lo < 1).all() and (here.spin_speedup_hi > 1).all()
    answers.syscalls(here, None)
    out = capsys.readouterr().out
    assert "spinlock faster at no cell; mutex faster at no cell" in out
    assert "no difference measurable here at 6 repetitions at threads=1 work=1" in out
    assert "2 hardware threads" in out


def test_syscalls_answer_names_the_winner_where_the_ci_excludes_1_and_agrees_with_the_table(capsys):
    import numpy as np
    from abtlab.studies import syscalls as sc
    speed = np.array([[2.0, 1.0], [1.0, 1.0], [1.0, 0.4]])     # threads (1, 2, 8) x work (1, 100)
    here = _lock_grid(speed, noise=0.02)
    answers.syscalls(here, None)
    out = capsys.readouterr().out
    assert "spinlock faster at threads=1 work=1 x2.0" in out
    assert "mutex faster at threads=8 work=100 x0.4" in out
    groups = out.split("excludes 1): ", 1)[1].rstrip(".\n").split("; ")      # one per side
    c = sc.compare(here).to_dataframe().reset_index()
    for r in c.itertuples():   # every cell is said on the side its winner_here column gives
        side = {1: "spinlock faster at", -1: "mutex faster at", 0: "no difference measurable"}[r.winner_here]
        said = [g for g in groups if f"threads={r.threads} work={r.work} x" in g]
        assert len(said) == 1 and said[0].startswith(side)


def _dio(speedups, noise, reps=6):
    import numpy as np
    import xarray as xr
    from abtlab.studies import syscalls as sc
    s = np.asarray(speedups, float)                            # workload (2, 3) x block (4, 64 KiB)
    direct = np.ones(s.shape + (reps,))
    wobble = noise * np.array([(1 if k % 2 else -1) / (1 + k // 2) for k in range(reps)])
    buffered = direct * s[..., None] * np.exp(wobble)
    ds = xr.Dataset({"elapsed": (("mode", "workload", "block_size", "rep"), np.stack([buffered, direct]))},
                    coords={"mode": ["buffered", "direct"], "workload": [2, 3], "block_size": [4096, 65536],
                            "rep": range(reps)}, attrs={"filesystem": "ext4"})
    return sc.add_dio_speedup(ds)


def test_direct_io_answer_no_difference_where_the_ci_includes_1(capsys):
    answers.direct_io(_dio([[1.0, 1.0], [1.0, 1.0]], noise=0.3))
    out = capsys.readouterr().out
    assert "direct I/O faster" not in out and "buffered faster" not in out
    assert "no difference measurable here: workload 2 (random reads of a file), 4 KiB" in out
    assert "at 6 repetitions" in out


def test_direct_io_answer_names_the_winner_where_the_ci_excludes_1(capsys):
    answers.direct_io(_dio([[1.0, 3.0], [0.5, 1.0]], noise=0.02))
    out = capsys.readouterr().out
    assert "direct I/O faster: workload 2 (random reads of a file), 64 KiB: x3.00" in out
    assert "buffered faster: workload 3 (single-block overwrite + syncfs), 4 KiB: x0.50" in out


def test_bps_answer_no_difference_on_a_tie_and_a_winner_on_a_clear_lead(capsys):
    import numpy as np
    import pandas as pd
    x = np.linspace(1, 10, 12)
    tie = pd.DataFrame({"elapsed": 100 / x, "bps": x, "iops": x, "bandwidth": 2 * x, "arpt": 20 - x})
    answers.bps(None, tie)
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "no difference measurable here at 12 workloads" in out
    rng = np.random.default_rng(1)
    clear = tie.assign(elapsed=30 - 2 * x, iops=x + 3 * rng.standard_normal(12),
                       bandwidth=x + 3 * rng.standard_normal(12), arpt=-x + 3 * rng.standard_normal(12))
    answers.bps(None, clear)
    out = capsys.readouterr().out
    assert "simulated (12 workloads): bps tracks run time best" in out


BUSY = ("CPUs 100% busy over 0.25 s, load 6.44 on 2 CPUs; governor none; other abtlab processes 2; "
        "swap used 0 MiB, 0 pages moved in 0.25 s")


def test_a_run_on_a_busy_host_names_no_side_and_its_table_agrees(capsys):
    """Study 07 on a busy host (its host_quiet attr): even a CI that excludes 1 names no
    side, as compare's winner_here column says; the CIs are still printed; the same
    grid on a quiet host names its sides."""
    import numpy as np
    from abtlab.studies import syscalls as sc
    here = _lock_grid(np.array([[2.0, 1.0], [1.0, 1.0], [1.0, 0.4]]), noise=0.02).assign_attrs(host_quiet=BUSY)
    answers.syscalls(here, None)
    out = capsys.readouterr().out
    assert "spinlock faster at no cell; mutex faster at no cell" in out
    assert "no side named at 6 repetitions, the host was busy as the run started (CPUs 100% busy, load 6.44" in out
    assert "threads=1 work=1 x2.0" in out and (sc.compare(here).winner_here == 0).all()
    dio = _dio([[1.0, 3.0], [0.5, 1.0]], noise=0.02).assign_attrs(host_quiet=BUSY)
    answers.direct_io(dio)
    out = capsys.readouterr().out
    assert "direct I/O faster" not in out and "buffered faster" not in out
    assert "no side named, the host was busy" in out and "64 KiB: x3.00" in out
    quiet = BUSY.replace("100% busy", "2% busy").replace("load 6.44", "load 0.10").replace("processes 2", "processes 0")
    answers.direct_io(dio.assign_attrs(host_quiet=quiet))
    assert "direct I/O faster: workload 2" in capsys.readouterr().out


def test_bps_on_a_busy_host_names_no_metric(capsys):
    import numpy as np
    import pandas as pd
    from abtlab.bps import ranking, EXPECTED_SIGN, METRICS
    x = np.linspace(1, 10, 12)
    rng = np.random.default_rng(1)
    clear = pd.DataFrame({"runtime": 30 - 2 * x, "bps": x, "iops": x + 3 * rng.standard_normal(12),
                          "bandwidth": x + 3 * rng.standard_normal(12), "arpt": -x + 3 * rng.standard_normal(12)})
    r = ranking.rank(clear, "runtime", METRICS, EXPECTED_SIGN)
    r.insert(0, "set", "size")
    r["winner"] = r.attrs["winner"] or ""
    assert r.winner.iloc[0] == "bps"                          # the constructed lead
    r.attrs["busy"] = "the host was busy as the run started (CPUs 100% busy, load 6.44 on 2 CPUs)"
    answers.bps(r, None)
    out = capsys.readouterr().out
    assert "set size: no metric named at 12 workloads, the host was busy" in out and "tracks run time best" not in out
