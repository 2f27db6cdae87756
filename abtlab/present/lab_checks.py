"""The checks and closing notes of labs 4-7 (the neighbouring papers), from what
abtlab.studies.lab_studies returned: a prediction graded against the measurement's CI
(abtlab.present.classroom), a hint per measured direction that quotes the number beside
it, and an "Answer:" line saying what was measured here and whether the paper's result
holds here.
"""
from __future__ import annotations

import math

from ..backends.dio import WORKLOADS
from ..data.display import quantity
from ..bps import ranking
from ..stats.ratios import format_ratio
from ..studies.syscalls import PAPER_DIO, compare, hardware_threads
from ..system import quietness
from .classroom import Feedback, _meaning, check_change, check_choice

__all__ = ["lock_check", "lock_note", "dio_check", "dio_note", "bps_check", "bps_note",
           "sera_check", "sera_note", "BPS_CHOICES", "PAPER_SERA"]

PETERSEN = "Petersen (University of Wisconsin-Madison)"
HE = "He, Sun and Yin (IPDPS Workshops 2013)"
GE = "Ge, Feng and Sun (CCGrid 2012)"
BPS_CHOICES = ("bps", "iops", "bandwidth", "arpt", "none")
# Ge et al. (CCGrid 2012), abstract: 9% to 28% less system energy without losing performance
PAPER_SERA = {"energy_saving": (0.09, 0.28), "source": f"{GE}, abstract"}
TIME_TOL = 0.02         # "without losing performance": a slowdown within 2% counts as none


def _busy(ds) -> str:
    """Why a host run's comparison names no side (it started on a busy host), else ""."""
    return quietness.busy_reason(ds.attrs) if ds is not None else ""


def _not_graded(prediction, what, seen, busy) -> Feedback:
    """A comparison measured on a busy host: shown with its CI, not graded."""
    if prediction is not None:
        _meaning(prediction, "prediction")          # a bad word is still refused
    return Feedback(None, f"{what}: {seen}; not graded: {busy}.", key=prediction is None, measured=False)


def _side(ratio, lo, hi) -> str:
    if math.isfinite(lo) and lo > 1:
        return "up"
    if math.isfinite(hi) and hi < 1:
        return "down"
    return "same"


# -- lab 4: spinlock vs mutex -------------------------------------------------------------

def _lock_cell(here, ref, threads, work):
    """(ratio, lo, hi, n, where) at one cell: measured here, else the paper's grid."""
    if here is not None:
        c = here.sel(threads=threads, work=work)
        return (float(c.spin_speedup), float(c.spin_speedup_lo), float(c.spin_speedup_hi),
                int(c.spin_speedup_n), f"measured here, {hardware_threads(here)} hardware threads")
    p = float(ref.spin_speedup.sel(threads=threads, work=work, method="nearest"))
    return p, math.nan, math.nan, 0, "the paper's grid, i7-2600K; nothing measured here"


def lock_check(prediction, here, ref, threads, work) -> Feedback:
    """Is the spinlock faster than the mutex at this cell? graded on t_mutex / t_spin and
    its CI (the paper's grid, rounded to 0.1, when nothing was measured)."""
    r, lo, hi, n, where = _lock_cell(here, ref, threads, work)
    cores = hardware_threads(here) if here is not None else 8
    what = f"the spinlock against the mutex, {threads} threads x {work} nops (t_mutex / t_spin; {where})"
    why = {"up": f"t_mutex / t_spin = {r:.2f}: " + _lock_reason(threads, work, cores, spin_wins=True) + ".",
           "down": f"t_mutex / t_spin = {r:.2f}: " + _lock_reason(threads, work, cores, spin_wins=False) + ".",
           "same": f"t_mutex / t_spin = {r:.2f}" + (f", its CI [{lo:.2f}, {hi:.2f}] includes 1: no difference "
                   f"measurable here at {n} repetitions" if here is not None else
                   ": within 10% in the paper's grid") + "; the lock hand-over is not what this run's time is made of."}
    if _busy(here):
        return _not_graded(prediction, what, f"x{format_ratio(r, lo, hi)}", _busy(here))
    ci = (lo, hi) if here is not None else None
    label = here.attrs.get("ci", "95% CI") if here is not None else "95% CI"
    return check_change(prediction, 1.0, r, what, ci=ci, tol=0.0999, why=why, ci_label=label)


