"""abtlab.present.paper_terms and lab_notes: a run read in the paper's terms, and what the
labs say beside their checks, computed from what was measured."""
import numpy as np
import pandas as pd
import pytest

from abtlab.errors import ConfigError
from abtlab.present import lab_notes, paper_terms
from abtlab.studies import notebook_studies as studies
from abtlab.data.display import number
from abtlab.stats.intervals import difference_ci
from abtlab.stats.ratios import format_ratio, ratio_ci
from tests.run_data import make_run


def _with_counts(ds, var, low, high):
    """ds with a count var whose mean is `low` at 1.6 GHz and `high` at 3.3 GHz."""
    shape = ds.throughput.shape
    v = np.where(ds.freq_ghz.values[None, :, None, None] == 1.6, low, high) * np.ones(shape)
    return ds.assign({var: (ds.throughput.dims, v)})


def test_unblocked_prefers_the_evidence_and_names_span_overlap_as_not_the_papers_count():
    ds = _with_counts(make_run({"ext4": 0.5, "nojc": 2.0}, threads=(256,)), "threads_clear_of_commits", 200, 100)
    u = paper_terms.unblocked(ds, 1.6, 3.3)
    assert not u.evidence and u.change() == "down" and "not the paper's unblocked count" in u.label
    assert paper_terms.unblocked_var(ds) == "threads_clear_of_commits"
    ev = _with_counts(ds, "unblocked_threads", 240, 40)
    u = paper_terms.unblocked(ev, 1.6, 3.3)
    assert u.evidence and (u.low, u.high, u.writers) == (240, 40, 256)
    assert u.sentence() == ("unblocked threads (trace evidence: write op never slept on the journal): "
                            "240 -> 40 of 256 (change -200, 95% CI [-200, -200], 6 repetitions at each "
                            "clock), fewer at the faster clock")    # a count that never varied: exact
    assert paper_terms.unblocked_var(ev) == "unblocked_threads"
    nan = ev.assign(unblocked_threads=ev.unblocked_threads * np.nan)   # a run without the trace
    assert not paper_terms.unblocked(nan, 1.6, 3.3).evidence


def _with_rep_counts(low, high, reps):
    """A run whose ext4 unblocked_threads are the values `low` at 1.6 GHz and `high` at 3.3 GHz,
    one per repetition."""
    ds = make_run({"ext4": 0.5, "nojc": 2.0}, reps=reps, threads=(256,))
    v = np.where(ds.freq_ghz.values[None, :, None, None] == 1.6, np.array(low)[None, None, None, :],
                 np.array(high)[None, None, None, :]) * np.ones(ds.throughput.shape)
    return ds.assign(unblocked_threads=(ds.throughput.dims, v))


def test_unblocked_change_is_graded_by_the_welch_ci_of_the_difference():
    """Lab 2 flipped on a 5% tolerance (233.3 -> 234.7 'same', 236.7 -> 185.3 'fewer'): the
    direction now needs the 95% Welch CI of high - low to exclude 0."""
    from abtlab.stats.intervals import difference_ci
    low, high = [236, 190, 284], [185, 240, 131]           # means 236.7 -> 185.3, wide spread
    d, lo, hi, n = difference_ci(low, high)
    sd = np.sqrt(np.var(low, ddof=1) / 3 + np.var(high, ddof=1) / 3)
    assert d == pytest.approx(np.mean(high) - np.mean(low)) and n == 3
    assert lo < 0 < hi and (hi - lo) / 2 > 2.776 * sd       # Welch df < 4: wider than t(4)
    u = paper_terms.unblocked(_with_rep_counts(low, high, 3), 1.6, 3.3)
    assert (u.n, u.change()) == (3, "same") and u.ci == pytest.approx((lo, hi))
    assert u.sentence().endswith("no difference measurable here at 3 repetitions")
    assert f"95% CI [{lo:.4g}, {hi:.4g}]" in u.sentence()
    tight = paper_terms.unblocked(_with_rep_counts([236, 238, 240], [185, 186, 184], 3), 1.6, 3.3)
    assert tight.change() == "down" and tight.ci[1] < 0 and tight.sentence().endswith("fewer at the faster clock")
    up = paper_terms.unblocked(_with_rep_counts([10, 11, 10], [16, 16, 17], 3), 1.6, 3.3)
    assert up.change() == "up" and up.ci[0] > 0


