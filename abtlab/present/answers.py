"""Each study notebook's answer in a sentence, computed from the data it ran on, printed
at the top of the notebook (and collected by `abtlab report` on its index page).

Every function prints one line starting "Answer:" and returns it; the kind of data
(measured, emulated, SIMULATED) is always in the sentence.
"""
from __future__ import annotations

import math

import numpy as np

from ..data.display import number
from ..data import schema
from ..stats.iozone_view import ratios_between
from ..stats.ratios import format_ratio
from ..stats.values import provenance_label
from ..backends.dio import WORKLOADS
from ..bps import ranking
from ..studies.syscalls import compare as compare_grids, hardware_threads
from ..studies.notebook_studies import optimal_delay, sim_ranking
from ..system import quietness
from .kernel_history_tables import ratio_table
from . import paper_machine as _paper_machine
from .paper_terms import PAPER_IOZONE, unblocked, unblocked_var

__all__ = ["slowdown", "abt_model", "delay", "bps", "frequency", "syscalls", "direct_io",
           "kernel_history", "paper_machine"]


def _say(text: str) -> None:
    line = "Answer: " + text
    print(line)
    return None


def _verdict(r, lo, hi) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no verdict (CI unbounded: too few or too noisy repetitions)"
    return "slower at the faster clock" if hi < 1 else "faster" if lo > 1 else "no clear change"


def _ratios(ds, var="throughput"):
    """(lo, hi, rows): per configuration a label and (ratio, ci_low, ci_high) of var."""
    freqs = [float(f) for f in ds[schema.FREQ].values]
    lo, hi = min(freqs), max(freqs)
    sd, r, a, b = ratios_between(ds, var, lo, hi)
    cfg = [d for d in sd["ratio"].dims]
    keys = sd["ratio"].to_dataframe().reset_index()
    labels = [", ".join(f"{keys.iloc[i][d]}" if d == schema.POLICY else f"{d}={keys.iloc[i][d]}"
                        for d in cfg if ds.sizes[d] > 1) or str(ds.attrs.get("backend", ""))
              for i in range(len(r))]
    return lo, hi, list(zip(labels, r, a, b))


def slowdown(ds, var="throughput") -> None:
    """Throughput (eq. 3, write op timed) at the fastest clock over the slowest, per
    configuration, with its CI and verdict (studies 01, 04)."""
    lo, hi, rows = _ratios(ds, var)
    parts = [f"{label}: x{format_ratio(r, a, b)} ({_verdict(r, a, b)})" for label, r, a, b in rows]
    slower = sum(1 for _, r, a, b in rows if math.isfinite(b) and b < 1)
    return _say(f"{var} at {hi:g} GHz over {lo:g} GHz ({provenance_label(ds)}): " + "; ".join(parts)
                + f". {slower} of {len(rows)} configurations are slower at the faster clock.")


def abt_model(ds) -> None:
    """Study 02: unblocked threads (eq. 4; the trace evidence where the runs recorded it,
    else span overlap, said so) and commits at each clock, and the throughput ratio."""
    lo, hi, rows = _ratios(ds)
    var = unblocked_var(ds)
    m = ds[[var, "commits"]].mean(schema.REP)
    nb = [float(m[var].sel({schema.FREQ: f}).mean()) for f in (lo, hi)]
    cm = [float(m.commits.sel({schema.FREQ: f}).mean()) for f in (lo, hi)]
    what = ("the unblocked threads (class X, eq. 4: write op never slept on the journal, from the trace)"
            if var == "unblocked_threads" else
            "the threads whose write op shares no time with a commit (span overlap, not the paper's "
            "unblocked count: these runs record no sleeps)")
    _, r, a, b = rows[0]
    return _say(f"from {lo:g} to {hi:g} GHz ({provenance_label(ds)}) {what} go {number(nb[0], 3)} -> {number(nb[1], 3)} "
                f"and commits per run {number(cm[0], 3)} -> {number(cm[1], 3)}; throughput (write op timed) "
                f"x{format_ratio(r, a, b)}.")


def delay(ds, max_commit_wait_ms=None) -> None:
    """Study 03: the best delayJC window per clock and its gain over ext4."""
    best = optimal_delay(ds, max_commit_wait_ms=max_commit_wait_ms)
    parts = [f"{r.freq_ghz:g} GHz, {r.threads} threads: {r.window_ms:g} ms (x{r.gain_over_ext4:.2f} "
             f"ext4's throughput, commit wait {number(r.commit_wait_ms, 3)} ms)" for r in best.itertuples()]
    return _say(f"the best delayJC window ({provenance_label(ds)}; 0 ms = ext4 itself): "
                + "; ".join(parts) + ".")


