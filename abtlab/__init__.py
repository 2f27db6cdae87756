"""abtlab: measure, model, predict and fix the ABT slowdown (faster CPU, slower parallel I/O)."""
from __future__ import annotations

import sys as _sys


def _stopped_at_start(signum, frame):  # pragma: no cover (tests/test_start.py, in a child)
    """The `abtlab` command's SIGINT/SIGTERM until its own handlers are in place (cli.main):
    nothing has run yet, so one line and 128 + the signal, not a traceback of an import."""
    import os
    os.write(2, b"abtlab: interrupted by " + (b"SIGINT" if signum == 2 else b"SIGTERM") + b"\n")
    os._exit(128 + signum)


def _launched() -> list[int]:
    """The signals the `abtlab` command's launcher (backends/start/abt-start.c) blocked before
    Python started, so that one during the interpreter's own start-up waits for the handler
    below; none when this process was not started by it. The variable goes, so that
    processes abtlab starts begin with the mask the command was given."""
    import os
    pid, _, signals = os.environ.pop("ABTLAB_START_BLOCKED", "").partition(":")
    return [int(s) for s in signals.split(",") if s.isdigit()] if pid == str(os.getpid()) else []


def _start() -> None:
    """The first lines of the `abtlab` command (its launcher runs `python -P -m abtlab`), of
    `python -m abtlab` (argv[0] is "-m" while its package is imported) and of a console
    script named abtlab: a signal from here on gets one line. `import abtlab` in a
    notebook or a program keeps their handlers and their mask. _signal: the builtin under
    `signal`, which would import enum first."""
    blocked = _launched()
    argv0 = _sys.argv[0] if getattr(_sys, "argv", None) else ""
    if not blocked and argv0 != "-m" and argv0.replace("\\", "/").rsplit("/", 1)[-1] != "abtlab":
        return
    import _signal
    # a signal the caller ignores (nohup, a background job's SIGINT) stays ignored
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _stopped_at_start)
    if _signal.getsignal(_signal.SIGTERM) == _signal.SIG_DFL:
        _signal.signal(_signal.SIGTERM, _stopped_at_start)
    if blocked:     # one that came meanwhile is delivered now, to the handler above
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, blocked)


_start()

from .about import __version__  # noqa: E402

__all__ = ["__version__", "load", "save", "run", "sweep_spec", "backends", "errors", "policies",
           "data", "trace", "model", "sim", "stats", "bps", "studies", "sera", "bayes", "present",
           "sweep", "factors", "system"]