def test_one_repetition_gives_no_ci_and_no_graded_direction():
    ds = _with_rep_counts([240], [40], 1)
    u = paper_terms.unblocked(ds, 1.6, 3.3)
    assert u.ci is None and u.change() == "unknown" and "no CI" in u.sentence()
    f = lab_notes.unblocked_check("fewer", ds, 1.6, 3.3)
    assert f.ok is None and str(f).startswith("[NOT MEASURED HERE]") and "240 -> 40 of 256" in f.message
    assert lab_notes.batching_note(ds, 1.6, 3.3).startswith("Answer: this data has fewer than 2 repetitions")


def test_lab2_unblocked_check_grades_on_the_ci_and_quotes_it_beside_the_hint():
    wide = _with_rep_counts([236, 190, 284], [185, 240, 131], 3)
    u = paper_terms.unblocked(wide, 1.6, 3.3)
    f = lab_notes.unblocked_check("fewer", wide, 1.6, 3.3)
    assert str(f).startswith("[NOT QUITE]") and "measured change: same" in f.message
    assert "no difference measurable here at 3 repetitions" in f.message and u.ci_text() in f.message
    assert str(lab_notes.unblocked_check("same", wide, 1.6, 3.3)).startswith("[CORRECT]")
    assert "no difference in unblocked threads measurable here at 3 repetitions" in lab_notes.batching_note(wide, 1.6, 3.3)
    tight = _with_rep_counts([236, 238, 240], [185, 186, 184], 3)
    f = lab_notes.unblocked_check("same", tight, 1.6, 3.3)
    t = paper_terms.unblocked(tight, 1.6, 3.3)
    assert str(f).startswith("[NOT QUITE]") and "measured change: down" in f.message
    hint = f.message.split("Why: ")[1]
    assert "238 -> 185 of 256" in hint and f"95% CI [{t.ci[0]:.4g}, {t.ci[1]:.4g}]" in hint
    assert str(lab_notes.unblocked_check("fewer", tight, 1.6, 3.3)).startswith("[CORRECT]")
    with pytest.raises(ConfigError, match="prediction_unblocked"):
        lab_notes.unblocked_check("maybe", tight, 1.6, 3.3)


def test_faster_cpu_note_says_whether_the_papers_effect_is_measured():
    slow = _with_counts(make_run({"ext4": 0.5, "nojc": 2.0}, reps=8, rsd=0.02, threads=(256,)),
                        "unblocked_threads", 240, 40)
    note = lab_notes.faster_cpu_note(slow, 1.6, 3.3)
    assert note.startswith("Answer: the paper's effect is measured here") and "240 -> 40 of 256" in note
    fast = _with_counts(make_run({"ext4": 2.0, "nojc": 2.0}, reps=8, rsd=0.02, threads=(256,)),
                        "unblocked_threads", 180, 185)
    note = lab_notes.faster_cpu_note(fast, 1.6, 3.3)
    assert note.startswith("Answer: this machine measures something else than the paper")
    r = paper_terms.ratio(fast, "throughput", 1.6, 3.3)
    assert f"x{r[0]:.2f} [{r[1]:.2f}, {r[2]:.2f}] with the write op timed" in note and r[1] > 1
    assert "180 -> 185 of 256" in note and "more at the faster clock" in note and "x0.53" in note
    spread = fast.unblocked_threads + np.resize([-20.0, 20.0], fast.sizes["rep"])   # same means, a spread
    fast = fast.assign(unblocked_threads=spread)
    assert "no difference measurable here at 8 repetitions" in lab_notes.faster_cpu_note(fast, 1.6, 3.3)
    hints = lab_notes.ext4_hints(fast, 1.6, 3.3)
    assert all("180 -> 185 of 256" in h for h in hints.values())     # the count beside every hint


