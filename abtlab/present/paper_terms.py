"""A run read in the paper's terms (Chang, Li, Grove and Cameron, MASCOTS 2014), for the
labs, notebook 08 and the demo: the throughput ratio with each writer's write op timed
(eq. 3, IOzone's default report) and with its fsync timed too (IOzone -e), the unblocked
writers at each clock, and the timing terms that say why (abtlab.model.terms).

Unblocked writers are the trace evidence (`unblocked_threads`: the write op never slept
on the journal, abtlab.model.waits) where the run recorded why writes slept; elsewhere the
only count is span overlap (`threads_clear_of_commits`), and every sentence says that it is not
the paper's count. Every sentence is computed from the data it is given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data.display import number
from ..data import schema
from ..data.published import paper_iozone
from ..stats.intervals import difference_ci
from ..stats.iozone_view import ratios_between
from ..stats.ratios import format_ratio
from ..model import terms
from ..system import quietness
from .kernel_history_tables import answer_table

__all__ = ["PAPER", "PAPER_IOZONE", "Counts", "of_policy", "unblocked", "unblocked_var", "ratio", "direction",
           "terms_sentence", "throughput_sentence"]

PAPER = "Chang, Li, Grove and Cameron, MASCOTS 2014"
# what the paper states for IOzone, 256 threads x 128 KiB in 32 KiB records (Figs. 1, 2, 7a),
# read from the reference file (data/reference/abt_published.csv)
PAPER_IOZONE = paper_iozone()
EVIDENCE = "unblocked_threads"
OVERLAP = "threads_clear_of_commits"


def of_policy(ds, policy):
    """ds at one policy (ds itself when it has no policy dimension)."""
    if schema.POLICY in ds.dims:
        return ds.sel({schema.POLICY: policy})
    return ds


def _at(da, f) -> float:
    return float(np.nanmean(da.sel({schema.FREQ: f}).values))


def _per_rep(da, f) -> np.ndarray:
    """One value per repetition at clock f (the mean over any other dims of the point)."""
    one = da.sel({schema.FREQ: f})
    rest = [d for d in one.dims if d != schema.REP]
    return np.asarray(one.mean(rest).values if rest else one.values, dtype=float).ravel()


@dataclass(frozen=True)
class Counts:
    """Mean writers per run counted unblocked at the two clocks, and by what; ci is the
    95% Welch t-interval of high - low over the repetitions (n: the fewer at a clock),
    None where a clock has fewer than 2 repetitions (then no direction is graded)."""
    low: float
    high: float
    writers: float
    evidence: bool          # True: the trace evidence; False: span overlap only
    ci: tuple[float, float] | None = None
    n: int = 0
    busy: str = ""          # a host run that started on a busy host: why no direction is graded

    @property
    def label(self) -> str:
        if self.evidence:
            return "unblocked threads (trace evidence: write op never slept on the journal)"
        return ("threads whose write op shares no time with a commit (span overlap: this data "
                "records no sleeps, so this is not the paper's unblocked count)")

    @property
    def short(self) -> str:
        return "unblocked threads" if self.evidence else "threads clear of commits (span overlap)"

    def change(self) -> str:
        """"up" or "down" where the CI of high - low excludes 0, "same" where it includes
        it (no difference measurable), "unknown" without a CI, "busy" on a busy host (busy_host)."""
        if self.ci is None or not all(math.isfinite(x) for x in self.ci):
            return "unknown"
        if self.busy:
            return "busy"
        lo, hi = self.ci
        return "up" if lo > 0 else "down" if hi < 0 else "same"

    def ci_text(self) -> str:
        """'change -51.3, 95% CI [-80.1, -22.5], 3 repetitions at each clock', or why none."""
        d = self.high - self.low
        if self.change() == "unknown":
            return (f"change {number(d)}, no CI: fewer than 2 repetitions at a clock ({self.n}), "
                    "so no direction is graded")
        return (f"change {number(d)}, 95% CI [{number(self.ci[0])}, {number(self.ci[1])}], "
                f"{self.n} repetitions at each clock")

    def text(self) -> str:
        return f"{number(self.low)} -> {number(self.high)} of {number(self.writers)}"

    def sentence(self) -> str:
        how = {"up": "more at the faster clock", "down": "fewer at the faster clock",
               "same": f"no difference measurable here at {self.n} repetitions",
               "unknown": "no direction graded",
               "busy": f"no direction graded: {self.busy}"}[self.change()]
        return f"{self.label}: {self.text()} ({self.ci_text()}), {how}"


def unblocked_var(ds) -> str:
    """The variable that counts unblocked writers in ds: the evidence where it has it."""
    if EVIDENCE in ds and np.isfinite(ds[EVIDENCE].values).any():
        return EVIDENCE
    return OVERLAP


def unblocked(ds, f_low, f_high, policy="ext4") -> Counts | None:
    """Unblocked writers of `policy` at the two clocks: the evidence when the data has it,
    else span overlap; None when it has neither."""
    one = of_policy(ds, policy)
    for var, evidence in ((EVIDENCE, True), (OVERLAP, False)):
        if var in one and np.isfinite(one[var].values).any():
            writers = float(np.asarray(one[schema.THREADS].values).max()) if schema.THREADS in one.coords \
                else math.nan
            d, lo, hi, n = difference_ci(_per_rep(one[var], f_low), _per_rep(one[var], f_high))
            ci = (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None
            m = one[var].mean(schema.REP)
            return Counts(_at(m, f_low), _at(m, f_high), writers, evidence, ci, n, busy_host(ds))
    return None


def busy_host(ds) -> str:
    """Why a host run's counts of commits and unblocked writers carry no direction: the host
    was busy as the run started (abtlab.system.quietness.busy_reason), else "". These counts
    are how the writers and the journal thread interleave, which other work on the CPUs
    changes: on this 2-core host lab 2's commits per run went 4.8 -> 3.2 and 3.9 -> 2.7 (10
    repetitions, load 3.7), 5.0 -> 5.7 (40, load 3 rising to 14), and its unblocked writers'
    change had a CI of [0.2, 58.5] in one sitting, [-45.0, 10.3] in the next (20 repetitions,
    load 9 and 13)."""
    return quietness.busy_reason(ds.attrs)


def ratio(ds, var, f_low, f_high, policy="ext4", level=0.95):
    """(ratio, ci_low, ci_high) of var at f_high over f_low; NaNs when var has no data."""
    one = of_policy(ds, policy)
    if var not in one or not np.isfinite(one[var].values).any():
        return (math.nan,) * 3
    return tuple(float(x[0]) for x in ratios_between(one, var, f_low, f_high, level)[1:])


def direction(r) -> str:
    """"down", "up" or "same" from (ratio, lo, hi): the CI decides; "unknown" without one."""
    _, lo, hi = r
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "unknown"
    return "down" if hi < 1 else "up" if lo > 1 else "same"


def throughput_sentence(ds, f_low, f_high, policy="ext4") -> str:
    """'ext4 x2.26 [2.16, 2.37] at 3.3 GHz over 1.6 GHz with the write op timed (faster),
    x0.87 [...] with the fsync timed (IOzone -e)'."""
    words = {"down": "slower", "up": "faster", "same": "no clear change", "unknown": "no CI"}
    w, f = (ratio(ds, v, f_low, f_high, policy) for v in ("throughput", "throughput_fsync"))
    text = (f"{policy} throughput at {f_high:g} GHz over {f_low:g} GHz: x{format_ratio(*w)} with the "
            f"write op timed, the paper's ({words[direction(w)]})")
    if math.isfinite(f[0]):
        text += f"; x{format_ratio(*f)} with the fsync timed too, IOzone -e ({words[direction(f)]})"
    return text


