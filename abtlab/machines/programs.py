"""How abtlab's C programs answer (backends/include/abt_opts.h): results on stdout as
`key: value` lines, and one exit-code convention: 0 done, 1 the run failed, 2 a bad
argument (one stderr line "PROG: --opt: given 'X'; accepted: ..."; a preload library's
bad variable: "LIB: VAR: given 'X'; accepted: ..."), 3 this filesystem cannot run it.
check_exit is the one place that turns an exit code into abtlab's errors."""
from __future__ import annotations

import os
import re
from pathlib import Path

from .. import about
from ..errors import ConfigError, RunError, UnavailableError
from .availability import Availability

__all__ = ["path", "built", "availability", "program", "check_exit", "parse_result",
           "EXIT_BAD_ARGUMENT", "EXIT_UNAVAILABLE"]

EXIT_BAD_ARGUMENT, EXIT_UNAVAILABLE = 2, 3
_BAD_ARG = re.compile(r"^[\w.-]+: (--[\w-]+|[A-Z][A-Z0-9_]+|option|argument): (.*)$", re.S)


def path(name: str) -> Path:
    """Where a C program is built: backends/<name without abt->/<name>, one folder each."""
    return about.NATIVE / name.removeprefix("abt-") / name


def built(name: str) -> bool:
    return os.access(path(name), os.X_OK)


def availability(name: str):
    """A backend's Availability as far as its program goes: built, or why not."""
    if not built(name):
        return Availability(False, f"{path(name)} not built (make -C {about.NATIVE})")
    return Availability(True)


def program(name: str) -> Path:
    """The program's path; UnavailableError when it is not built."""
    if not built(name):
        raise UnavailableError(f"{path(name)} is not built: run `make -C {about.NATIVE}`")
    return path(name)


def check_exit(argv, returncode: int, stderr: str, fields: dict | None = None,
               point: dict | None = None) -> None:
    """Raise for a non-zero exit of argv: 2 -> ConfigError naming the factor that
    fields maps the option to (given: its value in point, else the arguments); 3 ->
    UnavailableError; any other -> RunError with stderr."""
    if returncode == 0:
        return
    err = (stderr or "").strip()
    if returncode == EXIT_BAD_ARGUMENT:
        m = _BAD_ARG.match(err)
        opt, msg = (m.group(1), m.group(2)) if m else ("option", err)
        field = (fields or {}).get(opt, opt.lstrip("-"))
        given = (point or {}).get(field, " ".join(str(a) for a in argv[1:]))
        raise ConfigError(field, given, re.sub(r"^given [^;]*; (accepted:? ?)?", "", msg))
    if returncode == EXIT_UNAVAILABLE:
        raise UnavailableError(err)
    raise RunError(f"{Path(str(argv[0])).name} exited {returncode}: {err}")


def parse_result(stdout: str) -> dict:
    """A program's `key: value` result lines as a dict of strings."""
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)
