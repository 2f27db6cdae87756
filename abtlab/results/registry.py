"""The registry of stored results, `data/results/index.toml`: one table per result with
its file, the command that regenerates it (with `{out}` where the output path goes), a
smaller quick version of it, the quantity it is about, and a sentence of what it shows."""
from __future__ import annotations

import hashlib
import json
import os
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigError

__all__ = ["Result", "root", "read", "write", "get", "fingerprint", "READ_LOG"]

INDEX = "index.toml"
FIELDS = ("file", "command", "quick", "var", "says")
# a file to which each result whose path is looked up appends its name: set by a gallery
# execution (abtlab.results.gallery), so the executed copy knows which results it read
READ_LOG = "ABTLAB_RESULTS_READ"


@dataclass(frozen=True)
class Result:
    name: str
    file: str            # relative to the registry's folder
    command: str         # regenerates the full run: `{out}` is its output path
    says: str            # one sentence: what it shows
    var: str = "throughput"
    quick: str = ""      # a smaller version for `check --quick` ('' when there is none)

    def path(self, folder) -> Path:
        log = os.environ.get(READ_LOG)
        if log:
            with open(log, "a") as f:
                f.write(self.name + "\n")
        return Path(folder) / self.file


def root() -> Path:
    """The registry's folder: $ABTLAB_RESULTS, else data/results/ of this checkout."""
    env = os.environ.get("ABTLAB_RESULTS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data" / "results"


def read(folder=None) -> dict[str, Result]:
    """name -> Result, in the registry's order (empty when there is no registry yet)."""
    index = Path(folder or root()) / INDEX
    if not index.is_file():
        return {}
    try:
        tables = tomllib.loads(index.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(index), "malformed TOML", f"valid TOML ({exc})") from None
    return {name: Result(name=name, **{k: v for k, v in t.items() if k in FIELDS})
            for name, t in tables.items()}


def get(name: str, folder=None) -> Result:
    results = read(folder)
    if name not in results:
        raise ConfigError("NAME", name, ", ".join(results) or "none registered yet "
                          "(abtlab results add)")
    return results[name]


def fingerprint(name: str, folder=None) -> str | None:
    """The sha256 (16 hex digits) of a stored result's file; None when the name is not
    registered or its file is missing."""
    folder = Path(folder or root())
    r = read(folder).get(name)
    if r is None or not (folder / r.file).is_file():
        return None
    return hashlib.sha256((folder / r.file).read_bytes()).hexdigest()[:16]


def write(results: dict[str, Result], folder=None) -> Path:
    """Write the registry (TOML; strings as JSON strings, which TOML reads alike)."""
    index = Path(folder or root()) / INDEX
    lines = ["# Stored results: every number a page quotes comes from one of these.",
             "# abtlab results list | show NAME | check NAME [--quick] | add | render", ""]
    for r in results.values():
        lines.append(f"[{json.dumps(r.name)}]")
        for key, value in asdict(r).items():
            if key != "name" and value != "":
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    index.parent.mkdir(parents=True, exist_ok=True)
    tmp = index.with_suffix(".tmp")
    tmp.write_text("\n".join(lines))
    os.replace(tmp, index)
    return index
