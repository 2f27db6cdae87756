"""The simulator's kernel compiled ahead of time, so a new process runs it without numba.

Loading numba's cached kernel costs a new process over a second (numba's CPU target
imports numba.np.arraymath, which imports scipy.linalg, on its first load): 1.50 CPU s,
against 0.68 for the 400 repetitions of `abtlab run sim`'s example with their traces and
measures (benchmarks.public_paths, load 4.6 on 2 CPUs; 0.26 CPU s with this module,
numpy's import most of it). numba.pycc writes the same kernel (kernel.run_batch and
everything it calls, inlining included) into a standalone extension module that imports in
milliseconds. Its wrapper is built to release the GIL, as the JIT's `nogil=True` does, so
core.run_raw's threads still run at once.

The module is keyed like numba's own cache: a hash of the kernel's sources (state, heap,
journal, kernel) and of this file (how it is built), of numba's, llvmlite's and numpy's
versions, of the interpreter's extension suffix and of this CPU (it is compiled for the
host CPU). It lives in abtlab.about.CACHE/sim-aot, built by `make setup` (main(), see
COMMAND) and otherwise in the background on first use, while numba's JIT runs meanwhile
(the results are the same to the bit: tests/sim/test_aot.py). A build that fails leaves a
note beside it: the next process says why (that one only), and every process keeps to the
JIT until the sources change or a build succeeds. ABTLAB_SIM_AOT=off keeps to the JIT;
NUMBA_DISABLE_JIT=1 to plain Python.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from functools import cache
from pathlib import Path

import numpy as np

from .. import about
from .state import HAVE_NUMBA

__all__ = ["run_batch", "key", "module_path", "load", "build", "status"]

HERE = Path(__file__).resolve().parent
SOURCES = ("state.py", "heap.py", "journal.py", "kernel.py")
FOLDER = "sim-aot"
KEEP = 4                    # modules kept in FOLDER (the newest)
# run_batch's arguments (core.run_raw): prog, pr, spawn, nz, cn, out_t, out_c, ncommit
SIGNATURE = ("void(i8[::1], f8[::1], f8[:, ::1], f8[:, :, :, ::1], f8[:, ::1], f8[:, :, ::1], "
             "f8[:, :, ::1], i8[::1])")
_DTYPES = (np.int64, np.float64, np.float64, np.float64, np.float64)   # the inputs
# the build's command line: python -c COMMAND build (-m would import this module twice,
# as abtlab.sim imports it)
COMMAND = "import sys; from abtlab.sim.aot import main; sys.exit(main())"
_loaded: dict = {}          # key -> run_batch of the compiled module, or None
_loading = threading.Lock()
_warned: set = set()


def _cpu_id() -> bytes:
    """What the host-CPU code depends on: the model and its feature flags."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            text = f.read(65536)
        return b"\n".join(ln for ln in text.split(b"\n")[:40]
                          if ln.startswith((b"model name", b"flags", b"vendor_id")))
    except OSError:
        return (platform.machine() + platform.processor()).encode()