def _lock_reason(threads, work, cores, spin_wins) -> str:
    if threads == 1:
        return ("one thread never waits, so each entry is an uncontended acquire and release and only the "
                "locks' fixed costs differ: " + ("the spinlock's atomic exchange is the cheaper path here"
                                                 if spin_wins else "the mutex's uncontended fast path (one "
                                                 "atomic on the futex word, no system call) is the cheaper one here"))
    if spin_wins:
        return (f"each hand-over costs the spinlock a few cache-line transfers, the mutex a futex sleep and a "
                f"wake-up in the kernel; with {threads} threads on {cores} hardware threads a waiter spins on "
                "a CPU of its own")
    if threads > cores:
        return (f"{threads} threads on {cores} hardware threads: a waiter spinning burns the time slice the "
                "lock's holder needs to finish (the collapse grows with the critical section)")
    return (f"a critical section of {work} nops is long: waiters spin for all of it, where a mutex puts them "
            "to sleep and leaves the CPU to the holder")


def lock_note(here, ref, cells) -> str:
    """Each cell here beside the paper's, whether the paper's side holds here, and the
    closing Answer: line."""
    if here is None:
        parts = [f"{t} threads x {w} nops: x{float(ref.spin_speedup.sel(threads=t, work=w, method='nearest')):.1f}"
                 for t, w in cells]
        return (f"Answer: nothing measured here (data='sim': abtlab has no simulator of locks); Petersen's "
                f"i7-2600K grid, t_mutex / t_spin: " + "; ".join(parts) + ". Run with data='auto' to measure "
                "this machine.")
    c = compare(here, ref)
    lines, holds = [], []
    for t, w in cells:
        cell = c.sel(threads=t, work=w)
        side = {1: "spinlock faster", -1: "mutex faster",
                0: "no side named" if c.attrs.get("busy") else "no difference measurable"}[int(cell.winner_here)]
        lines.append(f"{t} threads x {w} nops: here x{format_ratio(float(cell.here), float(cell.here_lo), float(cell.here_hi))} "
                     f"({side}), paper x{float(cell.paper):.1f}")
        holds.append(bool(cell.agree))
    verdict = (f"No side is named here: {c.attrs['busy']}" if c.attrs.get("busy") else
               "The paper's side (spinlock, mutex, or within 10%) is the one measured here at every cell"
               if all(holds) else f"The paper's side is the one measured here at {sum(holds)} of {len(holds)} "
               "cells" if any(holds) else "The paper's side is measured here at none of these cells")
    return (f"Answer: spinlock vs mutex measured on this machine ({hardware_threads(here)} hardware threads; "
            f"t_mutex / t_spin, {here.attrs.get('ci', '95% CI')}) beside Petersen's (University of Wisconsin-Madison) i7-2600K: " + "; ".join(lines) + f". {verdict}.")


# -- lab 5: buffered vs direct I/O ----------------------------------------------------------

def _dio_cell(ds, workload, block):
    c = ds.sel(workload=workload, block_size=block)
    return (float(c.direct_speedup), float(c.direct_speedup_lo), float(c.direct_speedup_hi),
            int(c.direct_speedup_n))


def dio_check(prediction, ds, workload, block) -> Feedback:
    """Is O_DIRECT faster than buffered I/O for this workload and block size? graded on
    t_buffered / t_direct and its CI; with no measurement, the paper's one figure (its
    workload 3 at 4 KiB) or nothing."""
    name = f"workload {workload} ({WORKLOADS[workload]}), {block // 1024} KiB"
    if ds is None:
        if (workload, block) != (PAPER_DIO["workload"], PAPER_DIO["block_size"]):
            return Feedback(None, f"{name}: not measured (data='sim': the page cache has no simulator); "
                            "run with data='auto' (root and loop devices).", measured=False)
        r, lo, hi, n = PAPER_DIO["direct_speedup"], math.nan, math.nan, 0
        where = f"the paper's figure, {PETERSEN}; nothing measured here"
    else:
        r, lo, hi, n = _dio_cell(ds, workload, block)
        where = "measured here"
    what = f"O_DIRECT against buffered I/O, {name} (t_buffered / t_direct; {where})"
    reads = workload == 2
    why = {"up": f"t_buffered / t_direct = {r:.2f}: " + (
               "the file is read once at random offsets, so the page cache holds nothing to reuse and buffered "
               "reads pay a copy into it and readahead of blocks nobody asked for; O_DIRECT moves the block "
               "straight to the program" if reads else
               "the buffered write is copied into the page cache and then written back by syncfs; O_DIRECT "
               "writes the block once, straight to the device") + ".",
           "down": f"t_buffered / t_direct = {r:.2f}: " + (
               "buffered reads are served from the page cache (memory, GB/s) once a block is there, and "
               "readahead fetches the next blocks in large requests; O_DIRECT goes to the device every time"
               if reads else "buffered writes land in the page cache and syncfs flushes them in one batch; "
               "each O_DIRECT write waits for the device") + ".",
           "same": f"t_buffered / t_direct = {r:.2f}" + (f", its CI [{lo:.2f}, {hi:.2f}] includes 1: no "
                   f"difference measurable here at {n} repetitions" if ds is not None else "") +
                   "; both paths are bound by the same thing here (the device, or the system calls)."}
    if _busy(ds):
        return _not_graded(prediction, what, f"x{format_ratio(r, lo, hi)}", _busy(ds))
    ci = (lo, hi) if ds is not None else None
    label = ds.attrs.get("ci", "95% CI") if ds is not None else "95% CI"
    return check_change(prediction, 1.0, r, what, ci=ci, tol=0.0999, why=why, ci_label=label)


