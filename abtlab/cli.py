"""The `abtlab` command: parse, call the package, turn AbtError into a clear message."""
from __future__ import annotations

import argparse
import sys

from .about import __version__
from .errors import AbtError

__all__ = ["main", "build_parser"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `abtlab` parser; with `command`, a subcommand's name, that subcommand's parser
    alone (all its arguments need: importing and building every other subcommand's costs
    a new process 0.04-0.07 CPU s), else every subcommand's."""
    parser = _parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command is not None and _register_one(sub, command):
        return parser
    if command is not None:          # a module of that name, but not that command: all
        parser = _parser()
        sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from .commands import register_all
    register_all(sub)
    return parser


def _register_one(sub, command: str) -> bool:
    """Register the subcommand `command` from its module abtlab.commands.<command>;
    False when there is none."""
    import importlib
    import importlib.util
    if not command.isidentifier() or command.startswith("_") or \
            importlib.util.find_spec(f"{__package__}.commands.{command}") is None:
        return False
    importlib.import_module(f"{__package__}.commands.{command}").register(sub)
    return command in sub.choices


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="abtlab", description="Measure, model and fix the ABT slowdown of parallel I/O.",
        epilog="pip install abtlab is the core (run, sweep, stats, the simulator); fit's Bayesian "
               "models need "
               "'abtlab[bayes]', report, lab and demo 'abtlab[notebooks]', a dask scheduler "
               "'abtlab[dask]'; pip install 'abtlab[all]' installs every optional part, and "
               "abtlab doctor lists those installed.")
    parser.add_argument("--version", action="version", version=f"abtlab {__version__}")
    return parser


def main(argv=None) -> int:
    # only the undo stack (stdlib) before the handlers: a signal from here on gets one line
    from .system import cleanup
    ending, name = cleanup.exiting(), "abtlab"
    try:
        ending.start()
        _quiet_unraisable()
        _warnings_as_lines(lambda: name)
        words = sys.argv[1:] if argv is None else list(argv)
        if argv is None and words and not words[0].startswith("-"):
            _numpy_with_one_blas_thread()
        parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
        try:
            args = _parse(parser, argv)
        except SystemExit as exc:       # --help, --version, a usage error: argparse's code
            ending.quiet()
            return exc.code if isinstance(exc.code, int) else 2
        name = f"abtlab {args.command}" if args.command else name
        code = _call(parser, args, name, cleanup)
        ending.quiet()                  # the outcome is decided: a late signal changes nothing
        return code
    except KeyboardInterrupt as exc:
        return _interrupted(ending, name, getattr(exc, "signum", 2), cleanup)
    except Exception:
        if ending.signum is None:
            raise
        # a C extension being imported turned the Terminated into its own error (numpy:
        # "PyCapsule_Import could not import module datetime")
        return _interrupted(ending, name, ending.signum, cleanup)
    finally:
        ending.close(for_good=argv is None)     # sys.argv: this process's command line
        if argv is None:
            # the process ends next: the interpreter's last collections would walk the
            # ~180k objects xarray, pandas and numba left (0.6-1.3 s of wall on a 2-core
            # VM); frozen, they are left to the exit (atexit handlers still run)
            import gc
            gc.freeze()


def _parse(parser, argv):
    """parse_args, but an unknown option is reported by the subcommand it was typed to
    (`abtlab lab check --gust`: lab check's usage, not abtlab's)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        _innermost(parser, args).error("unrecognized arguments: " + " ".join(extra))
    return args


def _innermost(parser, args):
    """The deepest subcommand's parser that args chose."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, subs[0].dest, None) if subs else None
        if chosen not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[chosen]


# BLAS's thread-count variables (OpenBLAS, MKL, OpenMP): a user's setting is left alone
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


def _numpy_with_one_blas_thread() -> None:
    """Load numpy, in this process only, with one OpenBLAS thread. abtlab's work runs in
    parallel over repetitions and points (threads, processes, guests), where BLAS's own
    threads would only contend for the cores, and OpenBLAS starts a thread per core and
    their buffers as it loads: ~0.05 s of a 2-core machine's new process. The variable is
    read once, at load, and removed again, so processes this one starts (a notebook's
    kernel) get BLAS's own default."""
    import os
    if "numpy" in sys.modules or any(k in os.environ for k in _BLAS_THREADS):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    except ImportError:     # the command's own import then says what is missing
        pass
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def _interrupted(ending, name, signum, cleanup) -> int:
    import signal
    ending.quiet()
    signum = ending.signum or signum        # the first, if two came
    # "undone" only where something was: a simulated run changes nothing on the machine
    undone = "; machine changes undone" if cleanup.changed_machine() else ""
    print(f"{name}: interrupted by {signal.Signals(signum).name}{undone}", file=sys.stderr)
    return 128 + signum


def _warnings_as_lines(name) -> None:
    """abtlab's warnings as one line each (`abtlab stats: warning: ...`, no source line);
    the libraries' own (numpy's division by zero, statsmodels', h5py's) are not shown:
    where they mean something for the user, abtlab says what (abtlab.stats.notices)."""
    import os
    import warnings
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep

    def show(message, category, filename, lineno, file=None, line=None):
        if os.path.abspath(filename).startswith(here) or category.__name__ == "AbtWarning":
            print(f"{name()}: warning: {message}", file=sys.stderr if file is None else file)
    warnings.showwarning = show


def _quiet_unraisable() -> None:
    """A signal that lands in a library's finalizer (a weakref callback, a __del__)
    raises Terminated where Python can only print it ("Exception ignored in ..."):
    abtlab raises it again at its next step (abtlab.system.cleanup.swallowed), so it
    is not printed; every other unraisable error still is."""
    from .system.cleanup import swallowed
    shown = sys.unraisablehook

    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            swallowed()
        else:
            shown(unraisable)
    sys.unraisablehook = hook


def _call(parser, args, name, cleanup) -> int:
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        # SIGTERM/SIGINT unwind every `with` that changed the machine (mounts, loops, ...)
        with cleanup.installed():
            return int(args.func(args) or 0)
    except AbtError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