def test_simulated_terms_say_why_from_the_records():
    import abtlab.sim as sim
    ds = sim.simulate(reps=2, seed=1, threads=[64], freq_ghz=[1.6, 3.3], policy=["ext4"])
    text = paper_terms.terms_sentence(ds, 1.6, 3.3)
    t = __import__("abtlab.model.terms", fromlist=["terms_table"]).terms_table(ds)
    lead = t.set_index("freq_ghz").lead_to_commit * 1e3
    assert f"went {lead[1.6]:.3g} -> {lead[3.3]:.3g} ms" in text
    assert "writers done before the first commit" in text
    assert "keeps no records" in paper_terms.terms_sentence(make_run(), 1.6, 3.3)
    assert "own CPU time" not in text           # the simulator records no CPU time


def test_the_terms_split_the_workloads_cpu_time_from_the_rest_where_recorded():
    import abtlab.sim as sim
    from abtlab.model.terms import terms_table
    ds = sim.simulate(reps=2, seed=1, threads=[64], freq_ghz=[1.6, 3.3], policy=["ext4"])
    t = terms_table(ds).set_index("freq_ghz")
    # as a traced run stores them: 60% of the delay and of the lag on the workload's threads
    for term in ("lead_to_commit", "writer_lag"):
        share = ds.freq_ghz.copy(data=0.6 * t[term].loc[ds.freq_ghz.values].values)
        ds[f"{term}_cpu"] = ds.throughput * 0 + share
    text = paper_terms.terms_sentence(ds, 1.6, 3.3)
    lo, hi = t.loc[1.6], t.loc[3.3]
    assert (f"of the delay, the workload's own CPU time {0.6 * lo.lead_to_commit * 1e3:.3g} -> "
            f"{0.6 * hi.lead_to_commit * 1e3:.3g} ms and the rest (other tasks' CPU, idle) "
            f"{0.4 * lo.lead_to_commit * 1e3:.3g} -> {0.4 * hi.lead_to_commit * 1e3:.3g} ms") in text
    assert f"of the lag, the workload's own CPU time {0.6 * lo.writer_lag * 1e3:.3g}" in text
    # on several CPUs its CPU time can exceed the span: no negative rest
    ds["lead_to_commit_cpu"] = ds.lead_to_commit_cpu * 10
    assert "(summed over CPUs)" in paper_terms.terms_sentence(ds, 1.6, 3.3)


def _table(gains, waits, unblocked=None):
    t = pd.DataFrame({"window_ms": [0.0, 1.0, 16.0], "throughput_mib_s": gains, "commit_wait_ms": waits})
    if unblocked is not None:
        t["unblocked_threads"] = unblocked
    return t


@pytest.mark.parametrize("gains, waits, best, start", [
    ([100, 300, 250], [50, 40, 60], 1.0, "Answer: the paper's effect is measured here: a 1 ms window gives x3.00"),
    ([100, 200, 250], [50, 80, 90], 0.0, "Answer: a delayJC window raises the throughput here"),
    ([100, 90, 80], [50, 80, 90], 0.0, "Answer: this machine measures something else than the paper"),
])
def test_delay_note_follows_the_measured_table(gains, waits, best, start):
    ds = _with_counts(make_run({"ext4": 1.0, "nojc": 1.0}, threads=(256,), freqs=(1.6, 3.3)),
                      "unblocked_threads", 64, 64)
    table = _table(gains, waits)
    row = table[table.window_ms == best].iloc[0]
    best_row = pd.Series({"window_ms": best, "gain_over_ext4": row.throughput_mib_s / gains[0]})
    note = lab_notes.delay_note(ds, table, best_row, 3.3)
    assert note.startswith(start), note
    assert "ext4 leaves 64 of 256 unblocked threads here, so at most about x4.00" in note


def test_lab_data_refuses_bad_parameters_before_running():
    with pytest.raises(ConfigError, match="threads"):
        studies.lab_data("sim", threads=0)
    with pytest.raises(ConfigError, match="record_size"):
        studies.lab_data("sim", file_size="128k", record_size="48k")
    with pytest.raises(ConfigError, match="guest_kernel"):
        studies.lab_data("sim", guest_kernel="2.6")
    with pytest.raises(ConfigError, match="guest_depth"):
        studies.lab_data("sim", guest_depth=0)