def dio_note(ds, cells) -> str:
    """The magnitudes (page cache vs device), and the closing Answer: line."""
    if ds is None:
        return (f"Answer: nothing measured here (data='sim': abtlab has no simulator of the page cache); "
                f"{PAPER_DIO['source']}. Run with data='auto' to measure this machine.")
    parts, rates, busy = [], [], _busy(ds)
    for w, b in cells:
        r, lo, hi, n = _dio_cell(ds, w, b)
        side = "no side named" if busy else \
            {"up": "direct faster", "down": "buffered faster", "same": "no difference measurable"}[_side(r, lo, hi)]
        parts.append(f"workload {w} at {b // 1024} KiB x{format_ratio(r, lo, hi)} ({side})")
        tp = ds.throughput.sel(workload=w, block_size=b).median("rep")
        rates.append(f"workload {w} at {b // 1024} KiB: buffered {quantity(float(tp.sel(mode='buffered')), 'bytes/s')}, "
                     f"direct {quantity(float(tp.sel(mode='direct')), 'bytes/s')}")
    paper = ""
    if PAPER_DIO["workload"] in ds.workload.values and PAPER_DIO["block_size"] in ds.block_size.values:
        r, lo, hi, _ = _dio_cell(ds, PAPER_DIO["workload"], PAPER_DIO["block_size"])
        said = f"is not measurable here: {busy}" if busy else \
            {"up": "holds here", "same": "is not measurable here (the CI includes 1)",
             "down": "does not hold here (buffered is faster)"}[_side(r, lo, hi)]
        paper = (f" The paper's one figure (direct x{PAPER_DIO['direct_speedup']} at 4 KiB single-block "
                 f"overwrite) {said}.")
    return ("Magnitudes (median throughput): " + "; ".join(rates) + ". A rate of thousands of MiB/s is the page "
            "cache (memory), not the disk; one of tens to hundreds of MiB/s is the device.\n"
            f"Answer: buffered vs O_DIRECT measured on this machine ({ds.attrs.get('filesystem', '?')}; "
            f"t_buffered / t_direct, {ds.attrs.get('ci', '95% CI')}): " + "; ".join(parts) + "." + paper)


# -- lab 6: which metric tracks run time -----------------------------------------------------

def _winner(table) -> str:
    won = str(table.winner.iloc[0]) if len(table) else ""
    return won or "none"


def bps_check(prediction, table) -> Feedback:
    """Which metric tracks run time best ("none": no lead measurable)? graded on the
    ranking's winner (its lead's bootstrap CI excludes 0)."""
    got = _winner(table)
    cis = "; ".join(f"{r.metric} {r.normalized:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}]"
                    for r in table.sort_values("normalized", ascending=False).itertuples())
    why = (f"normalised CC with run time ({table.attrs.get('source')}, 95% bootstrap CI over "
           f"{int(table.n.max())} workloads): {cis}; " +
           (f"no metric named: {table.attrs['busy']}." if table.attrs.get("busy") else
            ranking.reason(table) + (": no difference measurable here." if got == "none" else ".")))
    f = check_choice(prediction, got, BPS_CHOICES, "the metric that tracks run time best", why=why)
    if f.ok:      # the CIs beside a correct answer too
        return Feedback(True, f"{f.message} {why}")
    return f


