"""What each classroom lab says beside its checks, chosen from what was measured.

Hints come one per measured direction (abtlab.present.classroom.check_change shows the
one for what was measured) and quote the measurement, so a hint never argues against
the numbers next to it. Each lab ends with an "Answer:" note for the student's page (and
`abtlab lab check`'s key): whether the effect the lab teaches is measured here with the
paper's metric, or that this machine measures something else, and why, from the runs'
own records (abtlab.present.paper_terms).
"""
from __future__ import annotations

import math

import numpy as np

from . import paper_terms as pt
from .classroom import WORDS, Feedback, _answer_key, _meaning
from ..data import schema
from ..data.display import number, quantity
from ..stats.intervals import difference_ci
from ..stats.ratios import format_ratio, ratio_ci
from ..stats.values import provenance_label
from ..studies.notebook_studies import delay_table

__all__ = ["ext4_hints", "nojc_hints", "fsync_hints", "faster_cpu_note", "commit_hints", "commits_check",
           "unblocked_hints", "unblocked_check", "unblocked_what", "batching_note", "delay_note", "magnitudes_note",
           "side_by_side_note", "delay_side_by_side_note"]

_P = pt.PAPER_IOZONE


def _mean_ms(ds, var, f, policy="ext4") -> float:
    one = pt.of_policy(ds, policy)
    if var not in one:
        return math.nan
    return float(np.nanmean(one[var].sel(freq_ghz=f).values)) * 1e3


def ext4_hints(ds, f_low, f_high) -> dict:
    """Lab 1, check 1: why ext4's write-op throughput moved as it did, with the unblocked count."""
    u = pt.unblocked(ds, f_low, f_high, "ext4")
    seen = f" ({u.sentence()})" if u else ""
    papers = " This is the paper's effect." if u is not None and u.change() == "down" else ""
    return {"down": "the faster clock shortened every write, yet the run got slower: the writers lost "
                    f"more time stalled by journal commits{seen}.{papers}",
            "up": "the write ops got shorter with the clock, and the commits' stalls did not grow enough "
                  f"to undo it{seen}. The paper measured the opposite on its machine; the last cells say why "
                  "this one differs.",
            "same": f"the shorter writes and the commits' stalls cancel out here{seen}."}


def nojc_hints() -> dict:
    """Lab 1, check 2: without a journal no commit stalls a write."""
    return {"up": "without a journal there is no commit to stall a write: the write op is CPU work and "
                  "gets faster with the clock.",
            "down": "without a journal no commit stalls a write; a slower write op here comes from the rest "
                    "of the machine (memory, page cache, the scheduler), not from batching.",
            "same": "without a journal no commit stalls a write; the write op is bound by something the clock "
                    "does not speed up here (memory, the page cache)."}


def fsync_hints(ds, f_low, f_high) -> dict:
    """Lab 1, check 4: timing the fsync adds each writer's wait for its commit (measured)."""
    lo, hi = _mean_ms(ds, "mean_fsync", f_low), _mean_ms(ds, "mean_fsync", f_high)
    seen = f" (mean fsync per writer {number(lo, 3)} -> {number(hi, 3)} ms)" if math.isfinite(lo + hi) else ""
    return {"down": f"timing the fsync adds each writer's wait for its commit{seen}, and at the faster clock "
                    "that wait grew more than the writes shrank: the slowdown is in the fsync, which the "
                    "paper's throughput does not time.",
            "up": f"timing the fsync adds each writer's wait for its commit{seen}; at the faster clock it did "
                  "not grow enough to undo the shorter writes.",
            "same": f"timing the fsync adds each writer's wait for its commit{seen}; here it cancels the "
                    "shorter writes."}


def _paper_line() -> str:
    return (f"the paper ({pt.PAPER}; 256 threads x 128 KiB in 32 KiB records, Linux 3.4.2): ext4 "
            f"x{_P['ratio']} at {_P['f_high']} GHz over {_P['f_low']} GHz with the write op timed, "
            f"unblocked threads {_P['unblocked_low']} -> {_P['unblocked_high']}")