def bps(corr=None, per_run=None) -> None:
    """Study 05: which metric tracks run time best: He et al.'s sets (corr, measured with
    fio) when they ran, else the simulated runs (per_run, against elapsed time). A set
    names a winner only where the bootstrap CI of its lead over every other metric's
    normalised CC excludes 0 (abtlab.bps.ranking)."""
    if corr is not None and len(corr.dropna(subset=["normalized"])):
        sets = [s for s in corr.set.unique() if s != "mean"]
        parts = [_rank_sentence(f"set {s}", corr[corr.set == s], corr.attrs.get("busy", "")) for s in sets]
        return _say("which metric tracks run time, measured with fio (normalised CC, 95% bootstrap CI "
                    "over the set's workloads): " + "; ".join(parts) + ".")
    table = sim_ranking(per_run)
    why = "the fio study's sets are too small for a correlation; " if corr is not None else ""
    return _say(f"{why}which metric tracks elapsed time on SIMULATED IOzone runs (normalised CC, 95% "
                f"bootstrap CI over the runs): " + _rank_sentence("simulated", table) + ".")


def _rank_sentence(name, rows, busy="") -> str:
    """One set's verdict from its rank rows (abtlab.bps.ranking.rank); none named where the
    run started on a busy host (busy: why)."""
    rows = rows.dropna(subset=["normalized"])
    n = int(rows.n.max()) if len(rows) else 0
    if not len(rows):
        return f"{name}: no correlation ({n} workloads)"
    cis = ", ".join(f"{r.metric} {_cc(r)}" for r in rows.sort_values("normalized", ascending=False)
                    .itertuples())
    won = str(rows.winner.iloc[0]) if "winner" in rows else ""
    if busy:
        return f"{name}: no metric named at {n} workloads, {busy} ({cis})"
    if won:
        return f"{name} ({n} workloads): {won} tracks run time best ({ranking.reason(rows)}; {cis})"
    return f"{name}: no difference measurable here at {n} workloads ({ranking.reason(rows)}; {cis})"


def _cc(r) -> str:
    if math.isfinite(r.ci_low):
        return f"{r.normalized:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}]"
    return f"{r.normalized:+.2f} [no CI]"


def frequency(df) -> None:
    """Study 06: the policy of least energy-delay product per workload."""
    best = df.loc[df.groupby("workload")["edp"].idxmin()]
    mode = f"time {df.time_mode.iloc[0]}, energy {df.energy_mode.iloc[0]}"
    parts = [f"{r.workload}: {r.policy} (EDP x{r.edp / _fixed_high(df, r.workload):.2f} of fixed-high)"
             for r in best.itertuples()]
    return _say(f"least energy-delay product ({mode}): " + "; ".join(parts) + ".")


def _fixed_high(df, workload) -> float:
    row = df[(df.workload == workload) & (df.policy == "fixed-high")]
    return float(row.edp.iloc[0]) if len(row) else math.nan


def syscalls(here, ref) -> None:
    """Study 07: where a spinlock beats a mutex, measured here (a side only where the CI of
    t_mutex / t_spin excludes 1: the `winner_here` column of abtlab.studies.syscalls.compare),
    else the paper's grid."""
    if here is None:
        sp = ref["spin_speedup"]
        hw = int(ref.attrs.get("hardware_threads", 8))
        parts = []
        for label, cells in (("up to", sp.sel(threads=sp.threads <= hw)), ("above", sp.sel(threads=sp.threads > hw))):
            n = int(cells.notnull().sum())
            parts.append(f"with threads {label} its {hw} hardware threads, spinlock faster in "
                         f"{int((cells >= 1.1 - 1e-9).sum())} of {n} cells, mutex faster in "
                         f"{int((cells <= 0.9 + 1e-9).sum())}")
        return _say("nothing measured here; in the paper's grid (i7-2600K, t_mutex / t_spin rounded to 0.1, "
                    "a side at >= 1.1 or <= 0.9): " + "; ".join(parts) + ".")
    cmp = compare_grids(here, ref)
    c = cmp.to_dataframe().reset_index()
    groups = {1: [], -1: [], 0: []}
    for r in c.itertuples():
        groups[int(r.winner_here)].append(f"threads={r.threads} work={r.work} "
                                          f"x{format_ratio(r.here, r.here_lo, r.here_hi)}")
    reps = c.reps[np.isfinite(c.reps)]
    n = f"{int(reps.min())}" if len(reps) and reps.min() == reps.max() else \
        (f"{int(reps.min())}-{int(reps.max())}" if len(reps) else "?")
    parts = [f"spinlock faster at {', '.join(groups[1])}" if groups[1] else "spinlock faster at no cell",
             f"mutex faster at {', '.join(groups[-1])}" if groups[-1] else "mutex faster at no cell"]
    if groups[0] and cmp.attrs.get("busy"):
        parts.append(f"no side named at {n} repetitions, {cmp.attrs['busy']}: {', '.join(groups[0])}")
    elif groups[0]:
        parts.append(f"no difference measurable here at {n} repetitions at {', '.join(groups[0])}")
    return _say(f"spinlock vs mutex, measured here ({hardware_threads(here)} hardware threads; "
                f"t_mutex / t_spin, {here.attrs.get('ci', '95% CI')}, a side only where it excludes 1): "
                + "; ".join(parts) + ".")