def test_lab_data_reaches_the_papers_cell_and_lab3_takes_the_guest_kernels_delayjc():
    ds = studies.lab_data("sim", threads=256, file_size="128k", record_size="32k", policy="ext4",
                          freqs=(1.6, 3.3), reps=1, quiet=True)
    assert [ds[d].values.tolist() for d in ("threads", "file_size", "record_size")] == [[256], [131072], [32768]]
    assert studies.lab_delay_policies("guest", [2]) == "ext4;kdelayjc:window=2ms,max_resets=64"
    assert studies.lab_delay_policies("sim", [2]).startswith("ext4;delayjc:window=2ms")
    assert studies._window_ms("kdelayjc:window=2ms,max_resets=8") == 2.0


def test_kernel_history_answer_is_in_the_papers_terms(capsys):
    """Notebook 08's sentence and table (the demo's first screen): the write-op ratio, the
    fsync-timed one beside it, and the unblocked threads at each clock with what counted them."""
    from abtlab.present import answers
    from abtlab.studies import kernel_history
    hist = kernel_history.history_data("sim", kernel_history.make_point(threads=16, policy="ext4", reps=2),
                                       quiet=True)
    answers.kernel_history(hist)
    out = capsys.readouterr().out
    ds = hist.runs["simulator"]
    u = paper_terms.unblocked(ds, 1.6, 3.3)
    w, f = (paper_terms.ratio(ds, v, 1.6, 3.3) for v in ("throughput", "throughput_fsync"))
    assert out.startswith("Answer: ext4 throughput with the write op timed (the paper's)")
    assert f"x{w[0]:.2f} [{w[1]:.2f}, {w[2]:.2f}]" in out and f"with the fsync timed x{f[0]:.2f}" in out
    assert u.text() in out and ("span overlap" in out) != u.evidence
    table = paper_terms.history_table(hist)
    col = table.attrs["unblocked_column"]
    assert table.loc["simulator", col].startswith(u.text())
    assert table.loc["the paper", col] == "240 -> 40 of 256" and table.loc["host", col] == "-"


def test_a_slowdown_hint_claims_the_papers_effect_only_when_fewer_writers_are_unblocked():
    base = make_run({"ext4": 0.5, "nojc": 2.0}, reps=8, rsd=0.02, threads=(256,))
    fewer = lab_notes.ext4_hints(_with_counts(base, "unblocked_threads", 240, 40), 1.6, 3.3)["down"]
    flat = _with_counts(base, "unblocked_threads", 180, 181)
    flat = flat.assign(unblocked_threads=flat.unblocked_threads + np.resize([-20.0, 20.0], 8))  # a spread
    same = lab_notes.ext4_hints(flat, 1.6, 3.3)["down"]
    assert "This is the paper's effect." in fewer and "240 -> 40 of 256" in fewer
    assert "paper's effect" not in same and "no difference measurable here at 8 repetitions" in same


def test_lab_1_on_the_papers_machine_preset_measures_the_papers_effect_and_says_so():
    """sim_params="paper_machine" (examples/sim_paper_machine.toml): the lab's closing answer
    follows the measurement, whichever way it goes."""
    ds = studies.lab_data("sim", reps=2, sim_params="paper_machine", quiet=True)
    note = lab_notes.faster_cpu_note(ds, 1.6, 3.3)
    slower = paper_terms.direction(paper_terms.ratio(ds, "throughput", 1.6, 3.3)) == "down"
    assert note.startswith("Answer: the paper's effect is measured here") == slower
    with pytest.raises(ConfigError, match="sim_params"):
        studies.lab_data("sim", sim_params="no-such-file.toml")


