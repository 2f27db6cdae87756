"""The journal labs' sides (abtlab.labs.journal): the SIMULATED paper machine run at the lab's
point, the guest's paper machine and the host read from their stored results (never run), each
labelled with what it is; a lab's `data` may name a stored result; a wrong prediction on the
stored guest gets a hint that agrees with the number beside it."""
import pytest

from abtlab.errors import ConfigError
from abtlab.labs import journal
from abtlab.present import classroom, lab_notes, paper_terms
from abtlab.results import registry
from abtlab.data.store import load
from abtlab.stats.ratios import format_ratio


def _stored_ratio(name, policy="ext4"):
    ds = load(registry.get(name).path(registry.root()))
    return paper_terms.ratio(ds, "throughput", 1.6, 3.3, policy)


@pytest.fixture(scope="module")
def sim_sides():
    ds = journal.lab_data("sim", 64, "128k", "32k", policy="ext4", freqs=(1.6, 3.3), reps=2, quiet=True)
    return ds, journal.sides(ds, "sim", None, threads=64, reps=2, real_kernel="stored")


def test_the_sides_are_the_simulated_paper_machine_the_stored_guest_and_the_stored_host(sim_sides):
    ds, sides = sim_sides
    sim, guest, host = sides
    assert not any(s.this_run for s in sides)
    assert sim.label.startswith("the SIMULATED paper machine (sim_paper_machine.toml")
    assert f"a journal CPU of {sim.ds.attrs['sim_commit_cpu_us']:g} us" in sim.label and "chosen" in sim.label
    assert int(sim.ds.threads.max()) == 64                           # run at the lab's point
    assert f"stored result {journal.GUEST_RESULT}" in guest.label and "VIRTUAL TIME" in guest.label
    assert journal.GUEST_RESULT == "paper_fig7a_342_grid" and "IOzone's polling start" in guest.label
    assert sorted(map(float, guest.ds.freq_ghz.values)) == [1.6, 3.3]    # its points at the lab's clocks
    assert "Linux 3.4.2" in guest.label and "4 vCPUs" in guest.label and "lock-step" in guest.label
    assert guest.ds.attrs["clock"] == "lockstep"
    assert "stored result host_iozone_32t" in host.label and "32 writers x 64 KiB" in host.label
    note = lab_notes.side_by_side_note(ds, sides, 1.6, 3.3)
    for name in (journal.GUEST_RESULT, journal.HOST_RESULT):        # the numbers from the stored data
        assert f"x{format_ratio(*_stored_ratio(name))}" in note
    assert note.endswith("Why do they differ?")


def test_a_lab_reads_a_stored_result_by_name_and_it_is_the_guest_side():
    ds = journal.lab_data(journal.GUEST_RESULT, policy="ext4,nojc")
    assert ds.attrs["clock"] == "lockstep" and sorted(map(str, ds.policy.values)) == ["ext4", "nojc"]
    assert sorted(map(float, ds.freq_ghz.values)) == [1.6, 3.3]          # the lab's clocks of the stored sweep
    assert sorted(map(float, journal.lab_data(journal.GUEST_RESULT, policy="ext4", freqs=(1.6, 2.4, 3.3))
                      .freq_ghz.values)) == [1.6, 2.4, 3.3]
    sides = journal.sides(ds, journal.GUEST_RESULT, None, real_kernel=None)
    assert [s.this_run for s in sides] == [False, True]       # no real kernel asked for
    assert "this run, the guest's paper machine" in lab_notes.side_by_side_note(ds, sides, 1.6, 3.3)


def test_a_wrong_prediction_on_the_stored_guest_gets_a_hint_agreeing_with_its_ratio():
    """Lab 1's first check as the notebook makes it, on the guest's paper machine: whichever
    way its CI points, "the other way" is graded NOT QUITE and the hint is the measured one;
    a ratio without a CI (too few or too far apart repetitions) grades nothing and says so,
    as does the lab's closing line. Nothing here assumes the stored result's repetitions."""
    from abtlab import stats
    ds = journal.lab_data(journal.GUEST_RESULT, policy="ext4,nojc")
    sd = stats.slowdown(ds, ref=1.6).sel(freq_ghz=3.3).squeeze(drop=True)
    mean = ds.throughput.mean("rep").squeeze(drop=True)
    ci = (float(sd.ci_low.sel(policy="ext4")), float(sd.ci_high.sel(policy="ext4")))
    got = classroom.measured_change(1, 1, ci)
    wrong = "slower" if got != "down" else "faster"
    hints = lab_notes.ext4_hints(ds, 1.6, 3.3)
    f = classroom.check_change(wrong, float(mean.sel(policy="ext4", freq_ghz=1.6)),
                               float(mean.sel(policy="ext4", freq_ghz=3.3)), "ext4 throughput (write op timed)",
                               units="bytes/s", ci=ci, why=hints)
    note = lab_notes.faster_cpu_note(ds, 1.6, 3.3)
    if got == "unknown":
        assert str(f).startswith("[NOT MEASURED HERE]") and "no CI: too few or too noisy repetitions" in f.message
        assert note.startswith("Answer: not measured on this data") and f"x{float(sd.ratio.sel(policy='ext4')):.2f}" in note
        return
    assert str(f).startswith("[NOT QUITE]")
    assert f"x{float(sd.ratio.sel(policy='ext4')):.2f}, 95% CI [{ci[0]:.2f}, {ci[1]:.2f}]" in f.message
    assert f"measured change: {got}" in f.message and f.message.endswith(hints[got])
    u = paper_terms.unblocked(ds, 1.6, 3.3)
    assert u.sentence() in f.message                       # the hint quotes the unblocked count beside it