def faster_cpu_note(ds, f_low, f_high) -> str:
    """Lab 1's closing answer: is the paper's slowdown (write op timed) measured here, and if
    not, what is, and why (the timing terms)."""
    w = pt.ratio(ds, "throughput", f_low, f_high)
    u = pt.unblocked(ds, f_low, f_high)
    here = f"this run ({provenance_label(ds)}): {pt.throughput_sentence(ds, f_low, f_high)}"
    here += f"; {u.sentence()}" if u else ""
    if pt.direction(w) == "down":
        head = "Answer: the paper's effect is measured here: ext4 is slower at the faster clock with the write op timed."
        if u and u.change() not in ("down", "busy"):
            head += f" Not through fewer {u.short}, though, as the paper's account has it."
    elif pt.direction(w) == "unknown":
        n = int(min(np.isfinite(pt.of_policy(ds, "ext4")["throughput"].sel(freq_ghz=f).values).sum()
                    for f in (f_low, f_high)))
        head = (f"Answer: not measured on this data: ext4's ratio with the write op timed has no CI here "
                f"({n} repetitions at a clock, too few or too far apart), so the lab's question is not "
                f"answered on it; its point estimate is x{w[0]:.2f}" + (", not the paper's slowdown." if w[0] >= 1
                                                                     else ", the paper's direction."))
    else:
        head = ("Answer: this machine measures something else than the paper: with the write op timed "
                "(the paper's metric) ext4 is not slower at the faster clock.")
    why = "Why, from the runs' records: " + pt.terms_sentence(ds, f_low, f_high) + "."
    return "\n".join([head, "Here, " + here + ".", "Beside it, " + _paper_line() + ".", why])


def commit_hints(ds, f_low, f_high, threads) -> dict:
    """Lab 2, commits: each commit's share of the writers, measured."""
    one = pt.of_policy(ds, "ext4")
    c = [float(np.nanmean(one["commits"].sel(freq_ghz=f).values)) for f in (f_low, f_high)]
    per = (f" (writers per commit {number(threads / c[0], 3)} -> {number(threads / c[1], 3)})"
           if min(c) > 0 else "")
    return {"up": f"the writers' fsyncs fell into more, smaller commits at the faster clock{per}.",
            "down": f"the writers' fsyncs fell into fewer, larger commits at the faster clock{per}.",
            "same": f"the fsyncs fell into about as many commits at both clocks{per}."}


def commits_check(prediction, ds, f_low, f_high, threads):
    """Lab 2's commits check: "more"/"fewer" only where the 95% Welch CI of the change in mean
    journal commits per run (faster clock minus slower, over the repetitions) excludes 0,
    else "same" (no difference measurable here at N repetitions); no CI, nothing graded."""
    what = "journal commits per run"
    if prediction is None and not _answer_key():
        return Feedback(None, f"write your prediction for {what} in the parameters cell, then re-run")
    one = pt.of_policy(ds, "ext4")["commits"]
    a, b = (one.sel({schema.FREQ: f}).values.ravel() for f in (f_low, f_high))
    d, lo, hi, n = difference_ci(a, b)
    got = "unknown" if not (math.isfinite(lo) and math.isfinite(hi)) else \
        "up" if lo > 0 else "down" if hi < 0 else "same"
    ci = (f"95% CI [{number(lo)}, {number(hi)}], {n} repetitions at each clock" if got != "unknown"
          else f"no CI: fewer than 2 repetitions at a clock ({n})")
    seen = (f"{what}: {number(np.nanmean(a))} -> {number(np.nanmean(b))} (change {number(d)}, {ci}), "
            f"measured change: {got}")
    if got == "unknown":
        return Feedback(None, f"{seen}; no direction is graded without a CI.", key=prediction is None,
                        measured=False)
    busy = pt.busy_host(ds)
    if busy:
        return _busy_feedback(prediction, "prediction_commits", seen.rsplit(", measured change", 1)[0], busy)
    why = commit_hints(ds, f_low, f_high, threads)
    why["same"] = (f"the same count in every repetition at both clocks: {why['same']}" if lo == hi == 0 else
                   f"no difference measurable here at {n} repetitions, the CI includes 0: {why['same']}")
    if prediction is None:
        return Feedback(None, f"{seen}; graded correct: {', '.join(map(repr, WORDS[got]))}.", key=True)
    return Feedback(_meaning(prediction, "prediction_commits") == got,
                    f"you predicted {prediction!r}. {seen}. Why: {why[got]}")