def test_magnitudes_note_says_the_write_op_is_the_page_cache_and_the_fsync_the_disk():
    from abtlab.data.display import quantity
    ds = make_run({"ext4": 1.0, "nojc": 1.0}, base=145e9, rsd=0.0, threads=(256,))
    ds["throughput_fsync"] = ds.throughput / 145e9 * 40e6           # 40 MB/s with the fsync timed
    note = lab_notes.magnitudes_note(ds, (1.6, 3.3))
    assert f"with the write op timed (eq. 3): {quantity(145e9, 'bytes/s')} at 1.6 GHz" in note
    assert "GiB/s at 1.6 GHz" in note and "(memory speed: the page cache, not the disk)" in note
    assert f"with the fsync timed: {quantity(40e6, 'bytes/s')} at 1.6 GHz" in note
    assert "MiB/s at 1.6 GHz" in note and "(a disk's speed)" in note


class _Side:
    def __init__(self, label, ds, this_run=False):
        self.label, self.ds, self.this_run = label, ds, this_run


def test_side_by_side_note_sets_each_side_beside_the_run_from_its_data_and_asks_why():
    here = make_run({"ext4": 2.0, "nojc": 2.0}, rsd=0.02, threads=(256,))
    paper = make_run({"ext4": 0.5}, rsd=0.02, policies=("ext4",), threads=(256,))
    other = make_run({"ext4": 1.3}, rsd=0.02, policies=("ext4",), threads=(32,), freqs=(1.2, 2.4))
    note = lab_notes.side_by_side_note(here, [_Side("the SIMULATED one", paper),
                                              _Side("the guest's one; VIRTUAL TIME", other)], 1.6, 3.3)
    for ds, lo, hi in ((here, 1.6, 3.3), (paper, 1.6, 3.3), (other, 1.2, 2.4)):
        r = paper_terms.ratio(ds, "throughput", lo, hi)
        assert f"at {hi:g} over {lo:g} GHz: x{r[0]:.2f} [{r[1]:.2f}, {r[2]:.2f}]" in note
    assert "- this run (SIMULATED), at 3.3 over 1.6 GHz" in note
    assert "- the SIMULATED one, at 3.3 over 1.6 GHz" in note and "slower at the faster clock: the paper's effect" in note
    assert "- the guest's one; VIRTUAL TIME, at 2.4 over 1.2 GHz" in note     # its own clocks
    assert "ext4 x0.53" in note and note.endswith("Why do they differ?")
    mine = lab_notes.side_by_side_note(paper, [_Side("the SIMULATED one", paper, this_run=True)], 1.6, 3.3)
    assert "- this run, the SIMULATED one" in mine and "- this run (" not in mine


def _windows_run(gain, rsd, reps, wait_ms=(100.0, 300.0), seed=0):
    """ext4 and a 4 ms window at 3.3 GHz: the window's mean throughput x`gain` ext4's, its
    commit wait wait_ms[1] against ext4's wait_ms[0] (1% spread)."""
    pols = ("ext4", "delayjc:window=4ms")
    ds = make_run({"ext4": 1.0, pols[1]: gain}, reps=reps, rsd=rsd, seed=seed, policies=pols,
                  threads=(256,), freqs=(3.3,))
    rng = np.random.default_rng(seed + 1)
    wait = np.array(wait_ms)[:, None, None, None] * 1e-3 * rng.normal(1, 0.01, ds.throughput.shape)
    return ds.assign(mean_commit_wait=(ds.throughput.dims, wait),
                     threads_clear_of_commits=(ds.throughput.dims, np.full(ds.throughput.shape, 64.0)),
                     commits=(ds.throughput.dims, np.full(ds.throughput.shape, 4.0)))


