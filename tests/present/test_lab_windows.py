"""Lab 3's best window graded on the CI of each window's throughput over ext4's."""
import numpy as np
import pytest

from abtlab.errors import ConfigError
from abtlab.present import lab_notes
from abtlab.present.lab_windows import best_window, best_window_check, wait_ci
from abtlab.stats.ratios import format_ratio, ratio_ci
from abtlab.studies import notebook_studies as studies
from tests.run_data import make_run

CHOICES = [0, 1, 4, 16]


def _run(gains, rsd, reps, waits=None, seed=0):
    """ext4 and windows of 1, 4, 16 ms at 3.3 GHz, each window's mean throughput x gains[w]
    ext4's, its commit wait waits[w] ms against ext4's 100 ms (1% spread)."""
    pols = ("ext4", *(f"delayjc:window={w}ms" for w in (1, 4, 16)))
    ds = make_run({"ext4": 1.0, **{p: g for p, g in zip(pols[1:], gains)}}, reps=reps, rsd=rsd, seed=seed,
                  policies=pols, threads=(256,), freqs=(3.3,))
    wait = np.array([100.0, *(waits or (90.0, 95.0, 99.0))])[:, None, None, None] * 1e-3
    wait = wait * np.random.default_rng(seed + 1).normal(1, 0.01, ds.throughput.shape)
    return ds.assign(mean_commit_wait=(ds.throughput.dims, wait),
                     threads_clear_of_commits=(ds.throughput.dims, np.full(ds.throughput.shape, 64.0)),
                     commits=(ds.throughput.dims, np.full(ds.throughput.shape, 4.0)))


def _ratio(ds, w):
    return ratio_ci(*(ds.throughput.sel(policy=p).values.ravel() for p in (f"delayjc:window={w}ms", "ext4")))


def test_no_window_is_best_where_every_ci_includes_1():
    """Windows ahead in the means but inside the noise: the best is 0 (plain ext4), a
    student who chose the window with the highest mean is told no window is measurably
    best, with that window's ratio and CI beside it."""
    ds = _run((1.05, 1.10, 1.08), rsd=0.2, reps=3)
    r = _ratio(ds, 4)
    assert r[0] > 1.05 and r[1] < 1 < r[2]                 # the constructed case
    best = best_window(ds, 3.3)
    assert best.window_ms == 0 and best.tied == (0.0,) and best.n == 3
    f = best_window_check(4, best, CHOICES)
    assert f.ok is False and "no window is measurably best here at 3 repetitions" in f.message
    assert f"4 ms x{format_ratio(*r)}" in f.message
    assert best_window_check(0, best, CHOICES).ok is True
    note = lab_notes.delay_note(ds, studies.delay_table(ds), best, 3.3)
    assert not note.startswith("Answer: the paper's effect is measured here")


def test_a_window_wins_where_its_ci_excludes_1_and_none_is_measurably_ahead():
    ds = _run((1.02, 2.0, 1.3), rsd=0.02, reps=6)
    best = best_window(ds, 3.3)
    assert best.window_ms == 4 and best.tied == (4.0,) and _ratio(ds, 4)[1] > 1
    f = best_window_check(16, best, CHOICES)
    assert f.ok is False and "the measurement says 4 ms: its CI over ext4 excludes 1" in f.message
    assert f"16 ms x{format_ratio(*_ratio(ds, 16))}" in f.message
    assert best_window_check(4, best, CHOICES).ok is True
    assert lab_notes.delay_note(ds, studies.delay_table(ds), best, 3.3).startswith(
        "Answer: the paper's effect is measured here: a 4 ms window gives x")


def test_windows_not_measurably_apart_are_each_correct_and_a_long_wait_does_not_count():
    ds = _run((1.02, 1.50, 1.51), rsd=0.05, reps=4, waits=(90.0, 95.0, 150.0))
    best = best_window(ds, 3.3)           # 16 ms waits longer than ext4: out, whatever its gain
    assert best.window_ms == 4 and "16 ms x" in best.rows and "(its wait over ext4's)" in best.rows
    tie = best_window(_run((1.02, 1.50, 1.52), rsd=0.1, reps=4), 3.3)
    assert set(tie.tied) == {4.0, 16.0}
    assert best_window_check(4, tie, CHOICES).ok and best_window_check(16, tie, CHOICES).ok
    assert "4 or 16 ms" in best_window_check(1, tie, CHOICES).message


def test_one_repetition_grades_nothing_and_a_bad_choice_is_refused():
    one = best_window(_run((1.0, 2.0, 1.0), rsd=0.02, reps=1), 3.3)
    f = best_window_check(4, one, CHOICES)
    assert f.ok is None and not f.measured and "no CI" in f.message
    with pytest.raises(ConfigError, match="prediction_best_window"):
        best_window_check(8, one, CHOICES)


def test_the_wait_check_is_graded_on_the_ci_of_the_longest_windows_wait_over_the_shortests():
    """Lab 3's first check: a longer wait inside the noise is "same", a clear one "up"; the
    hint quotes the CI."""
    from abtlab.present import classroom
    noisy = _run((1.0, 1.0, 1.0), rsd=0.02, reps=3, waits=(90.0, 92.0, 93.0))
    wait = noisy.mean_commit_wait
    lo, hi = wait_ci(noisy, 3.3, 1, 16)
    assert (lo, hi) == ratio_ci(*(wait.sel(policy=f"delayjc:window={w}ms").values.ravel() for w in (16, 1)))[1:]
    clear = _run((1.0, 1.0, 1.0), rsd=0.02, reps=3, waits=(90.0, 150.0, 300.0))
    f = classroom.check_change("same", 90, 300, "mean commit wait (ms)", ci=wait_ci(clear, 3.3, 1, 16))
    assert f.ok is False and "measured change: up" in f.message
    lo, hi = wait_ci(clear, 3.3, 1, 16)
    assert f"95% CI [{lo:.2f}, {hi:.2f}]" in f.message
