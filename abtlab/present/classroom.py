"""Classroom labs: "predict, then measure".

A lab notebook (notebooks/lab_*.ipynb) asks the student for a prediction in a variable
of its parameters cell, measures (simulator, or the real kernel where root is
available), and a check cell prints `check_change(...)` or `check_choice(...)`:
whether the prediction matches what was measured, and why. A hint explains the
measurement next to it, never the textbook answer against it: given per direction
(`why={"up": ..., "down": ..., "same": ...}`), the one for what was measured is shown.
`paper_comparison` puts a run beside what the paper measured, in the paper's terms.
"""
from __future__ import annotations

import ast
import json
import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.display import display_unit, number
from ..errors import ConfigError
from . import paper_terms
from .paper_terms import PAPER, PAPER_IOZONE
from ..stats.values import provenance_label
from .report import NOTEBOOK_DIR

__all__ = ["Feedback", "ANSWER_KEY_ENV", "check_change", "check_choice", "check_number", "measured_change",
           "paper_comparison", "lab_notebooks", "lab_settings", "copy_labs", "WORDS", "PAPER"]

# accepted words for a change, and what they mean
WORDS = {"up": ("faster", "higher", "more", "up", "increase", "larger"),
         "down": ("slower", "lower", "fewer", "less", "down", "decrease", "smaller"),
         "same": ("same", "unchanged", "no change", "equal")}


# set by `abtlab lab check`: a check without a prediction gives the answer key (what was
# measured and which predictions it grades correct) instead of asking for one; a student
# running the lab never sees it before predicting
ANSWER_KEY_ENV = "ABTLAB_ANSWER_KEY"


def _answer_key() -> bool:
    return os.environ.get(ANSWER_KEY_ENV, "") not in ("", "0", "off")


@dataclass
class Feedback:
    ok: bool | None            # None: no prediction written yet
    message: str
    key: bool = False          # the answer key (lab check), not a prompt to predict
    measured: bool = True      # False: nothing to grade against in this setting (said why)

    def __str__(self):
        mark = {True: "CORRECT", False: "NOT QUITE", None: "NO PREDICTION YET"}[self.ok]
        mark = mark if self.measured else "NOT MEASURED HERE"
        return f"[{'ANSWER KEY' if self.key else mark}] {self.message}"


def _meaning(word, field):
    w = str(word).strip().lower()
    for k, words in WORDS.items():
        if w in words:
            return k
    raise ConfigError(field, word, " | ".join(w for ws in WORDS.values() for w in ws[:3]))


def measured_change(before, after, ci=None, tol=0.05) -> str:
    """"up", "down" or "same": from a CI of after/before when given (1 inside -> same;
    "unknown" when it has no finite bounds: too few or too noisy repetitions for one), else
    from the relative change against tol."""
    if ci is not None:
        lo, hi = ci
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "unknown"
        if lo > 1:
            return "up"
        if hi < 1:
            return "down"
        return "same"
    rel = (after - before) / abs(before) if before else math.inf * (after - before)
    return "up" if rel > tol else "down" if rel < -tol else "same"


def check_change(prediction, before, after, what, ci=None, tol=0.05, why="",
                 units="", ci_label="95% CI") -> Feedback:
    """Compare a predicted change ("faster"/"slower"/"same", "more"/"fewer", ...) of
    `what` with the measured change from `before` to `after` (stored in `units`, e.g.
    the variable's "bytes/s": shown in the unit abtlab.data.display gives it, MiB/s).

    why: a hint shown when the prediction misses (a string), or one explanation per
    measured direction (a dict with keys "up", "down", "same"): the one for what was
    measured is shown with either verdict, so a hint never argues against the data."""
    if prediction is None and not _answer_key():
        return Feedback(None, f"write your prediction for {what} in the parameters cell, then re-run")
    got = measured_change(before, after, ci, tol)
    ratio = after / before if before else math.nan
    ci_txt = ("" if ci is None else f", {ci_label} [{ci[0]:.2f}, {ci[1]:.2f}]" if got != "unknown"
              else ", no CI: too few or too noisy repetitions")
    unit, k = display_unit(units, [before, after])
    shown = f"{number(before * k)} -> {number(after * k)}" + (f" {unit}" if unit and unit != "1" else "")
    seen = f"{what}: {shown} (x{ratio:.2f}{ci_txt}), measured change: {got}"
    if got == "unknown":      # a point estimate without a CI grades nothing (a prediction is still checked)
        if prediction is not None:
            _meaning(prediction, "prediction")
        return Feedback(None, f"{seen}; no direction is graded without a CI.", key=prediction is None,
                        measured=False)
    if prediction is None:
        graded = ", ".join(repr(w) for w in WORDS[got])
        return Feedback(None, f"{seen}; graded correct: {graded}.", key=True)
    pred = _meaning(prediction, "prediction")
    if isinstance(why, dict):
        missing = {"up", "down", "same"} - set(why)
        if missing:
            raise ConfigError("why", sorted(why), "a hint for each of up, down and same")
        return Feedback(pred == got, f"you predicted {prediction!r}. {seen}. Why: {why[got]}")
    if pred == got:
        return Feedback(True, f"you predicted {prediction!r}. {seen}.")
    return Feedback(False, f"you predicted {prediction!r}. {seen}." + (f" Hint: {why}" if why else ""))