def _terms(ds, policy):
    one = ds.sel({schema.POLICY: [policy]}) if schema.POLICY in ds.dims else ds
    t = terms.terms_table(one)
    return t.groupby(schema.FREQ).mean(numeric_only=True)


def terms_sentence(ds, f_low, f_high, policy="ext4") -> str:
    """Why the faster clock did or did not put more writers inside the first commit,
    from the timing terms of the runs' records (abtlab.model.terms): the paper's account
    needs the lead writer's delay to the first commit to shrink more than the others' lag."""
    if "op_run" not in ds:
        return "this data keeps no records, so the timing terms cannot be read"
    t = _terms(ds, policy)
    if f_low not in t.index or f_high not in t.index:
        return "no runs at both clocks with records"
    lo, hi, clock = t.loc[f_low], t.loc[f_high], f_high / f_low
    if not (math.isfinite(lo.lead_to_commit) and math.isfinite(hi.lead_to_commit)):
        return "no journal commit started after the first write at both clocks"
    a = lo.lead_to_commit / hi.lead_to_commit
    text = (f"the lead writer's delay to the first commit went {number(lo.lead_to_commit * 1e3, 3)} -> "
            f"{number(hi.lead_to_commit * 1e3, 3)} ms (x{a:.2f} shorter; the clock is x{clock:.2f} faster)")
    before = (f"; writers done before the first commit: {number(lo.writers_before_first_commit)} -> "
              f"{number(hi.writers_before_first_commit)}")
    if max(lo.writer_lag, hi.writer_lag) < 1e-3 * max(lo.lead_to_commit, 1e-9):
        return (text + ", and every writer starts with the lead (lag 0): "
                + ("the commit starts after a time the clock does not shorten while the writes "
                   "shrink, the opposite of the paper's condition" if a < 0.8 * clock else
                   "the commit's start shrinks with the clock as the writes do") + before
                + _cpu_split(lo, hi))
    b = lo.writer_lag / hi.writer_lag if hi.writer_lag > 0 else math.inf
    text += (f", the other writers' median lag {number(lo.writer_lag * 1e3, 3)} -> {number(hi.writer_lag * 1e3, 3)} "
             f"ms (x{b:.2f} shorter): ")
    if a > 1.1 * b:
        why = ("the delay shrank more than the lag, the paper's condition for the commit to start "
               "while more writers are still writing")
    elif b > 1.1 * a:
        why = ("the lag shrank more than the delay (a part of it the clock does not speed up, such "
               "as the disk's), the opposite of the paper's condition")
    else:
        why = ("both shrank about alike (within 10%), so the faster clock does not move the "
               "commit's start earlier in the stream of writers, as the paper's account needs")
    return text + why + before + _cpu_split(lo, hi)