# subpackages load on first use, so `import abtlab` stays fast: the backends' registry
# and the trace reader bring numpy (~0.2 s), which the command line loads only after
# its signal handlers are in place
_LAZY = {"model", "sim", "stats", "bps", "studies", "sera", "bayes", "present", "sweep", "system",
         "factors", "backends", "data", "policies", "trace"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'abtlab' has no attribute {name!r}")

from . import errors  # noqa: E402


def load(path):
    """Read a run dataset written by `abtlab run`, `abtlab sweep` or `save`.

    Parameters
    ----------
    path : str or pathlib.Path
        A NetCDF file (`.nc`) or a Zarr directory (`.zarr`).

    Returns
    -------
    xarray.Dataset
        Loaded into memory, with the `ds.abt` accessor; dims are the swept factors and
        `rep`, attrs say how it was measured (`freq_mode`, `machine`, `kernel`, ...).
        A dataset of an older schema version is read under today's names
        (`abtlab.data.migrate`): a version-1 IOzone-like run's fsync-timed `throughput`
        is `throughput_fsync`, and `throughput` (the write op) is recomputed from its
        records (the `remeasured` attr says so), absent when it has none.

    Raises
    ------
    abtlab.errors.ConfigError
        When the path does not exist or is not a run dataset, or was written by a newer
        abtlab (the message says to upgrade).

    Examples
    --------
    >>> import abtlab
    >>> ds = abtlab.load("data/samples/iozone_64t_loop_ext4_emulated.nc")
    >>> ds.attrs["freq_mode"]
    'emulated'
    """
    from .present import accessor  # noqa: F401  (registers ds.abt)
    from .data.store import load as _load
    from .model.remeasure import upgrade
    return upgrade(_load(path))


def save(ds, path):
    """Write a run dataset atomically (a temporary file, fsynced, then renamed).

    Parameters
    ----------
    ds : xarray.Dataset
        A run dataset (from `run`, `load` or `sweep_spec`).
    path : str or pathlib.Path
        NetCDF (h5netcdf), or Zarr when the path ends in `.zarr`; its directory must
        exist.

    Returns
    -------
    pathlib.Path
        The path written.

    Examples
    --------
    >>> abtlab.save(ds.sel(policy="ext4"), "ext4.nc")  # doctest: +SKIP
    """
    from .data.store import save as _save
    return _save(ds, path)


def sweep_spec(spec, out=None, resume=False, quiet=False):
    """Run a sweep spec: its factors, repetition rule and execution, as `abtlab sweep`.

    Parameters
    ----------
    spec : str, pathlib.Path or dict
        A TOML file (see `examples/*.toml`; the format is in `abtlab.sweep.spec`) or the
        same content as a dict: `backend`, `seed`, `[factors]`, `[repetitions]`,
        `[execution]`.
    out : str or pathlib.Path, optional
        Where to write the dataset; overrides the spec's own `out` (one of them is
        required).
    resume : bool, default False
        Continue a killed sweep from its finished parts (the spec must match).
    quiet : bool, default False
        No progress output.

    Returns
    -------
    xarray.Dataset
        The sweep's dataset, also written to `out`.

    Examples
    --------
    >>> ds = abtlab.sweep_spec("examples/paper_cells.toml", out="cells.nc")  # doctest: +SKIP
    >>> ds.abt.slowdown()                                                    # doctest: +SKIP
    """
    from .present import accessor  # noqa: F401  (registers ds.abt)
    from .sweep.spec import run_spec
    return run_spec(spec, out=out, resume=resume, quiet=quiet)


def run(backend, out=None, **factors):
    """Run a backend over every combination of factor levels; return the dataset.

    Every combination is run `reps` times in a random, interleaved order (seeded), each
    finished repetition written atomically beside `out` before the next starts, so a
    killed run resumes with `resume=True`. The same as `abtlab run BACKEND ...`.

    Parameters
    ----------
    backend : str
        A registered backend: "iozone", "metarates", "sim", "fio", "dio", "locks",
        "iozone-tool", "mdtest", ... (`abtlab doctor` lists what runs here).
    out : str or pathlib.Path, optional
        Where to write the dataset (NetCDF, or Zarr for `.zarr`); not written when
        omitted.
    **factors
        Factor levels as lists or comma-separated strings, by the backend's factor
        names (for IOzone: `threads`, `file_size`, `record_size`, `policy`, `device`,
        `machine`), and these keywords:

        - `freq` (str): CPU frequencies, e.g. "emulated:1.6,3.3", "real:...", "native"
          (default), "virtual:1,0.5" on the guest; plain GHz for the simulator.
        - `reps` (int or `abtlab.sweep.loop.Reps`, default 3): repetitions per point,
          or an adaptive rule.
        - `seed` (int, default 0), `order` ("random" or "blocked"), `warmup` (int).
        - `resume`, `force` (bool): continue a killed run at `out`; replace what is
          there.
        - `scheduler` (None, "local" or a dask Client/address), `workers` (int).
        - `wait` (bool, default True): wait for another real run holding the machine.
        - `quiet` (bool): no progress output.
        - other keywords are the backend's options (`fsync`, `direct`, `start`, ...).

    Returns
    -------
    xarray.Dataset
        Dims: the factors and `rep`; variables with `units` (for IOzone `throughput`,
        `throughput_fsync`, `commits`, `threads_clear_of_commits`, ...), the op and commit
        records, and attrs saying how it was measured (`freq_mode`, `machine`,
        `kernel`, `command`, ...). It has the `ds.abt` accessor.

    Raises
    ------
    abtlab.errors.ConfigError
        A bad factor, option or value, named with the accepted range.

    Examples
    --------
    >>> import abtlab
    >>> ds = abtlab.run("sim", threads="64,256", freq="1.6,3.3", reps=2)  # doctest: +SKIP
    >>> ds.abt.slowdown()                                                 # doctest: +SKIP
    >>> abtlab.run("iozone", threads="64", policy="ext4,nojc",
    ...            freq="emulated:1.6,3.3", reps=5, out="r.nc")           # doctest: +SKIP
    """
    from .present import accessor  # noqa: F401  (registers ds.abt)
    from .sweep.runner import run as _run
    return _run(backend, out=out, **factors)