def test_sides_refuse_an_unknown_real_kernel_before_running():
    with pytest.raises(ConfigError, match="real_kernel"):
        journal.sides(None, "sim", None, real_kernel="yes")


def test_lab2_wrong_prediction_on_the_stored_guest_gets_the_hint_for_its_unblocked_count():
    """The stored guest's unblocked change is graded on the Welch CI of the difference over
    its repetitions, and a wrong prediction's hint quotes the counts and that CI."""
    ds = journal.lab_data(journal.GUEST_RESULT, policy="ext4")
    u = paper_terms.unblocked(ds, 1.6, 3.3)
    counted = paper_terms.unblocked_var(ds)
    per = {f: ds[counted].sel(policy="ext4", freq_ghz=f).values.ravel() for f in (1.6, 3.3)}
    from abtlab.stats.intervals import difference_ci
    assert u.ci == pytest.approx(difference_ci(per[1.6], per[3.3])[1:3])
    assert u.n == min(int((per[f] == per[f]).sum()) for f in per)     # the stored repetitions, whatever they are
    got = u.change()
    wrong = "fewer" if got != "down" else "more"
    f = lab_notes.unblocked_check(wrong, ds, 1.6, 3.3)
    hints = lab_notes.unblocked_hints(ds, 1.6, 3.3)
    assert str(f).startswith("[NOT QUITE]") and f"measured change: {got}" in f.message
    assert f.message.endswith(hints[got]) and paper_terms.terms_sentence(ds, 1.6, 3.3) in f.message
    assert u.text() in hints[got] and u.ci_text() in hints[got]   # the counts and CI the hint sits beside


def test_lab4_runs_its_entries_per_thread(monkeypatch):
    """Lab 4's default entries (not Petersen's 100) reach the lock grid; the notebook's
    parameters cell says the same number."""
    from abtlab.studies import lab_studies, syscalls
    seen = {}
    monkeypatch.setattr(syscalls, "lock_grid", lambda **kw: seen.update(kw) or "grid")
    assert lab_studies.lock_lab("auto")[0] == "grid" and seen["entries"] == lab_studies.LAB_ENTRIES
    lab_studies.lock_lab("auto", entries=100)
    assert seen["entries"] == 100
    names, _ = classroom._parameters(classroom.NOTEBOOK_DIR / "lab_4_spinlock.ipynb")
    assert names["entries"] == lab_studies.LAB_ENTRIES != 100


def test_the_host_run_takes_adaptive_repetitions_and_the_others_the_labs(monkeypatch):
    """On this host's real kernel lab 2's run gets a Reps rule on its commits (at least
    HOST_REPS' min, or the lab's reps where more); on the simulator, stored data, or a host
    that cannot run it, the lab's own count; the study accepts the rule."""
    from abtlab.studies import notebook_studies
    from abtlab.sweep.reps import Reps
    monkeypatch.setattr(notebook_studies, "real_available", lambda backend="iozone": True)
    r = journal.host_reps("auto", 3)
    assert isinstance(r, Reps) and (r.min, r.max, r.metric, r.on) == (
        journal.HOST_REPS["min"], journal.HOST_REPS["max"], "commits", "slowdown")
    assert journal.host_reps("auto", 30).min == 30 == journal.host_reps("auto", 30).max
    assert journal.host_reps("sim", 3) == 3 and journal.host_reps(journal.GUEST_RESULT, 3) == 3
    monkeypatch.setattr(notebook_studies, "real_available", lambda backend="iozone": False)
    assert journal.host_reps("auto", 3) == 3
    with pytest.raises(ConfigError, match="reps"):
        notebook_studies.study_data("sim", reps=0)
    small = notebook_studies.lab_data("sim", threads=4, policy="ext4", quiet=True,
                                      reps=Reps(min=2, max=3, target=0.5, metric="commits", on="slowdown"))
    assert small.sizes["rep"] in (2, 3)
