"""`abtlab` subcommands, one module each.

A module here defines `register(subparsers)`, which adds its parser and sets
`func=<callable(args) -> int>`. The CLI only parses and calls the package API.
"""
import importlib
import pkgutil

__all__ = ["register_all"]


def register_all(subparsers):
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"{__name__}.{info.name}").register(subparsers)
