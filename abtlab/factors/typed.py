"""Factor levels as typed values, parsed once where they enter (the CLI, a spec file,
abtlab.run, or a direct sweep.loop.run): Policy, Profile, Machine, ints and byte sizes.
Every parser takes a string or a list and is the identity on values already typed, so
the modules a point reaches afterwards read its values and never parse a label again."""
from __future__ import annotations

from .. import policies
from .levels import MAX_THREADS, parse_ints, parse_sizes, parse_words
from ..machines.spec import parse_machines
from ..system.device import parse_profile

__all__ = ["PARSERS", "typed_levels"]


def _devices(v):
    return [parse_profile(w) for w in parse_words(v, "device")]


# factor -> parser(value) -> list of typed levels
PARSERS = {
    "policy": policies.parse_list,
    "threads": lambda v: parse_ints(v, "threads", hi=MAX_THREADS),
    "files": lambda v: parse_ints(v, "files"),
    "file_size": lambda v: parse_sizes(v, "file_size"),
    "record_size": lambda v: parse_sizes(v, "record_size"),
    "device": _devices,
    "machine": parse_machines,
}


def typed_levels(levels: dict, overrides: dict | None = None) -> dict:
    """factor -> list of levels, each typed by its factor's parser (a backend's own
    parsers in overrides win); factors without a parser are left as given."""
    parsers = {**PARSERS, **(overrides or {})}
    return {k: (parsers[k](list(v)) if k in parsers else list(v)) for k, v in levels.items()}