def _version_file(package: str) -> bytes:
    """A package's version file, read without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return b"absent"
    path = Path(spec.origin).with_name("_version.py")
    return path.read_bytes() if path.is_file() else Path(spec.origin).read_bytes()


@cache
def key() -> str:
    """The hash that names the compiled module of the sources as this process first read
    them (as numba's JIT compiles them once per process)."""
    h = hashlib.sha256()
    for name in SOURCES + ("aot.py",):           # this file: how it is built
        h.update((HERE / name).read_bytes())
    for part in (_version_file("numba"), _version_file("llvmlite"), np.__version__.encode(),
                 importlib.machinery.EXTENSION_SUFFIXES[0].encode(), SIGNATURE.encode(),
                 _cpu_id()):
        h.update(b"\0" + part)
    return h.hexdigest()[:20]


def _name(k: str) -> str:
    return f"abtlab_sim_kernel_{k}"


def folder() -> Path:
    return about.CACHE / FOLDER


def module_path(k: str | None = None) -> Path:
    k = key() if k is None else k
    return folder() / (_name(k) + importlib.machinery.EXTENSION_SUFFIXES[0])


def _failure_note(k: str) -> Path:
    return folder() / f"{_name(k)}.failed"


def load(k: str | None = None, start_build: bool = True):
    """run_batch of the compiled module for the sources as they are, or None (then the
    caller uses numba's JIT). When it is absent, a build starts in the background
    (start_build) unless one runs or failed for this key (said once, on stderr)."""
    if os.environ.get("ABTLAB_SIM_AOT", "").lower() in ("off", "0", "no") or _jit_disabled():
        return None
    k = key() if k is None else k
    with _loading:                  # run_raw may be called from several threads at once
        if k not in _loaded:
            _loaded[k] = _load(k, start_build)
        return _loaded[k]


def _jit_disabled() -> bool:
    """NUMBA_DISABLE_JIT asks for the plain Python code: neither compiled kernel then."""
    return os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0")


def _load(k: str, start_build: bool):
    path = module_path(k)
    fn = None
    if path.is_file():
        try:
            spec = importlib.util.spec_from_file_location(_name(k), path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            fn = mod.run_batch
        except (ImportError, OSError, AttributeError) as e:   # a damaged file: rebuild it
            _say_once(k, f"the simulator's ahead-of-time kernel {path} does not load ({e}); "
                         f"using numba's JIT. Remove it to rebuild it.")
    elif _failure_note(k).is_file():
        told = _failure_note(k).with_suffix(".told")     # said by the first process only
        if not told.exists():
            _say_once(k, f"the simulator's ahead-of-time kernel could not be built "
                         f"({_failure_note(k).read_text().strip()}, noted in "
                         f"{_failure_note(k)}); using numba's JIT (a new process starts about "
                         f"a second slower). Retry: python -c {COMMAND!r} build")
            with contextlib.suppress(OSError):
                told.touch()
    elif start_build and HAVE_NUMBA:      # without numba: plain Python, as backend says
        _start_background_build()
    return fn


def run_batch(fn, prog, pr, spawn, nz, cn, out_t, out_c, ncommit) -> None:
    """Call the compiled fn with the exact types it was built for: inputs made contiguous
    (cn is a strided view with lognormal draws: a small copy), outputs must be."""
    prog, pr, spawn, nz, cn = (np.ascontiguousarray(a, dt) for a, dt in
                               zip((prog, pr, spawn, nz, cn), _DTYPES))
    fn(prog, pr, spawn, nz, cn, out_t, out_c, ncommit)


def _say_once(k: str, text: str) -> None:
    if k not in _warned:
        _warned.add(k)
        print(f"abtlab: {text}", file=sys.stderr)


def _start_background_build() -> None:
    """`python -c COMMAND build --if-absent` in its own session (it outlives this
    process if need be); output to a log beside the module."""
    try:
        folder().mkdir(parents=True, exist_ok=True)
        log = open(folder() / "build.log", "ab")
    except OSError:
        return                      # no writable cache: the JIT it is, silently as before
    with log:
        subprocess.Popen([sys.executable, "-c", COMMAND, "build", "--if-absent"],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, cwd=str(folder()))


class _Lock:
    """One build per key at a time across processes: a file made exclusively, holding its
    builder's pid; one left by a dead builder is taken over."""

    def __init__(self, path: Path):
        self.path, self.held = path, False

    def __enter__(self):
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if _alive(self.path):
                    return self
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            self.held = True
            return self
        return self

    def __exit__(self, *exc):
        if self.held:
            self.path.unlink(missing_ok=True)


def _alive(lock: Path) -> bool:
    try:
        os.kill(int(lock.read_text() or 0), 0)
        return True
    except (OSError, ValueError):
        return False


def build(if_absent: bool = False) -> Path:
    """Compile the kernel of the sources as they are now into the cache folder; return
    the module's path. Raises RuntimeError saying why when it cannot (no numba, no C
    compiler, cache not writable); the reason is also left beside it for load()."""
    k = key()
    dest = module_path(k)
    if if_absent and dest.is_file():
        return dest
    try:
        folder().mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RuntimeError(f"cannot write the cache folder {folder()}: {e}") from e
    with _Lock(folder() / f"{_name(k)}.lock") as lock:
        if not lock.held:
            return _wait_for(lock.path, dest)
        try:
            _compile(k, dest)
        except Exception as e:  # noqa: BLE001 - any failure falls back to the JIT, noted
            _failure_note(k).write_text(f"{type(e).__name__}: {' '.join(str(e).split())}\n")
            _failure_note(k).with_suffix(".told").unlink(missing_ok=True)
            raise RuntimeError(f"building {dest.name} failed: {type(e).__name__}: {e}") from e
    for stale in (_failure_note(k), _failure_note(k).with_suffix(".told")):
        stale.unlink(missing_ok=True)
    _prune(keep=KEEP)
    return dest


def _prune(keep: int) -> None:
    """Only the `keep` newest modules stay (each source edit makes one; a checkout and an
    installed package may share the folder, so not only the newest)."""
    built = sorted(folder().glob("abtlab_sim_kernel_*" + importlib.machinery.EXTENSION_SUFFIXES[0]),
                   key=lambda f: f.stat().st_mtime, reverse=True)
    for old in built[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _wait_for(lock: Path, dest: Path, timeout: float = 900.0) -> Path:
    """The module another process is building, once it is done."""
    end = time.monotonic() + timeout
    while lock.exists() and _alive(lock) and time.monotonic() < end:
        time.sleep(0.5)
    if dest.is_file():
        return dest
    raise RuntimeError(f"another process was building {dest.name} ({lock}) and did not finish it")


def _compile(k: str, dest: Path) -> None:
    """numba.pycc with the wrapper releasing the GIL (pycc's own keeps it) and numpy's
    error model (the JIT's), for the host CPU; written in a temporary folder and moved
    in place, so a reader sees the whole module or none."""
    # deferred: kernel imports numba (and scipy); only a build compiles it
    from . import kernel
    if not HAVE_NUMBA:
        raise RuntimeError("numba is not installed (pip install numba)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # pycc's pending deprecation
        # deferred: numba is heavy; `import abtlab` and `abtlab run` do without it
        from numba.core.compiler import Flags
        from numba.pycc import CC
        from numba.pycc import compiler as pycc_compiler

    class NogilFlags(Flags):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.release_gil = True
            self.error_model = "numpy"

    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".build-") as tmp:
        cc = CC(_name(k), source_module=kernel)
        cc.output_dir = tmp
        cc.target_cpu = "host"
        cc.export("run_batch", SIGNATURE)(kernel.run_batch.py_func)
        saved, pycc_compiler.Flags = pycc_compiler.Flags, NogilFlags
        try:
            cc.compile()
        finally:
            pycc_compiler.Flags = saved
        os.replace(Path(tmp) / cc.output_file, dest)


def status() -> str:
    k = key()
    path = module_path(k)
    if path.is_file():
        return f"built: {path}"
    if _failure_note(k).is_file():
        return f"failed: {_failure_note(k).read_text().strip()} (note: {_failure_note(k)})"
    return f"absent: {path} (the simulator uses numba's JIT until it is built)"


def main(argv=None) -> int:
    """python -c COMMAND [build [--if-absent] | status]"""
    args = list(sys.argv[1:] if argv is None else argv) or ["build"]
    if args[0] == "status" and len(args) == 1:
        print(status())
        return 0
    if args[0] != "build" or not set(args[1:]) <= {"--if-absent"}:
        print(f"usage: python -c {COMMAND!r} [build [--if-absent] | status]", file=sys.stderr)
        return 2
    try:
        path = build(if_absent="--if-absent" in args)
    except RuntimeError as e:
        print(f"abtlab.sim.aot: {e}; the simulator uses numba's JIT", file=sys.stderr)
        return 1
    print(f"built {path}")
    return 0