def _cpu_split(lo, hi) -> str:
    """'; of the delay, the workload's own CPU ... ms, other tasks and idle ...' where the
    runs recorded the workload's CPU time (runs with its sched_switch trace)."""
    parts = []
    for term, name in (("lead_to_commit", "the delay"), ("writer_lag", "the lag")):
        cpu = f"{term}_cpu"
        if cpu not in lo or not all(math.isfinite(x[cpu]) and math.isfinite(x[term]) for x in (lo, hi)):
            continue
        text = f"of {name}, the workload's own CPU time {number(lo[cpu] * 1e3, 3)} -> {number(hi[cpu] * 1e3, 3)} ms"
        rest = [x[term] - x[cpu] for x in (lo, hi)]
        if min(rest) >= 0:      # on several CPUs the workload's CPU time can exceed the span
            text += f" and the rest (other tasks' CPU, idle) {number(rest[0] * 1e3, 3)} -> {number(rest[1] * 1e3, 3)} ms"
        else:
            text += " (summed over CPUs)"
        parts.append(text)
    return "; " + "; ".join(parts) if parts else ""


def history_table(hist, policy="ext4", level=0.95):
    """Notebook 08's and the demo's opening table in the paper's terms: per study row
    (abtlab.present.kernel_history_tables.answer_table) the paper's throughput ratio, the
    fsync-timed one beside it, and the unblocked threads at each clock with what counted
    them; the paper's own row last."""
    table = answer_table(hist, policy, level=level)
    lo, hi = table.attrs["f_low"], table.attrs["f_high"]
    col = f"unblocked {lo:g} -> {hi:g} GHz"
    counts = []
    for row in table.index:
        ds = hist.runs.get(row)
        u = unblocked(ds, lo, hi, policy) if ds is not None else None
        counts.append("-" if u is None else
                      f"{u.text()} ({'trace evidence' if u.evidence else 'span overlap, not the paper count'})")
    table.insert(table.columns.get_loc("n"), col, counts)
    p = PAPER_IOZONE
    paper = {c: "" for c in table.columns}
    paper.update({"machine": "Linux 3.4.2, 256 x 128 KiB in 32 KiB records", "data": f"the paper ({PAPER})",
                  table.columns[2]: f"{p['ratio']}", col: f"{p['unblocked_low']} -> {p['unblocked_high']} of {p['threads']}",
                  "note": "SLOWER at the higher frequency"})
    out = table.copy()
    out.loc["the paper"] = paper
    out.attrs = dict(table.attrs, unblocked_column=col)
    return out