def bps_note(table) -> str:
    got = _winner(table)
    paper = (f"{HE} found BPS tracks run time best (mean normalised CC 0.91) and bandwidth fails on data "
             "sieving, which moves bytes the application does not need")
    holds = ("holds here" if got == "bps" else f"is not measured here ({table.attrs['busy']})"
             if table.attrs.get("busy") else "is not measured here (no lead measurable)" if got == "none"
             else f"does not hold here ({got} leads)")
    return (f"Answer: on {table.attrs.get('source')}, the metric that tracks run time best is "
            f"{got if got != 'none' else 'none measurable'} (bootstrap CIs over {int(table.n.max())} "
            f"workloads); {paper}: that result {holds}.")


# -- lab 7: SERA-IO --------------------------------------------------------------------------

def _ratio(df, policy, name):
    r = df.set_index("policy").loc[policy]
    return float(r[f"{name}_ratio"]), float(r[f"{name}_ratio_lo"]), float(r[f"{name}_ratio_hi"])


def sera_check(prediction, df, name) -> Feedback:
    """SERA-IO against fixed-high: its (modelled) energy "lower"/"higher"/"same", or its
    speed "slower"/"faster"/"same" (fixed-high's time over SERA-IO's, so a longer run
    grades "slower")."""
    r, lo, hi = _ratio(df, "sera", name)
    freqs = df.set_index("policy").loc["sera", "freqs_ghz"]
    longer = f"SERA-IO / fixed-high = {r:.2f} in time: at {freqs} GHz the CPU work inside the I/O phase takes longer."
    shorter = (f"SERA-IO / fixed-high = {r:.2f} in time: the lower clock ({freqs} GHz) made this run faster, "
               "the counterintuitive direction of Lab 1 (Chang et al., MASCOTS 2014: journal commits "
               "batch more writers at a slower clock).")
    same = f"SERA-IO / fixed-high = {r:.2f}, 95% CI [{lo:.2f}, {hi:.2f}] includes 1: "
    if name == "time":
        what = (f"SERA-IO's speed against fixed-high's (fixed-high's run time / SERA-IO's, SIMULATED), "
                f"{df.attrs['workload']} ({df.attrs['seeds']} seeds)")
        why = {"down": longer, "up": shorter, "same": same + "the I/O phase is bound by the device, not the clock."}
        return check_change(prediction, 1.0, 1 / r, what, ci=(1 / hi, 1 / lo), why=why)
    what = f"SERA-IO's energy (MODELLED) over fixed-high's, {df.attrs['workload']} ({df.attrs['seeds']} seeds)"
    why = {"up": f"SERA-IO / fixed-high = {r:.2f} in energy: the frequencies it chose ({freqs} GHz) lengthened "
                 "the run more than the lower power saved.",
           "down": f"SERA-IO / fixed-high = {r:.2f} in energy: during I/O the CPU mostly waits for the device, "
                   f"so a lower clock ({freqs} GHz) draws less power for almost the same time.",
           "same": same + f"at {freqs} GHz the lower power and the longer run cancel out."}
    return check_change(prediction, 1.0, r, what, ci=(lo, hi), why=why)


def sera_note(df) -> str:
    """Every policy beside fixed-high, and the closing Answer: line."""
    rows = []
    for p in df.policy:
        t, e = _ratio(df, p, "time"), _ratio(df, p, "energy")
        rows.append(f"{p}: time x{format_ratio(*t)}, energy x{format_ratio(*e)}")
    e_lo, e_hi = PAPER_SERA["energy_saving"]
    er, elo, ehi = _ratio(df, "sera", "energy")
    tr, tlo, thi = _ratio(df, "sera", "time")
    saves = _side(er, elo, ehi) == "down"
    slower = tlo > 1 + TIME_TOL          # a loss of performance beyond TIME_TOL, measurable
    holds = (f"holds here (no slowdown beyond {TIME_TOL:.0%} measurable)" if saves and not slower else
             f"holds for energy, at a cost in time (x{format_ratio(tr, tlo, thi)})" if saves else
             "does not hold here (no energy saving measurable)")
    return (f"Answer: on SIMULATED {df.attrs['workload']} runs with MODELLED energy ({df.attrs['seeds']} seeds, "
            f"95% CI, over fixed-high): " + "; ".join(rows) + f". {GE} measured {e_lo:.0%} to {e_hi:.0%} less "
            f"energy without losing performance: that result {holds}.")