def _busy_feedback(prediction, field, seen, busy) -> Feedback:
    """A count on a busy host: shown with its CI, not graded (a bad word is still refused)."""
    if prediction is not None:
        _meaning(prediction, field)
    return Feedback(None, f"{seen}; not graded: {busy}, so this CI does not carry a direction to the next "
                    "run (run it on a quiet host).", key=prediction is None, measured=False)


def unblocked_what(ds, f_low, f_high) -> str:
    """The name the lab's unblocked check prints: the evidence, or span overlap said plainly."""
    u = pt.unblocked(ds, f_low, f_high)
    return u.label if u else "unblocked threads"


def unblocked_hints(ds, f_low, f_high) -> dict:
    """Lab 2, unblocked threads: the count with its CI, and the timing terms that say why."""
    why = pt.terms_sentence(ds, f_low, f_high)
    u = pt.unblocked(ds, f_low, f_high)
    seen = f" ({u.text()}, {u.ci_text()})" if u else ""
    n = u.n if u else 0
    return {"down": f"at the faster clock the commits caught more writers{seen}, the paper's account: {why}.",
            "up": f"at the faster clock more writers got through without a commit's stall{seen}: {why}. The "
                  "paper measured the opposite on its machine.",
            "same": f"no difference measurable here at {n} repetitions{seen}, the CI includes 0: {why}.",
            "unknown": f"no CI here{seen}, so no direction is graded: {why}."}


def unblocked_check(prediction, ds, f_low, f_high):
    """Lab 2's unblocked-writers check: "more"/"fewer" is measured only where the 95% CI of
    the change in mean unblocked writers (fast clock minus slow, over the repetitions)
    excludes 0, else "same" (no difference measurable); without a CI nothing is graded."""
    u = pt.unblocked(ds, f_low, f_high)
    what = u.label if u else "unblocked threads"
    if prediction is None and not _answer_key():
        return Feedback(None, f"write your prediction for {what} in the parameters cell, then re-run")
    if u is None:
        return Feedback(None, f"{what}: this data counts none, so nothing is graded.", measured=False)
    got, why = u.change(), unblocked_hints(ds, f_low, f_high)
    if got == "busy":
        return _busy_feedback(prediction, "prediction_unblocked", f"{what}: {u.text()} ({u.ci_text()})", u.busy)
    seen = f"{what}: {u.text()} ({u.ci_text()}), measured change: {got}"
    if got == "unknown":
        return Feedback(None, f"{seen}. {why[got]}", key=prediction is None, measured=False)
    if prediction is None:
        return Feedback(None, f"{seen}; graded correct: {', '.join(map(repr, WORDS[got]))}.", key=True)
    return Feedback(_meaning(prediction, "prediction_unblocked") == got,
                    f"you predicted {prediction!r}. {seen}. Why: {why[got]}")


