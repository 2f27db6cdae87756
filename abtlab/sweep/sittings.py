"""A sweep in sittings: `[[sittings]]` tables in a spec, each its own seed, repetitions
and (some) levels, run one after another into finished datasets beside the output and
pooled into it (abtlab.data.merge.merge_reps), so a grid that wants more repetitions at
some levels than at others (the paper's: 6 at the ends of the clock axis, 3 between), or
a sitting added to a finished grid, is one spec and one command.

    [[sittings]]            # the first: every level of [factors], 2 repetitions
    seed = 71
    repetitions = 2
    [[sittings]]            # 4 more at the ends of the clock axis
    seed = 91
    repetitions = 4
    factors = { freq = "virtual:1.6,3.3" }

Sitting k of OUT is written to OUT's stem + `.sitting-k` + OUT's suffix, a finished
dataset that --resume takes as it is (after checking it against its sitting)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import ConfigError

__all__ = ["Sitting", "parse_sittings", "sitting_path", "run_sittings", "only_sitting"]

_KEYS = ("seed", "repetitions", "factors")


@dataclass(frozen=True)
class Sitting:
    seed: int
    reps: object = None             # None: the spec's [repetitions]
    factors: dict = field(default_factory=dict)   # levels that replace the spec's


def parse_sittings(value, factors: dict, parse_reps) -> list[Sitting]:
    """The spec's `sittings` (a list of tables) -> Sittings; ConfigError naming the field.
    factors: the spec's [factors] (a sitting may narrow or change their levels, not add
    factors); parse_reps: the spec's parser of `repetitions` (field name, value)."""
    if not isinstance(value, list) or not value or not all(isinstance(t, dict) for t in value):
        raise ConfigError("sittings", value, "[[sittings]] tables, each with a seed and "
                          "optionally repetitions and factors = {name = levels}")
    out, seeds = [], set()
    for k, table in enumerate(value, 1):
        where = f"sittings[{k}]"
        bad = sorted(set(table) - set(_KEYS))
        if bad:
            raise ConfigError(f"{where}.{bad[0]}", table[bad[0]], ", ".join(_KEYS))
        seed = table.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ConfigError(f"{where}.seed", seed, "an integer >= 0 (each sitting its own)")
        if seed in seeds:
            raise ConfigError(f"{where}.seed", seed, "a seed no other sitting has (the same "
                              "seed and levels would repeat a sitting's runs exactly)")
        seeds.add(seed)
        levels = table.get("factors", {})
        if not isinstance(levels, dict):
            raise ConfigError(f"{where}.factors", levels, "a table {factor = levels}")
        unknown = sorted(set(levels) - set(factors))
        if unknown:
            raise ConfigError(f"{where}.factors.{unknown[0]}", levels[unknown[0]],
                              f"a factor of [factors]: {', '.join(factors)}")
        if "freq" in levels and _mode(levels["freq"]) != _mode(factors.get("freq", "")):
            raise ConfigError(f"{where}.factors.freq", levels["freq"], "levels of the spec's "
                              f"frequency mode ({_mode(factors.get('freq', '')) or 'plain GHz'}"
                              "): one dataset has one clock")
        reps = table.get("repetitions")
        out.append(Sitting(seed=seed, factors=dict(levels),
                           reps=None if reps is None else parse_reps(f"{where}.repetitions", reps)))
    return out


def _mode(freq) -> str:
    """'virtual' of 'virtual:1.6,3.3'; '' for plain GHz levels."""
    return str(freq).split(":")[0] if ":" in str(freq) else ""


def sitting_path(out, k: int) -> Path:
    """Where sitting k (from 1) of the output out is kept."""
    out = Path(out)
    return out.with_name(f"{out.stem}.sitting-{k}{out.suffix}")


def _alone(spec, sit):
    """The spec of one sitting, run as a sweep of its own."""
    return replace(spec, seed=sit.seed, reps=spec.reps if sit.reps is None else sit.reps,
                   factors={**spec.factors, **sit.factors}, sittings=[])


def only_sitting(spec, k: int):
    """The spec of sitting k (from 1) alone (`abtlab sweep SPEC --sitting K`): the dataset
    it writes is the one kept beside a pooled output; ConfigError for a k it lacks."""
    if not spec.sittings or not 1 <= k <= len(spec.sittings):
        raise ConfigError("--sitting", k, f"1 to {len(spec.sittings)}, the spec's [[sittings]]"
                          if spec.sittings else "none: this spec has no [[sittings]]")
    return _alone(spec, spec.sittings[k - 1])


def run_sittings(spec, out, run_one, **overrides):
    """Run each sitting of spec (run_one(spec, out, **overrides): abtlab.sweep.spec's
    single-sitting runner) into its own dataset, then pool them into out. out is checked
    before any sitting runs; resume/force apply to every sitting and to out."""
    from ..data import store
    from ..data.merge import merge_reps
    store.check_out(out, resume=overrides.get("resume", False), force=overrides.get("force", False))
    command = overrides.pop("command", None)
    paths = []
    for k, sit in enumerate(spec.sittings, 1):
        one = _alone(spec, sit)
        paths.append(sitting_path(out, k))
        said = f"{command} (sitting {k} of {len(spec.sittings)})" if command else None
        run_one(one, out=paths[-1], command=said, **overrides)
    sat = [store.load(p).load() for p in paths]
    pooled = merge_reps(sat, names=[p.name for p in paths]) if len(sat) > 1 else sat[0]
    if command:
        pooled.attrs["command"] = command
    pooled.attrs["sittings"] = "; ".join(
        f"{p.name}: seed {s.seed}" + "".join(f", {f} = {v}" for f, v in s.factors.items())
        for p, s in zip(paths, spec.sittings))
    store.save(pooled, out)
    return pooled
