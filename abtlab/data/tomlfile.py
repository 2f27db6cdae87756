"""Read a TOML file the user named; a missing or malformed file is a ConfigError on `field`."""
from __future__ import annotations

import tomllib
from pathlib import Path

from ..errors import ConfigError

__all__ = ["read_toml"]


def read_toml(path, field: str, accepted: str) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(field, str(path), accepted)
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(field, str(path), f"valid TOML ({exc})") from None