def batching_note(ds, f_low, f_high) -> str:
    """Lab 2's closing answer: do fewer writers get through unblocked at the faster clock (the
    paper's batching effect), on the evidence when the data has it."""
    u = pt.unblocked(ds, f_low, f_high)
    if u is None:
        return "Answer: this data counts no unblocked threads, so the lab's question cannot be answered on it."
    if u.change() == "down" and u.evidence:
        head = "Answer: the paper's batching effect is measured here: fewer writers get through unblocked at the faster clock."
    elif u.change() == "down":
        head = ("Answer: fewer writers stay clear of commits at the faster clock, the paper's direction, but "
                "on span overlap only: this data records no sleeps, so the paper's unblocked count is not measured.")
    elif u.change() == "unknown":
        head = ("Answer: this data has fewer than 2 repetitions at a clock, so the change in unblocked "
                "writers has no CI and the lab's question is not answered on it.")
    elif u.change() == "busy":
        head = (f"Answer: the change in {u.short} is not measurable here: {u.busy}. Run it on a quiet "
                "host to answer the lab's question on this machine.")
    elif u.change() == "same":
        head = (f"Answer: no difference in {u.short} measurable here at {u.n} repetitions (the CI of the "
                "change includes 0), so the paper's batching effect is not measured here.")
    else:
        head = ("Answer: this machine measures something else than the paper: the faster clock leaves "
                "more writers unblocked here.")
    return "\n".join([head, f"Here ({provenance_label(ds)}): {u.sentence()}; "
                      + pt.throughput_sentence(ds, f_low, f_high) + ".",
                      "Beside it, " + _paper_line() + ".",
                      "Why, from the runs' records: " + pt.terms_sentence(ds, f_low, f_high) + "."])


def delay_note(ds, table, best, freq) -> str:
    """Lab 3's closing answer: does a delayJC window pay here within ext4's commit wait (the
    paper: x3.65 ext4), and if not, the bound the paper's account puts on it: a window gains
    at most about N over ext4's unblocked writers (the paper: 256/70 = 3.66)."""
    top = table.loc[table.throughput_mib_s.idxmax()]
    ext4 = table[table.window_ms == 0].iloc[0]
    gain = top.throughput_mib_s / ext4.throughput_mib_s
    lines = [f"Beside it, the paper ({pt.PAPER}): delayJC x{_P['delayjc_gain']} ext4's throughput "
             f"(write op timed) at 3.3 GHz, 256 threads."]
    if best.window_ms > 0:
        head = (f"Answer: the paper's effect is measured here: a {best.window_ms:g} ms window gives "
                f"x{best.gain_over_ext4:.2f} ext4's throughput (write op timed) within ext4's commit wait.")
    elif top.window_ms > 0 and gain > 1.05 and _measured(ds, freq, top, ext4) != "up":
        seen = _measured(ds, freq, top, ext4)
        head = (f"Answer: no window's gain is measurable here ({seen}): the most throughput (write op timed) "
                f"comes with a {top.window_ms:g} ms window, x{gain:.2f} ext4's in the means, and within ext4's "
                "commit wait no window pays.")
    elif top.window_ms > 0 and gain > 1.05:
        head = (f"Answer: a delayJC window raises the throughput here (write op timed), the paper's direction, "
                f"but only by letting the commit wait grow past ext4's: within ext4's commit wait no window pays.")
    else:
        head = ("Answer: this machine measures something else than the paper: no delayJC window raises the "
                "throughput (write op timed) here.")
    if best.window_ms == 0:
        lines.insert(0, f"Here ({provenance_label(ds)}, {freq:g} GHz): the most throughput comes with "
                        + (f"a {top.window_ms:g} ms window, x{gain:.2f} ext4's, at a mean commit wait of "
                           f"{number(top.commit_wait_ms, 3)} ms against ext4's {number(ext4.commit_wait_ms, 3)} ms."
                           if top.window_ms > 0 else "plain ext4."))
    u = pt.unblocked(ds, freq, freq)
    if u and u.low > 0:
        lines.append(f"A window can only give back what ext4's commits take: ext4 leaves {number(u.low)} of "
                     f"{number(u.writers)} {u.short} here, so at most about x{u.writers / u.low:.2f} "
                     f"(the paper: 256 / 70 = 3.66).")
    return "\n".join([head, *lines])


def _measured(ds, freq, top, ext4) -> str:
    """"up" where the CI of top's throughput over ext4's excludes 1 (or ds holds neither row:
    the table's means are all there is), else what the CI says, in words."""
    got = _window_ratio(ds, freq, top, ext4)
    if got is None or pt.direction(got[0]) == "up":
        return "up"
    (r, lo, hi), n = got
    return (f"x{format_ratio(r, lo, hi)} at {n} repetitions" if pt.direction(got[0]) == "unknown"
            else f"x{format_ratio(r, lo, hi)}, no difference measurable here at {n} repetitions")


