"""`abtlab` subcommands, one module each.

A module here defines `register(subparsers)`, which adds its parser and sets
`func=<callable(args) -> int>`. The CLI only parses and calls the package API.

`abtlab --help` (and `abtlab` with no command) imports every module here, and a command
imports its own before parsing, so a module imports at its top only what is light (the
standard library, errors); the package API it calls (numpy and up, or extras' metadata
scan) is imported inside the function that calls it: `abtlab --help` stays ~10 ms.
"""
import importlib
import pkgutil

__all__ = ["register_all"]


def register_all(subparsers):
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"{__name__}.{info.name}").register(subparsers)