def test_delay_side_by_side_note_gives_each_best_window_with_its_ci_or_the_bound_without_windows():
    here = _windows_run(gain=1.03, rsd=0.1, reps=4)           # a window's gain inside the noise
    paper = _windows_run(gain=3.6, rsd=0.02, reps=6)
    guest = _with_counts(make_run({"ext4": 1.0}, policies=("ext4",), threads=(256,)), "unblocked_threads", 200, 64)
    note = lab_notes.delay_side_by_side_note(here, [_Side("sim", paper), _Side("guest", guest)], 3.3)
    a, b = (paper.throughput.sel(policy=p).values.ravel() for p in ("delayjc:window=4ms", "ext4"))
    r = ratio_ci(a, b)
    assert r[1] > 1 and f"- sim: a 4 ms window, x{format_ratio(*r)} ext4's throughput, a mean commit wait +" in note
    d, lo, hi, _ = difference_ci(*(paper.mean_commit_wait.sel(policy=p).values / 1e-3
                                   for p in ("ext4", "delayjc:window=4ms")))
    assert lo > 0 and f"wait +{number(d, 3)} ms [{number(lo, 3)}, {number(hi, 3)}] over ext4's" in note
    r_here = ratio_ci(*(here.throughput.sel(policy=p).values.ravel() for p in ("delayjc:window=4ms", "ext4")))
    assert r_here[0] > 1 > r_here[1]      # the constructed run: the window ahead, its CI including 1
    assert (f"- this run: no difference measurable here at 4 repetitions (the most, a 4 ms window: "
            f"x{format_ratio(*r_here)} ext4's throughput") in note
    assert "- guest: no delayJC windows in it; ext4 leaves 64 of 256 unblocked threads at 3.3 GHz, " \
           "so a window could give back at most about x4.00" in note
    assert "delayJC x3.65" in note and note.endswith("Why do they differ?")


def test_delay_note_names_no_window_where_its_gains_ci_includes_1():
    """A window ahead of ext4 in the means by more than 5% but inside the noise: lab 3's
    answer says no gain is measurable, with the CI, instead of "a window raises it"."""
    ds = _windows_run(gain=1.12, rsd=0.2, reps=3, seed=0)
    table = studies.delay_table(ds)
    r = ratio_ci(*(ds.throughput.sel(policy=p).values.ravel() for p in ("delayjc:window=4ms", "ext4")))
    assert r[0] > 1.05 and r[1] < 1 < r[2]                      # the constructed case
    best = pd.Series({"window_ms": 0.0, "gain_over_ext4": 1.0})
    note = lab_notes.delay_note(ds, table, best, 3.3)
    assert note.startswith(f"Answer: no window's gain is measurable here (x{format_ratio(*r)}, no difference "
                           "measurable here at 3 repetitions)"), note
    sure = _windows_run(gain=2.0, rsd=0.02, reps=6)
    assert lab_notes.delay_note(sure, studies.delay_table(sure), best, 3.3).startswith(
        "Answer: a delayJC window raises the throughput here")


def _commits_run(low, high):
    """ext4 at 1.6 and 3.3 GHz with these journal commits per repetition."""
    ds = make_run({"ext4": 1.0}, policies=("ext4",), threads=(256,), reps=len(low))
    v = np.stack([np.array(low, float), np.array(high, float)])[None, :, None, :]
    return ds.assign(commits=(ds.throughput.dims, v))


def test_lab2_commits_are_graded_on_the_ci_of_their_change(monkeypatch):
    """Two runs whose means move apart within the noise (6.3 -> 7.3, then 4.7 -> 4.3, as
    the host gave) both say "same", no difference measurable; a steady change is graded;
    a wrong prediction gets the hint for what was measured; one repetition grades nothing."""
    for low, high in (([5, 7, 7], [8, 7, 7]), ([4, 5, 5], [4, 4, 5])):
        f = lab_notes.commits_check("more", _commits_run(low, high), 1.6, 3.3, 256)
        d, lo, hi, n = difference_ci(low, high)
        assert lo < 0 < hi and f.ok is False and "measured change: same" in f.message
        assert f"95% CI [{number(lo)}, {number(hi)}], 3 repetitions at each clock" in f.message
        assert "Why: no difference measurable here at 3 repetitions, the CI includes 0" in f.message
    f = lab_notes.commits_check("more", _commits_run([4, 4, 5], [8, 9, 8]), 1.6, 3.3, 256)
    assert f.ok is True and "measured change: up" in f.message and "more, smaller commits" in f.message
    f = lab_notes.commits_check("same", _commits_run([4, 4, 5], [8, 9, 8]), 1.6, 3.3, 256)
    assert f.ok is False and f.message.endswith(lab_notes.commit_hints(_commits_run([4, 4, 5], [8, 9, 8]),
                                                                       1.6, 3.3, 256)["up"])
    steady = lab_notes.commits_check("more", _commits_run([5, 5, 5], [5, 5, 5]), 1.6, 3.3, 256)
    assert steady.ok is False and "Why: the same count in every repetition at both clocks" in steady.message
    one = lab_notes.commits_check("fewer", _commits_run([4], [8]), 1.6, 3.3, 256)
    assert one.ok is None and not one.measured and "no CI" in one.message
    with pytest.raises(ConfigError, match="prediction_commits"):
        lab_notes.commits_check("sideways", _commits_run([4, 4, 5], [8, 9, 8]), 1.6, 3.3, 256)