def _where(rate) -> str:
    """A rate of 1 GiB/s or more is a copy in memory; a 7200 rpm disk moves ~125 MB/s."""
    return "memory speed: the page cache, not the disk" if rate >= 2 ** 30 else "a disk's speed"


def magnitudes_note(ds, freqs, policy="ext4") -> str:
    """Why eq. 3's write op reads in GB/s and the fsync-timed rate in MB/s: the first times
    the copy into the page cache, the second waits for the data to reach the disk."""
    one = pt.of_policy(ds, policy)
    parts = []
    for var, what in (("throughput", "with the write op timed (eq. 3)"),
                      ("throughput_fsync", "with the fsync timed")):
        if var not in one:
            continue
        rates = [float(np.nanmean(one[var].sel(freq_ghz=f).values)) for f in freqs]
        parts.append(f"{policy}'s throughput {what}: " + ", ".join(
            f"{quantity(r, 'bytes/s')} at {f:g} GHz" for r, f in zip(rates, freqs)) + f" ({_where(max(rates))})")
    return ("Magnitudes: " + "; ".join(parts) + ". A write returns once its data is copied into the "
            "page cache, so the write op's rate is a memory rate; an fsync returns once the data is on "
            "the disk, so the fsync-timed rate is the disk's.")


def _side_sentence(ds, f_low, f_high) -> str:
    r = pt.ratio(ds, "throughput", f_low, f_high, "ext4")
    words = {"down": "slower at the faster clock: the paper's effect", "up": "faster at the faster clock",
             "same": "no change measurable", "unknown": "no CI"}[pt.direction(r)]
    u = pt.unblocked(ds, f_low, f_high, "ext4")
    return f"x{format_ratio(*r)} ({words})" + (f", {u.sentence()}" if u else "")


def _at_clock(ds, var, policy, freq):
    """var's repetitions at one policy and clock (every other dim of one level)."""
    one = pt.of_policy(ds, policy)[var]
    if schema.FREQ in one.dims:
        one = one.sel({schema.FREQ: freq}, method="nearest")
    return np.asarray(one.values, float).ravel()


def _window_ratio(ds, freq, top, ext4):
    """(ratio, lo, hi), n: the throughput (write op timed) of the table row `top` over ext4's
    row at freq, a ratio of means with its 95% CI over the repetitions; None where ds does
    not hold the rows' policies."""
    names = [r.get(schema.POLICY, None) for r in (top, ext4)]
    if schema.POLICY in ds.dims and not all(str(p) in map(str, ds[schema.POLICY].values) for p in names):
        return None
    a, b = (_at_clock(ds, "throughput", p, freq) for p in names)
    return ratio_ci(a, b), int(min(np.isfinite(a).sum(), np.isfinite(b).sum()))


def _best_window(ds, freq) -> str:
    """The window of most mean throughput (write op timed) at freq against plain ext4: the
    ratio of means with its 95% CI, and the change in mean commit wait with its Welch CI;
    "no difference measurable here at N repetitions" where the ratio's CI includes 1."""
    table = delay_table(ds)
    if schema.FREQ in table:
        table = table[np.isclose(table[schema.FREQ].astype(float), freq)]
    table = table[np.isfinite(table.window_ms.astype(float))]      # ext4 and its windows, not NOJC
    top = table.loc[table.throughput_mib_s.idxmax()]
    if top.window_ms == 0:
        return "plain ext4 (no window raises the throughput)"
    ext4 = table[table.window_ms == 0].iloc[0]
    r, n = _window_ratio(ds, freq, top, ext4)
    wait = difference_ci(*(_at_clock(ds, "mean_commit_wait", row.get(schema.POLICY, None), freq) / 1e-3
                           for row in (ext4, top)))
    waits = (f"a mean commit wait {'+' if wait[0] >= 0 else ''}{number(wait[0], 3)} ms "
             + (f"[{number(wait[1], 3)}, {number(wait[2], 3)}]" if math.isfinite(wait[1]) else "(no CI)")
             + " over ext4's")
    gain = f"x{format_ratio(*r)} ext4's throughput, {waits}"
    if pt.direction(r) == "same":
        return f"no difference measurable here at {n} repetitions (the most, a {top.window_ms:g} ms window: {gain})"
    return f"a {top.window_ms:g} ms window, {gain}" + (f" ({n} repetitions)" if pt.direction(r) == "unknown" else "")


