"""CSV files a person can edit: '#' comment lines, '# key: value' metadata, real line numbers."""
from __future__ import annotations

import csv
from pathlib import Path

from ..errors import ConfigError


def read(path):
    """(metadata dict, [(line number, row dict)]) of a commented CSV file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError("path", str(path), f"a readable CSV file ({exc.strerror})") from None
    meta, body = {}, []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep and key.strip() and " " not in key.strip():
                meta[key.strip()] = value.strip()
        elif line.strip():
            body.append((lineno, line))
    if not body:
        raise ConfigError(str(path), "no header", "a CSV header line")
    header = next(csv.reader([body[0][1]]))
    rows = []
    for lineno, line in body[1:]:
        values = next(csv.reader([line]))
        if len(values) != len(header):
            raise ConfigError(f"{path}:{lineno}", line,
                              f"{len(header)} comma-separated fields: {','.join(header)}")
        rows.append((lineno, dict(zip((h.strip() for h in header), (v.strip() for v in values)))))
    return meta, rows, [h.strip() for h in header]


def need_columns(path, header, columns):
    missing = [c for c in columns if c not in header]
    if missing:
        raise ConfigError(f"{path}:header", ",".join(header), "columns " + ",".join(columns))