def test_lab2_commits_on_a_busy_host_are_not_graded(monkeypatch):
    """A host run that started on a busy host (its host_quiet attr): the commit count's CI
    is shown but no direction graded, even where it excludes 0 (on this host the count
    moved with the load between sittings); a quiet host's run is graded on the CI; a bad
    word is still refused."""
    busy = "CPUs 98% busy over 0.25 s, load 3.73 on 2 CPUs; governor none; other abtlab processes 2; " \
           "swap used 0 MiB, 0 pages moved in 0.25 s"
    quiet = "CPUs 3% busy over 0.25 s, load 0.20 on 2 CPUs; governor none; other abtlab processes 0; " \
            "swap used 0 MiB, 0 pages moved in 0.25 s"
    low, high = [4, 4, 5, 5, 4, 5], [2, 3, 2, 3, 3, 2]
    ds = _commits_run(low, high)
    f = lab_notes.commits_check("fewer", ds.assign_attrs(host_quiet=busy), 1.6, 3.3, 256)
    d, lo, hi, _ = difference_ci(low, high)
    assert hi < 0 and f.ok is None and not f.measured and str(f).startswith("[NOT MEASURED HERE]")
    assert f"95% CI [{number(lo)}, {number(hi)}]" in f.message and "measured change" not in f.message
    assert "not graded: the host was busy as the run started (CPUs 98% busy, load 3.73 on 2 CPUs" in f.message
    monkeypatch.setenv("ABTLAB_ANSWER_KEY", "1")
    key = lab_notes.commits_check(None, ds.assign_attrs(host_quiet=busy), 1.6, 3.3, 256)
    assert key.key and not key.measured
    f = lab_notes.commits_check("more", ds.assign_attrs(host_quiet=quiet), 1.6, 3.3, 256)
    assert f.ok is False and "measured change: down" in f.message and "fewer, larger commits" in f.message
    with pytest.raises(ConfigError, match="prediction_commits"):
        lab_notes.commits_check("sideways", ds.assign_attrs(host_quiet=busy), 1.6, 3.3, 256)
    # the unblocked writers, the closing answer and the side-by-side row say the same
    v = np.stack([np.array([200, 205, 198, 202, 201, 199.0]), np.array([230, 236, 229, 233, 231, 235.0])])
    ds = ds.assign(unblocked_threads=(ds.throughput.dims, v[None, :, None, :]))
    f = lab_notes.unblocked_check("fewer", ds.assign_attrs(host_quiet=busy), 1.6, 3.3)
    assert f.ok is None and not f.measured and "not graded: the host was busy" in f.message
    assert "measured change" not in f.message
    note = lab_notes.batching_note(ds.assign_attrs(host_quiet=busy), 1.6, 3.3)
    assert note.startswith("Answer: the change in unblocked threads is not measurable here: the host was busy")
    assert "no direction graded: the host was busy" in note
    f = lab_notes.unblocked_check("fewer", ds.assign_attrs(host_quiet=quiet), 1.6, 3.3)
    assert f.ok is False and "measured change: up" in f.message
    assert lab_notes.batching_note(ds.assign_attrs(host_quiet=quiet), 1.6, 3.3).startswith(
        "Answer: this machine measures something else than the paper")
    with pytest.raises(ConfigError, match="prediction_unblocked"):
        lab_notes.unblocked_check("sideways", ds.assign_attrs(host_quiet=busy), 1.6, 3.3)
