"""The target-frequency table of Ge et al. (CCGrid 2012, Table II): build, look up, save, load.

An entry matches an access's operation, locality, collective and blocking attributes
exactly and its size by an inclusive range [size_min, size_max]. Lookup first keeps the
entries matching all attributes but size, then the one whose range holds the size; no
match gives the highest available frequency. Files are CSV with '#' comments and
'# key: value' metadata (frequencies_ghz is required: it defines "the highest").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from . import _csv
from .patterns import IOPattern, format_size, parse_size, parse_yesno
from .profile import DEFAULT_THRESHOLD_S, target_frequency

__all__ = ["TableEntry", "FrequencyTable", "build", "load", "save", "lookup", "COLUMNS"]

COLUMNS = ("op_type", "locality", "collective", "blocking", "size_min", "size_max",
           "target_freq_ghz")


@dataclass(frozen=True)
class TableEntry:
    operation: str
    locality: str
    collective: bool
    blocking: bool
    size_min: int
    size_max: int
    freq_ghz: float
    note: str = ""

    def key(self) -> tuple:
        return (self.operation, self.locality, self.collective, self.blocking)

    def holds(self, size: int) -> bool:
        return self.size_min <= size <= self.size_max


@dataclass
class FrequencyTable:
    entries: list
    frequencies_ghz: tuple
    threshold_s: float = DEFAULT_THRESHOLD_S
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.frequencies_ghz = tuple(sorted(float(f) for f in self.frequencies_ghz))
        if not self.frequencies_ghz:
            raise ConfigError("frequencies_ghz", self.frequencies_ghz, "at least one frequency")
        for i, e in enumerate(self.entries):
            _check_entry(e, self.frequencies_ghz, f"entries[{i}]")
        _check_overlaps(self.entries, "entries")

    @property
    def highest(self) -> float:
        return self.frequencies_ghz[-1]

    def lookup(self, pattern: IOPattern) -> tuple:
        """(target GHz, matching entry or None)."""
        for e in self.entries:
            if e.key() == pattern.key() and e.holds(pattern.size):
                return e.freq_ghz, e
        return self.highest, None


def lookup(table: FrequencyTable, pattern: IOPattern) -> float:
    return table.lookup(pattern)[0]


def _check_entry(e, freqs, where):
    if e.size_min > e.size_max:
        raise ConfigError(f"{where}:size_max", e.size_max, f">= size_min ({e.size_min})")
    if not any(abs(e.freq_ghz - f) < 1e-9 for f in freqs):
        raise ConfigError(f"{where}:target_freq_ghz", e.freq_ghz,
                          "one of the table's frequencies_ghz " + ",".join(f"{f:g}" for f in freqs))


def _check_overlaps(entries, where):
    by_key: dict = {}
    for i, e in enumerate(entries):
        for j, other in by_key.get(e.key(), []):
            if e.size_min <= other.size_max and other.size_min <= e.size_max:
                raise ConfigError(f"{where}[{i}]:size_min", e.size_min,
                                  f"a size range not overlapping entry {j} "
                                  f"({other.size_min}..{other.size_max}) with the same attributes")
        by_key.setdefault(e.key(), []).append((i, e))


def build(profiles, frequencies_ghz=None, threshold_s=DEFAULT_THRESHOLD_S, meta=None):
    """A table from profiles whose `pattern` is set (one size each).

    Profiled sizes of one attribute key split the size axis: the entry of size s_i covers
    [s_i, s_(i+1) - 1] and the largest covers only itself, so sizes below the smallest or
    above the largest profiled one are not in the table and get the highest frequency.
    Neighbouring ranges with the same target are merged."""
    profiles = [p for p in (profiles.values() if isinstance(profiles, dict) else profiles)]
    for p in profiles:
        if p.pattern is None:
            raise ConfigError("profile.pattern", p.label, "an IOPattern (attributes of the access)")
    freqs = frequencies_ghz or sorted({pt.freq_ghz for p in profiles for pt in p.points})
    groups: dict = {}
    for p in profiles:
        groups.setdefault(p.pattern.key(), []).append(p)
    entries = []
    for key, group in groups.items():
        group.sort(key=lambda p: p.pattern.size)
        for i, p in enumerate(group):
            f, kind = target_frequency(p, threshold_s)
            hi = group[i + 1].pattern.size - 1 if i + 1 < len(group) else p.pattern.size
            e = TableEntry(*key, p.pattern.size, hi, f, f"type {kind}, {p.time_mode} time, "
                                                        f"{p.power_mode} power")
            if entries and entries[-1].key() == key and entries[-1].freq_ghz == f \
                    and entries[-1].size_max + 1 == e.size_min:
                prev = entries.pop()
                note = prev.note if prev.note == e.note else f"{prev.note}; {e.note}"
                e = TableEntry(*key, prev.size_min, hi, f, note)
            entries.append(e)
    return FrequencyTable(entries, freqs, threshold_s, dict(meta or {}))


def _row_entry(row, lineno, path, has_note):
    def get(name, fn):
        try:
            return fn(row[name])
        except ConfigError as exc:
            raise ConfigError(f"{path}:{lineno}:{name}", row[name], exc.accepted) from None
    pattern = IOPattern.make(get("op_type", str.lower), 0, get("locality", str),
                             get("collective", lambda v: parse_yesno(v, "collective")),
                             get("blocking", lambda v: parse_yesno(v, "blocking")))
    try:
        freq = float(row["target_freq_ghz"])
    except ValueError:
        raise ConfigError(f"{path}:{lineno}:target_freq_ghz", row["target_freq_ghz"],
                          "a frequency in GHz") from None
    return TableEntry(*pattern.key(), get("size_min", parse_size), get("size_max", parse_size),
                      freq, row.get("note", "") if has_note else "")


def _attr_errors(row, lineno, path):
    """Attribute errors carry the line: re-raise IOPattern.make's with the file position."""
    for name, fn in (("op_type", lambda v: IOPattern.make(v, 0)),
                     ("locality", lambda v: IOPattern.make("read", 0, v))):
        try:
            fn(row[name])
        except ConfigError as exc:
            raise ConfigError(f"{path}:{lineno}:{name}", row[name], exc.accepted) from None


