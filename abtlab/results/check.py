"""Re-check a stored result: run its command again (or its quick version) and compare
the new run with the stored one, each comparison with a CI (Bonferroni over those made):

- the claim, per configuration: the 3.3/1.6 GHz ratio a page quotes, new / stored, with
  a CI from the two runs' log-ratios (delta method, t with the smaller run's df);
- point by point: the difference of means of each point (Welch).

"holds" when every claim's CI contains 1, "changed" when one does not. A point whose
level moved while the ratio held (a host at another load runs faster at both clocks) is
printed as such, and does not change the verdict: the claim is the ratio."""
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

__all__ = ["Point", "Claim", "compare", "compare_ratios", "rerun", "check", "verdict"]

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


@dataclass(frozen=True)
class Claim:
    where: dict          # the configuration (freq and rep excluded)
    stored: float        # stored ratio, highest / lowest clock
    new: float
    low: float           # CI of new / stored
    high: float

    @property
    def holds(self) -> bool:
        return self.low <= 1 <= self.high


def _log_ratio(lo, hi):
    """(log mean(hi)/mean(lo), its variance, the smaller df)."""
    var = hi.var(ddof=1) / (hi.size * hi.mean() ** 2) + lo.var(ddof=1) / (lo.size * lo.mean() ** 2)
    return math.log(hi.mean() / lo.mean()), var, min(lo.size, hi.size) - 1


def compare_ratios(stored, new, var: str, level: float = 0.95) -> list[Claim]:
    """Per configuration both runs have, the ratio of the highest to the lowest clock:
    new / stored with a CI at level 1 - (1 - level)/configurations."""
    if schema.FREQ not in new[var].dims:
        return []
    freqs = sorted(float(f) for f in new[schema.FREQ].values if f in stored[schema.FREQ].values)
    if len(freqs) < 2:
        return []
    cfg = [d for d in new[var].dims if d not in (schema.FREQ, schema.REP)]
    rows = []
    for idx in np.ndindex(*(new.sizes[d] for d in cfg)):
        where = {d: new[d].values[i].item() for d, i in zip(cfg, idx)}
        try:
            pair = [[_finite(ds[var].sel({**where, schema.FREQ: f})) for f in (freqs[0], freqs[-1])]
                    for ds in (stored, new)]
        except (KeyError, ValueError):
            continue
        if all(x.size > 1 for p in pair for x in p):
            rows.append((where, _log_ratio(*pair[0]), _log_ratio(*pair[1])))
    each = 1 - (1 - level) / max(len(rows), 1)
    out = []
    for where, (ls, vs, ds_), (ln, vn, dn) in rows:
        half = t_ppf(0.5 + each / 2, max(min(ds_, dn), 1)) * math.sqrt(vs + vn)
        d = ln - ls
        out.append(Claim(where, math.exp(ls), math.exp(ln), math.exp(d - half), math.exp(d + half)))
    return out


def _finite(da):
    v = np.asarray(da.values, dtype=float).ravel()
    return v[np.isfinite(v)]


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
    """(Result, [Claim], [Point]) of re-running a registered result (its quick version:
    quick)."""
    folder = Path(folder or registry.root())
    result = registry.get(name, folder)
    command = result.quick if quick else result.command
    if not command:
        raise ConfigError("--quick", name, "a result with a quick version (abtlab results list)")
    stored = load(result.path(folder))
    with tempfile.TemporaryDirectory(prefix="abtlab-check-") as tmp:
        new = rerun(command, Path(tmp))
    return result, compare_ratios(stored, new, result.var, level), compare(stored, new, result.var, level)


def verdict(claims, points=()) -> str:
    """'holds' when every claim holds (every point, when the result has no ratio)."""
    return "holds" if all(c.holds for c in (claims or points)) else "changed"