def direct_io(ds) -> None:
    """Study 07: where O_DIRECT beats the page cache, measured here: t_buffered / t_direct
    per workload and block size, a side only where its CI excludes 1."""
    df = ds[["direct_speedup", "direct_speedup_lo", "direct_speedup_hi", "direct_speedup_n"]] \
        .to_dataframe().reset_index()
    busy = quietness.busy_reason(ds.attrs)
    none = f"no side named, {busy}" if busy else "no difference measurable here"
    groups = {"direct I/O faster": [], "buffered faster": [], none: []}
    for r in df.itertuples():
        side = (none if busy else "direct I/O faster" if r.direct_speedup_lo > 1 else "buffered faster"
                if r.direct_speedup_hi < 1 else none)
        extra = "" if side != none else f" at {_count(r.direct_speedup_n)} repetitions"
        groups[side].append(f"workload {r.workload} ({WORKLOADS[int(r.workload)]}), "
                            f"{r.block_size // 1024} KiB: x{format_ratio(r.direct_speedup, r.direct_speedup_lo, r.direct_speedup_hi)}{extra}")
    parts = [f"{k}: {'; '.join(v)}" for k, v in groups.items() if v]
    return _say(f"buffered vs O_DIRECT, measured here ({ds.attrs.get('filesystem', '?')}; t_buffered / "
                f"t_direct, {ds.attrs.get('ci', '95% CI')}, a side only where it excludes 1) -- "
                + " | ".join(parts) + ".")


def _count(n) -> str:
    return str(int(n)) if math.isfinite(n) else "?"


def kernel_history(hist, policy="ext4") -> None:
    """Study 08, in the paper's terms: per kernel row the throughput ratio with the write op
    timed (the paper's) and its verdict, the fsync-timed ratio beside it, and the unblocked
    threads at each clock (the trace evidence, or span overlap said plainly)."""
    df = ratio_table(hist)
    df = df[df.policy == policy]
    lo, hi = df.attrs["f_low"], df.attrs["f_high"]
    parts = []
    for r in df.itertuples():
        text = (f"{r.row} [{r.data}]: x{format_ratio(r.ratio, r.ci_low, r.ci_high)} "
                f"({_verdict(r.ratio, r.ci_low, r.ci_high)})")
        if math.isfinite(r.fsync_ratio):
            text += f", with the fsync timed x{format_ratio(r.fsync_ratio, r.fsync_ci_low, r.fsync_ci_high)}"
        u = unblocked(hist.runs[r.row], lo, hi, policy)
        if u is not None:
            text += (f", unblocked threads {u.text()}" if u.evidence else
                     f", threads clear of commits {u.text()} (span overlap, not the paper's unblocked count)")
        parts.append(text)
    p = PAPER_IOZONE
    return _say(f"{policy} throughput with the write op timed (the paper's) at {hi:g} over {lo:g} GHz "
                f"(the paper: x{p['ratio']}, unblocked threads {p['unblocked_low']} -> "
                f"{p['unblocked_high']} of {p['threads']} on Linux 3.4): " + "; ".join(parts) + ".")


def paper_machine(ds) -> None:
    """Study 09: a run of the paper's cell read in the paper's figure's rows, the paper's
    stated values beside them (abtlab.present.paper_machine.summary), with the kind of data."""
    return _say(f"{_paper_machine.summary(ds)} [{provenance_label(ds)}]")
