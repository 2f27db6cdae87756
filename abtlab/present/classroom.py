"""Classroom labs: "predict, then measure".

A lab notebook (notebooks/lab_*.ipynb) asks the student for a prediction in a variable
of its parameters cell, measures (simulator, or the real kernel where root is
available), and a check cell prints `check_change(...)` or `check_choice(...)`:
whether the prediction matches what was measured, and a hint why.
"""
from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

__all__ = ["Feedback", "check_change", "check_choice", "check_number", "measured_change",
           "lab_notebooks", "copy_labs", "WORDS"]

# accepted words for a change, and what they mean
WORDS = {"up": ("faster", "higher", "more", "up", "increase", "larger"),
         "down": ("slower", "lower", "fewer", "less", "down", "decrease", "smaller"),
         "same": ("same", "unchanged", "no change", "equal")}


@dataclass
class Feedback:
    ok: bool | None            # None: no prediction written yet
    message: str

    def __str__(self):
        mark = {True: "CORRECT", False: "NOT QUITE", None: "NO PREDICTION YET"}[self.ok]
        return f"[{mark}] {self.message}"


def _meaning(word, field):
    w = str(word).strip().lower()
    for k, words in WORDS.items():
        if w in words:
            return k
    raise ConfigError(field, word, " | ".join(w for ws in WORDS.values() for w in ws[:3]))


def measured_change(before, after, ci=None, tol=0.05) -> str:
    """"up", "down" or "same": from a CI of after/before when given (1 inside -> same),
    else from the relative change against tol."""
    if ci is not None:
        lo, hi = ci
        if lo > 1:
            return "up"
        if hi < 1:
            return "down"
        return "same"
    rel = (after - before) / abs(before) if before else math.inf * (after - before)
    return "up" if rel > tol else "down" if rel < -tol else "same"


def check_change(prediction, before, after, what, ci=None, tol=0.05, why="") -> Feedback:
    """Compare a predicted change ("faster"/"slower"/"same", "more"/"fewer", ...) of
    `what` with the measured change from `before` to `after`."""
    if prediction is None:
        return Feedback(None, f"write your prediction for {what} in the parameters cell, then re-run")
    pred = _meaning(prediction, "prediction")
    got = measured_change(before, after, ci, tol)
    ratio = after / before if before else math.nan
    ci_txt = f", 95% CI [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else ""
    seen = f"{what}: {before:.4g} -> {after:.4g} (x{ratio:.2f}{ci_txt}), measured change: {got}"
    if pred == got:
        return Feedback(True, f"you predicted {prediction!r}. {seen}.")
    return Feedback(False, f"you predicted {prediction!r}. {seen}." + (f" Hint: {why}" if why else ""))


def check_number(prediction, measured, what, rel_tol=0.25, why="") -> Feedback:
    """A predicted number within rel_tol of the measured one."""
    if prediction is None:
        return Feedback(None, f"write your estimate of {what} in the parameters cell, then re-run")
    if not isinstance(prediction, (int, float)) or isinstance(prediction, bool):
        raise ConfigError("prediction", prediction, "a number")
    err = abs(prediction - measured) / abs(measured) if measured else abs(prediction)
    msg = f"{what}: you estimated {prediction:.4g}, measured {measured:.4g} (off by {err:.0%})"
    if err <= rel_tol:
        return Feedback(True, msg + f", within {rel_tol:.0%}.")
    return Feedback(False, msg + "." + (f" Hint: {why}" if why else ""))


def check_choice(prediction, measured, choices, what, why="") -> Feedback:
    """A predicted option (e.g. a delay window) against the measured best one."""
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
    from .report import NOTEBOOK_DIR
    d = Path(directory or NOTEBOOK_DIR)
    labs = sorted(d.glob("lab_*.ipynb"))
    if not labs:
        raise ConfigError("directory", str(d), "a folder with lab_*.ipynb notebooks")
    return labs


def copy_labs(dest, overwrite=False) -> list[Path]:
    """Copy the lab notebooks into dest (for students); refuses to overwrite their work."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    labs = lab_notebooks()
    clash = [dest / p.name for p in labs if (dest / p.name).exists()]
    if clash and not overwrite:
        raise ConfigError("dest", str(clash[0]), "a folder without these notebooks (or overwrite)")
    return [Path(shutil.copy2(p, dest / p.name)) for p in labs]