def load(path, frequencies_ghz=None) -> FrequencyTable:
    """Read and validate a table file; errors name the file, line and column."""
    meta, rows, header = _csv.read(path)
    _csv.need_columns(path, header, COLUMNS)
    if frequencies_ghz is None:
        if "frequencies_ghz" not in meta:
            raise ConfigError(f"{path}:frequencies_ghz", None,
                              "a '# frequencies_ghz: 0.8,1.3,...' line or frequencies_ghz=")
        try:
            frequencies_ghz = [float(f) for f in meta["frequencies_ghz"].split(",")]
        except ValueError:
            raise ConfigError(f"{path}:frequencies_ghz", meta["frequencies_ghz"],
                              "comma-separated GHz values") from None
    entries = []
    for lineno, row in rows:
        _attr_errors(row, lineno, path)
        e = _row_entry(row, lineno, path, "note" in header)
        _check_entry(e, sorted(frequencies_ghz), f"{path}:{lineno}")
        entries.append(e)
    try:
        _check_overlaps(entries, "entries")
    except ConfigError as exc:
        idx = int(exc.field.split("[")[1].split("]")[0])
        raise ConfigError(f"{path}:{rows[idx][0]}:size_min", exc.given, exc.accepted) from None
    threshold = float(meta.get("threshold_ms", DEFAULT_THRESHOLD_S * 1e3)) / 1e3
    return FrequencyTable(entries, frequencies_ghz, threshold, meta)


def save(table: FrequencyTable, path, header_lines=()):
    """Write the table as an editable CSV (sizes with units, '# key: value' metadata)."""
    yn = {True: "yes", False: "no"}
    out = [f"# {line}" for line in header_lines]
    out.append("# frequencies_ghz: " + ",".join(f"{f:g}" for f in table.frequencies_ghz))
    out.append(f"# threshold_ms: {table.threshold_s * 1e3:g}")
    out += [f"# {k}: {v}" for k, v in table.meta.items()
            if k not in ("frequencies_ghz", "threshold_ms")]
    out.append(",".join(COLUMNS) + ",note")
    for e in table.entries:
        out.append(",".join([e.operation, e.locality, yn[e.collective], yn[e.blocking],
                             format_size(e.size_min), format_size(e.size_max),
                             f"{e.freq_ghz:g}", _quote(e.note)]))
    Path(path).write_text("\n".join(out) + "\n")
    return Path(path)


def _quote(text):
    return '"' + text.replace('"', '""') + '"' if ("," in text or '"' in text) else text
