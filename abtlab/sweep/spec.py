"""Sweep specs: a TOML file (or the same dict in Python) naming everything a sweep needs.

    backend = "iozone"
    seed = 1
    warmup = 1
    [factors]                       # lists, or the strings `abtlab run` accepts
    threads = [64, 256]
    file_size = "128k"
    record_size = "32k"
    policy = ["ext4", "nojc", "delayjc:window=16ms"]
    freq = "emulated:1.6,2.0,2.6,3.3"
    device = ["none", "hdd7200"]
    machine = ["host", "guest:clock=virtual,cpus=2"]   # where each point runs (--machine)
    [options]                       # backend options (not swept)
    fsync = true
    [repetitions]                   # or: repetitions = 5
    min = 3
    max = 50
    target = 0.05                   # relative 95% CI half-width of the mean
    metric = "throughput"
    on = "mean"                     # or "slowdown": the ratio to the lowest frequency
    [execution]
    scheduler = "serial"            # "local" (dask LocalCluster) or "tcp://host:8786"
    workers = 2
    order = "random"                # or "blocked": each repetition of a configuration runs
                                    # at every frequency back to back (paired ratios)
    keep_going = false              # true: a failed run is left missing, the sweep goes on
    [[sittings]]                    # optional, one or more: see abtlab/sweep/sittings.py
    seed = 2                        # (each its own seed, repetitions and some levels,
    factors = { threads = [256] }   #  pooled into out)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..backends import get as get_backend, names
from ..errors import ConfigError
from ..data.tomlfile import read_toml
from .loop import BOOL_OPTIONS, ORDERS, Reps
from .runner import run
from .sittings import parse_sittings, run_sittings

__all__ = ["Spec", "load_spec", "parse_spec", "run_spec"]

_TOP = {"backend", "seed", "warmup", "out", "factors", "options", "repetitions", "execution",
        "sittings"}


@dataclass
class Spec:
    backend: str
    factors: dict
    options: dict = field(default_factory=dict)
    reps: object = 3
    seed: int = 0
    warmup: int = 0
    out: str | None = None
    scheduler: str | None = None
    workers: int = 2
    order: str = "random"
    keep_going: bool = False
    sittings: list = field(default_factory=list)   # abtlab.sweep.sittings.Sitting


def load_spec(path) -> Spec:
    return parse_spec(read_toml(path, "spec", "an existing TOML file"))


def _int(data, key, lo, default):
    v = data.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        raise ConfigError(key, v, f"an integer >= {lo}")
    return v


def _reps(name: str, reps):
    """`repetitions = N` or a table {min, max, target, ...} -> int or Reps."""
    if isinstance(reps, dict):
        bad = set(reps) - {"min", "max", "target", "level", "metric", "on"}
        if bad:
            raise ConfigError(f"{name}.{sorted(bad)[0]}", reps, "min, max, target, level, metric, on")
        try:
            return Reps(**reps)
        except ConfigError as exc:      # Reps names its field repetitions.X: say which table
            raise ConfigError(exc.field.replace("repetitions", name, 1), exc.given,
                              exc.accepted) from None
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise ConfigError(name, reps, "an integer >= 1 or a table {min, max, target, ...}")
    return reps


def parse_spec(data: dict) -> Spec:
    unknown = set(data) - _TOP
    if unknown:
        raise ConfigError(sorted(unknown)[0], data[sorted(unknown)[0]], ", ".join(sorted(_TOP)))
    if "backend" not in data:
        raise ConfigError("backend", None, ", ".join(names()))
    get_backend(data["backend"])  # unknown names raise naming the field
    reps = _reps("repetitions", data.get("repetitions", 3))
    ex = data.get("execution", {})
    bad = set(ex) - {"scheduler", "workers", "order", "keep_going"}
    if bad:
        raise ConfigError(f"execution.{sorted(bad)[0]}", ex, "scheduler, workers, order, keep_going")
    if ex.get("order", "random") not in ORDERS:
        raise ConfigError("execution.order", ex["order"], " | ".join(ORDERS))
    if not isinstance(ex.get("keep_going", False), bool):
        raise ConfigError("execution.keep_going", ex["keep_going"],
                          "true or false (a TOML boolean, without quotes)")
    seed, warmup = _int(data, "seed", 0, 0), _int(data, "warmup", 0, 0)
    factors = data.get("factors")
    if not isinstance(factors, dict) or not factors:
        raise ConfigError("factors", factors, "a [factors] table with at least one factor "
                                              "= list or string (e.g. threads = [64, 256])")
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise ConfigError("options", options, "a table of backend option = value")
    for key in BOOL_OPTIONS:
        if key in options and not isinstance(options[key], bool):
            raise ConfigError(f"options.{key}", options[key], "true or false (a TOML boolean, "
                                                              "without quotes)")
    return Spec(backend=data["backend"], factors=dict(factors), options=dict(options),
                reps=reps, seed=seed, warmup=warmup,
                out=data.get("out"), scheduler=ex.get("scheduler"), workers=_int(ex, "workers", 1, 2),
                order=ex.get("order", "random"), keep_going=ex.get("keep_going", False),
                sittings=parse_sittings(data["sittings"], factors, _reps) if "sittings" in data else [])


OVERRIDES = ("resume", "quiet", "command", "force", "wait", "dataset", "keep_going")


def run_spec(spec: Spec | dict | str | Path, out=None, **overrides):
    """Run a sweep spec; `out` overrides the spec's own, keep_going (when given and not
    None) the spec's [execution] keep_going. overrides: the sweep settings of OVERRIDES
    (resume, quiet, command, force, wait, dataset: see runner.run)."""
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise TypeError(f"run_spec() got an unexpected keyword argument {unknown[0]!r}")
    if overrides.get("keep_going") is None:
        overrides.pop("keep_going", None)
    if isinstance(spec, (str, Path)):
        spec = load_spec(spec)
    elif isinstance(spec, dict):
        spec = parse_spec(spec)
    out = out or spec.out
    if out is None:
        raise ConfigError("out", None, "an output path (in the spec or --out)")
    if spec.sittings:
        return run_sittings(spec, out, _run_one, **overrides)
    return _run_one(spec, out, **overrides)


def _run_one(spec: Spec, out, **overrides):
    factors = dict(spec.factors)
    freq = factors.pop("freq", factors.pop("freq_ghz", None))
    if isinstance(freq, list):
        freq = ",".join(str(f) for f in freq)
    settings = {"reps": spec.reps, "seed": spec.seed, "warmup": spec.warmup,
                "scheduler": spec.scheduler, "workers": spec.workers, "order": spec.order,
                "keep_going": spec.keep_going, **overrides}
    return run(spec.backend, out=out, freq=freq, **settings, **factors, **spec.options)
