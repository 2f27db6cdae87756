"""What abtlab is and where its own files are: the version every dataset records, and its
C programs, notebooks, examples and reference data.

ROOT is a folder shaped like the checkout (backends/, notebooks/, examples/,
data/reference/). In a checkout, an editable install included, it is the checkout. An
installed wheel carries the same folders, C programs compiled, under abtlab/_data; as the
guest build writes beside its scripts (backends/kernel/out) and site-packages may not be
writable, ROOT is then a copy of _data in the cache folder (CACHE), made on first use for
each build of the package. ROOT, NATIVE (backends/, the C programs), NOTEBOOKS, EXAMPLES and REFERENCE_DATA resolve
on first use, so `import abtlab` does no file work.
"""
from __future__ import annotations

import os
from pathlib import Path

__version__ = "0.1.0"

PACKAGE = Path(__file__).resolve().parent
DATA = PACKAGE / "_data"            # the installed package's copy of the checkout's folders
SYSTEM_CACHE = Path("/var/cache/abtlab")   # the guest kernel, qemu and 3.4.2 caches (root)


def _checkout() -> Path | None:
    """The checkout this module runs from, or None in an installed package."""
    top = PACKAGE.parent
    return top if (top / "backends" / "Makefile").is_file() and (top / "pyproject.toml").is_file() \
        else None


INSTALLED = _checkout() is None


def _cache() -> Path:
    """$ABTLAB_CACHE; else root's system cache, where the build scripts keep the guest
    kernel and qemu; else the user's ($XDG_CACHE_HOME or ~/.cache)/abtlab."""
    if os.environ.get("ABTLAB_CACHE"):
        return Path(os.environ["ABTLAB_CACHE"])
    if os.geteuid() == 0:
        return SYSTEM_CACHE
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "abtlab"


CACHE = _cache()


def _copy_of(data: Path) -> Path:
    """data copied once into CACHE/package/<version>-<build>; the package data itself
    when the cache cannot be written (the programs still run; a guest build says where it
    could not write)."""
    # deferred: `import abtlab` loads this module; shutil and tempfile would triple its time
    import shutil
    import tempfile
    build = (data / "BUILD").read_text().strip() if (data / "BUILD").is_file() else "unknown"
    dest = CACHE / "package" / f"{__version__}-{build}"
    if (dest / "backends").is_dir():
        return dest
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    except OSError:
        return data
    try:
        shutil.copytree(data, tmp, symlinks=True, dirs_exist_ok=True)
        tmp.chmod(0o755)
        tmp.rename(dest)            # atomic; a process that copied at the same time won
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest if (dest / "backends").is_dir() else data


def _root() -> Path:
    return _checkout() or _copy_of(DATA)


_PATHS = {"ROOT": (), "NATIVE": ("backends",), "NOTEBOOKS": ("notebooks",),
          "EXAMPLES": ("examples",), "REFERENCE_DATA": ("data", "reference")}


def __getattr__(name):
    if name in _PATHS:
        root = globals().get("ROOT") or _root()
        globals()["ROOT"] = root
        value = root.joinpath(*_PATHS[name])
        globals()[name] = value     # later reads are plain attributes
        return value
    raise AttributeError(f"module 'abtlab.about' has no attribute {name!r}")
