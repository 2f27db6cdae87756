"""I/O access patterns with the five attributes of Ge et al. (CCGrid 2012, Table I).

operation  read | write | seek | open | close | sync (sync: fsync/fdatasync, added for POSIX)
size       bytes (sizes as text accept B, KB, MB, GB, TB; binary multiples, 1KB = 1024 B)
locality   contiguous | noncontiguous  (the paper's "strided"; both spellings accepted)
collective yes | no
blocking   yes | no
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = ["IOPattern", "OPERATIONS", "LOCALITIES", "parse_size", "format_size", "parse_yesno",
           "posix_pattern"]

OPERATIONS = ("read", "write", "seek", "open", "close", "sync")
LOCALITIES = ("contiguous", "noncontiguous")
_LOCALITY_ALIASES = {"contiguous": "contiguous", "contig": "contiguous",
                     "noncontiguous": "noncontiguous", "noncontig": "noncontiguous",
                     "strided": "noncontiguous"}
_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "K": 1 << 10, "MB": 1 << 20, "M": 1 << 20,
          "GB": 1 << 30, "G": 1 << 30, "TB": 1 << 40, "T": 1 << 40}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?B?|[KMGT])\s*$", re.IGNORECASE)


def parse_size(text, field="size") -> int:
    """'2MB' -> 2097152; an int passes through. ConfigError names `field` otherwise."""
    if isinstance(text, bool):
        raise ConfigError(field, text, "a size such as 4096, 64KB, 2MB, 128GB")
    if isinstance(text, int):
        if text < 0:
            raise ConfigError(field, text, "a size >= 0 bytes")
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise ConfigError(field, text, "a size such as 4096, 64KB, 2MB, 128GB")
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value != int(value):
        raise ConfigError(field, text, "a whole number of bytes")
    return int(value)


def format_size(n: int) -> str:
    """The largest exact binary unit: 2097152 -> '2MB', 1536 -> '1536B'."""
    for unit in ("TB", "GB", "MB", "KB"):
        if n and n % _UNITS[unit] == 0:
            return f"{n // _UNITS[unit]}{unit}"
    return f"{n}B"


def parse_yesno(value, field) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("yes", "y", "true", "1"):
        return True
    if text in ("no", "n", "false", "0"):
        return False
    raise ConfigError(field, value, "yes | no")


def _operation(value, field="operation") -> str:
    text = str(value).strip().lower()
    if text not in OPERATIONS:
        raise ConfigError(field, value, " | ".join(OPERATIONS))
    return text


def _locality(value, field="locality") -> str:
    text = str(value).strip().lower()
    if text not in _LOCALITY_ALIASES:
        raise ConfigError(field, value, "contiguous | noncontiguous (or contig, noncontig, strided)")
    return _LOCALITY_ALIASES[text]


@dataclass(frozen=True)
class IOPattern:
    """One I/O access as the SERA-IO engine sees it."""
    operation: str
    size: int
    locality: str = "contiguous"
    collective: bool = False
    blocking: bool = True

    @classmethod
    def make(cls, operation, size, locality="contiguous", collective=False, blocking=True):
        """A pattern from text or values, checked; ConfigError names the bad attribute."""
        return cls(_operation(operation), parse_size(size), _locality(locality),
                   parse_yesno(collective, "collective"), parse_yesno(blocking, "blocking"))

    def key(self) -> tuple:
        """Every attribute but size: what a table entry must match exactly."""
        return (self.operation, self.locality, self.collective, self.blocking)

    def describe(self) -> str:
        c = "collective" if self.collective else "individual"
        b = "blocking" if self.blocking else "nonblocking"
        return f"{c} {self.locality} {b} {self.operation}, {format_size(self.size)}"


_POSIX = {"read": "read", "pread": "read", "readv": "read", "write": "write", "pwrite": "write",
          "writev": "write", "fsync": "sync", "fdatasync": "sync", "open": "open",
          "close": "close", "lseek": "seek"}


def posix_pattern(call: str, nbytes: int = 0) -> IOPattern:
    """The pattern of one POSIX call: individual, blocking, contiguous in the file."""
    if call not in _POSIX:
        raise ConfigError("call", call, " | ".join(sorted(_POSIX)))
    return IOPattern(_POSIX[call], parse_size(nbytes, "nbytes"))
