"""The `abtlab` command: parse, call the package, turn AbtError into a clear message."""
from __future__ import annotations

import argparse
import sys

from .about import __version__
from .errors import AbtError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from .commands import register_all
    parser = argparse.ArgumentParser(
        prog="abtlab", description="Measure, model and fix the ABT slowdown of parallel I/O.")
    parser.add_argument("--version", action="version", version=f"abtlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_all(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .system import cleanup
    try:
        # SIGTERM/SIGINT unwind every `with` that changed the machine (mounts, loops, ...)
        with cleanup.installed():
            return int(args.func(args) or 0)
    except AbtError as exc:
        print(f"abtlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        sys.stderr.close()
        return 0
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)
        print(f"abtlab {args.command}: interrupted; machine changes undone", file=sys.stderr)
        return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