def _clocks(ds, f_low, f_high) -> tuple[float, float]:
    """The lab's clocks where a side has them, else the side's own lowest and highest."""
    have = [float(f) for f in np.atleast_1d(ds[schema.FREQ].values)] if schema.FREQ in ds.coords else []
    if not have or (np.isclose(have, f_low).any() and np.isclose(have, f_high).any()):
        return f_low, f_high
    return min(have), max(have)


def _row(side) -> str:
    return ("- this run, " if side.this_run else "- ") + side.label


def side_by_side_note(ds, sides, f_low, f_high) -> str:
    """Labs 1 and 2: ext4's throughput with the write op timed (faster clock over slower, CI)
    and its unblocked writers in this run beside each side (abtlab.labs.journal.sides: the
    SIMULATED paper machine, the guest's stored paper machine in VIRTUAL TIME, the real
    kernel), the paper's last, ending with the question of why they differ."""
    lines = ["Side by side, ext4's throughput with the write op timed (the paper's), the faster clock "
             "over the slower, and its unblocked writers:"]
    if not any(s.this_run for s in sides):
        lines.append(f"- this run ({provenance_label(ds)}), at {f_high:g} over {f_low:g} GHz: "
                     f"{_side_sentence(ds, f_low, f_high)}")
    for s in sides:
        lo, hi = _clocks(s.ds, f_low, f_high)
        lines.append(f"{_row(s)}, at {hi:g} over {lo:g} GHz: {_side_sentence(s.ds, lo, hi)}")
    lines.append(f"- {_paper_line()}.")
    return "\n".join(lines + ["Why do they differ?"])


def _has_windows(ds) -> bool:
    return schema.POLICY in ds.dims and any(str(p).split(":")[0] in ("delayjc", "kdelayjc")
                                            for p in ds[schema.POLICY].values)


def _bound(ds, freq) -> str:
    f = _clocks(ds, freq, freq)[1]
    u = pt.unblocked(ds, f, f)
    if u is None or not u.low > 0:
        return "no delayJC windows in it, and no unblocked writers counted"
    return (f"no delayJC windows in it; ext4 leaves {number(u.low)} of {number(u.writers)} {u.short} at "
            f"{f:g} GHz, so a window could give back at most about x{u.writers / u.low:.2f}")


def delay_side_by_side_note(ds, sides, freq) -> str:
    """Lab 3: the window of most throughput (write op timed) in this run `ds` beside each
    side's (abtlab.labs.journal.sides), each over ext4's with its CI and the change in
    commit wait with its CI; a side without windows (a stored result of ext4 alone) gives the
    most a window could give back there, writers over ext4's unblocked ones. Ends with the
    question of why they differ."""
    lines = [f"Side by side at {freq:g} GHz, the most throughput with the write op timed (95% CIs):"]
    if not any(s.this_run for s in sides):
        lines.append(f"- this run: {_best_window(ds, freq)}")
    for s in sides:
        f = _clocks(s.ds, freq, freq)[1]
        shown = _best_window(ds if s.this_run else s.ds, f) if _has_windows(s.ds) else _bound(s.ds, freq)
        lines.append(f"{_row(s)}: {shown}")
    lines.append(f"- the paper ({pt.PAPER}): delayJC x{_P['delayjc_gain']} ext4's throughput (write op timed) at "
                 f"{_P['f_high']} GHz, 256 threads.")
    return "\n".join(lines + ["Why do they differ?"])