def paper_comparison(ds, f_low, f_high, policy="ext4", level=0.95) -> str:
    """A few lines putting a run's `policy` beside the paper's IOzone result, in the
    paper's terms (throughput with the write op timed, unblocked threads: the trace
    evidence where the run has it, else span overlap said plainly) and with the fsync
    timed too: what this machine measured, said plainly where it differs."""
    p = PAPER_IOZONE
    w = paper_terms.ratio(ds, "throughput", f_low, f_high, policy, level)
    f = paper_terms.ratio(ds, "throughput_fsync", f_low, f_high, policy, level)
    u = paper_terms.unblocked(ds, f_low, f_high, policy)
    lines = [f"The paper ({PAPER}; 256 threads x 128 KiB in 32 KiB records, Linux 3.4.2): "
             f"throughput at {p['f_high']} GHz over {p['f_low']} GHz x{p['ratio']} with the write op "
             f"timed, unblocked threads {p['unblocked_low']} -> {p['unblocked_high']}.",
             f"This run ({provenance_label(ds)}): "
             + paper_terms.throughput_sentence(ds, f_low, f_high, policy)
             + (f"; {u.sentence()}" if u else "") + "."]
    if paper_terms.direction(w) in ("up", "same") or (math.isfinite(w[0]) and w[0] >= 1
                                                     and paper_terms.direction(w) == "unknown"):
        lines.append("Here the write op does not slow down at the faster clock: the paper's effect "
                     "is not measured on this machine and setting"
                     + ("; the throughput with the fsync timed is the one that falls." if f[2] < 1 else "."))
    return "\n".join(lines)


def check_number(prediction, measured, what, rel_tol=0.25, why="") -> Feedback:
    """A predicted number within rel_tol of the measured one."""
    if prediction is None and _answer_key():
        lo, hi = sorted((measured * (1 - rel_tol), measured * (1 + rel_tol)))
        return Feedback(None, f"{what}: measured {number(measured)}; graded correct: an estimate "
                        f"from {number(lo)} to {number(hi)} (within {rel_tol:.0%}).", key=True)
    if prediction is None:
        return Feedback(None, f"write your estimate of {what} in the parameters cell, then re-run")
    if not isinstance(prediction, (int, float)) or isinstance(prediction, bool):
        raise ConfigError("prediction", prediction, "a number")
    err = abs(prediction - measured) / abs(measured) if measured else abs(prediction)
    msg = f"{what}: you estimated {number(prediction)}, measured {number(measured)} (off by {err:.0%})"
    if err <= rel_tol:
        return Feedback(True, msg + f", within {rel_tol:.0%}.")
    return Feedback(False, msg + "." + (f" Hint: {why}" if why else ""))


def check_choice(prediction, measured, choices, what, why="") -> Feedback:
    """A predicted option (e.g. a delay window) against the measured best one."""
    if prediction is None and _answer_key():
        shown = number(measured) if isinstance(measured, (int, float, np.number)) else repr(measured)
        return Feedback(None, f"{what}: the measurement says {shown}; graded correct: "
                        f"{shown} (of {list(choices)}).", key=True)
    if prediction is None:
        return Feedback(None, f"choose {what} among {list(choices)} in the parameters cell, then re-run")
    if prediction not in choices:
        raise ConfigError("prediction", prediction, "one of " + ", ".join(map(str, choices)))
    if prediction == measured:
        return Feedback(True, f"{what}: you chose {prediction}, the measurement agrees.")
    return Feedback(False, f"{what}: you chose {prediction}, the measurement says {measured}."
                    + (f" Hint: {why}" if why else ""))


def lab_notebooks(directory=None) -> list[Path]:
    """The lab notebooks, in order."""
    d = Path(directory or NOTEBOOK_DIR)
    labs = sorted(d.glob("lab_*.ipynb"))
    if not labs:
        raise ConfigError("directory", str(d), "a folder with lab_*.ipynb notebooks")
    return labs


def _parameters(path) -> tuple[dict, list]:
    """A lab's parameters cell: {name: default} and the data choices its comment lists."""
    cells = json.loads(Path(path).read_text())["cells"]
    src = next(("".join(c["source"]) for c in cells
                if "parameters" in c.get("metadata", {}).get("tags", [])), "")
    names = {t.id: ast.literal_eval(n.value) if isinstance(n.value, ast.Constant) else None
             for n in ast.parse(src).body if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name)}
    line = next((ln for ln in src.splitlines() if ln.startswith("data =")), "")
    choices = re.findall(r'"([a-z0-9_]+)"', line.partition("#")[2])
    return names, choices


_UNSET = object()


def lab_settings(path, data: str, sim_params=None, real_kernel=_UNSET) -> dict:
    """The parameters `abtlab lab check` gives one lab for a setting: data where the lab
    offers it (its parameters cell lists its choices), else the lab's own default; and
    sim_params and real_kernel to the labs that take them (real_kernel None is a value:
    leave the real kernel out). Returns {"data": ..., ["sim_params": ...], ["real_kernel": ...]}."""
    names, choices = _parameters(path)
    out = {"data": data if data in choices else names.get("data", data)}
    if sim_params is not None and "sim_params" in names:
        out["sim_params"] = sim_params
    if real_kernel is not _UNSET and "real_kernel" in names:
        out["real_kernel"] = real_kernel
    return out


def copy_labs(dest, overwrite=False) -> list[Path]:
    """Copy the lab notebooks into dest (for students), a new or empty folder; refuses a
    folder with anything in it (students' work), unless overwrite."""
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise ConfigError("dest", str(dest), "a folder (this is a file)")
    if dest.is_dir() and any(dest.iterdir()) and not overwrite:
        raise ConfigError("dest", str(dest), "a new or empty folder (--overwrite: copy into it "
                          "anyway, replacing the lab notebooks there)")
    dest.mkdir(parents=True, exist_ok=True)
    labs = lab_notebooks()
    return [Path(shutil.copy2(p, dest / p.name)) for p in labs]
