"""Re-check a stored result: run its command again (or its quick version) and compare
the new run with the stored one point by point, each with a CI for the difference of
means (Welch, Bonferroni over the points compared). "holds" when every CI contains 0,
"changed" when one does not; the numbers are printed either way."""
from __future__ import annotations

import math
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data import schema
from ..data.store import load
from ..errors import ConfigError, RunError
from ..stats.tdist import t_ppf
from . import registry

__all__ = ["Point", "compare", "rerun", "check", "verdict"]

CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Point:
    where: dict          # factor -> level
    stored: float        # mean of the stored repetitions
    new: float           # mean of the new run's
    low: float           # CI of new - stored
    high: float
    n_stored: int
    n_new: int

    @property
    def holds(self) -> bool:
        return self.low <= 0 <= self.high


def _diff_ci(a, b, level):
    """(low, high) of mean(b) - mean(a), Welch; exact when both have no spread."""
    na, nb = a.size, b.size
    d = b.mean() - a.mean()
    va, vb = (a.var(ddof=1) if na > 1 else math.inf), (b.var(ddof=1) if nb > 1 else math.inf)
    se2 = va / na + vb / nb
    if se2 == 0:
        tol = 1e-9 * max(abs(a.mean()), abs(b.mean()), 1e-300)
        return d - tol, d + tol
    if not math.isfinite(se2):
        return -math.inf, math.inf
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    half = t_ppf(0.5 + level / 2, df) * math.sqrt(se2)
    return d - half, d + half


def _points(da):
    dims = [d for d in da.dims if d != schema.REP]
    for idx in np.ndindex(*(da.sizes[d] for d in dims)):
        where = {d: da[d].values[i].item() for d, i in zip(dims, idx)}
        vals = da.isel(dict(zip(dims, idx))).values.ravel()
        yield where, vals[np.isfinite(vals)]


def compare(stored, new, var: str, level: float = 0.95) -> list[Point]:
    """The new run's points that the stored result also has, each with the CI of the
    difference at level 1 - (1 - level)/points (Bonferroni)."""
    pairs = []
    for where, b in _points(new[var]):
        try:
            a = stored[var].sel(where).values.ravel()
        except (KeyError, ValueError):
            continue                      # a point the stored result does not have
        a = a[np.isfinite(a)]
        if a.size and b.size:
            pairs.append((where, a, b))
    if not pairs:
        raise ConfigError("the re-run", "no point in common with the stored result",
                          "a command that runs some of the stored result's points")
    each = 1 - (1 - level) / len(pairs)
    return [Point(w, float(a.mean()), float(b.mean()), *_diff_ci(a, b, each), a.size, b.size)
            for w, a, b in pairs]


def _argv(command: str, out: Path) -> list[str]:
    words = shlex.split(command.replace("{out}", shlex.quote(str(out))))
    if words and words[0] == "abtlab":
        words = [sys.executable, "-m", "abtlab"] + words[1:]
    elif words and words[0] == "python":
        words[0] = sys.executable
    return words


def rerun(command: str, workdir: Path):
    """Run `command` from the checkout with its output in workdir; the dataset it wrote."""
    out = Path(workdir) / "rerun.nc"
    proc = subprocess.run(_argv(command, out), cwd=CHECKOUT, capture_output=True, text=True)
    if proc.returncode != 0 or not out.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RunError(f"re-running {command!r} failed ({proc.returncode}): {' | '.join(tail)}")
    return load(out)


def check(name: str, quick: bool = False, folder=None, level: float = 0.95):
    """(Result, [Point]) of re-running a registered result (its quick version: quick)."""
    folder = Path(folder or registry.root())
    result = registry.get(name, folder)
    command = result.quick if quick else result.command
    if not command:
        raise ConfigError("--quick", name, "a result with a quick version (abtlab results list)")
    stored = load(result.path(folder))
    with tempfile.TemporaryDirectory(prefix="abtlab-check-") as tmp:
        new = rerun(command, Path(tmp))
    return result, compare(stored, new, result.var, level)


def verdict(points) -> str:
    return "holds" if all(p.holds for p in points) else "changed"
