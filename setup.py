"""The build steps pyproject.toml cannot state: the wheel carries the checkout's backends/
(C programs compiled here by `make -C backends`), notebooks/, examples/ and data/ under
abtlab/_data, where abtlab.about finds them in an installed package (an editable install
skips this: abtlab.about uses the checkout itself); and the `abtlab` command, in both, is
the launcher backends/start/abt-start.c compiled for this interpreter."""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

from distutils.command.build_scripts import build_scripts  # setuptools' own, once it is imported

try:                                   # setuptools >= 70.1 has its own
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
FOLDERS = ("backends", "notebooks", "examples", "data")


def _source(path: Path) -> bool:
    """False for what a build leaves in backends/ (programs, libraries, the guest's out/)."""
    name = path.name
    if name in ("out", "__pycache__", ".ipynb_checkpoints") or name.endswith((".so", ".o", ".pyc")):
        return False
    return not (name.startswith("abt-") and path.suffix not in (".c", ".h") and path.is_file())


def _copy(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if not _source(Path(d) / n)])


def _digest(root: Path) -> str:
    """The sources' bytes and the built files' names: a rebuild of the same sources keeps
    its name (compilers do not make the same bytes in another folder), one that built
    other programs does not."""
    h = hashlib.sha256(HERE.joinpath("pyproject.toml").read_bytes())
    for p in sorted(q for q in root.rglob("*") if q.is_file()):
        h.update(str(p.relative_to(root)).encode() + b"\0" + (p.read_bytes() if _source(p) else b""))
    return h.hexdigest()[:16]


class BuildWithData(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        data = Path(self.build_lib) / "abtlab" / "_data"
        shutil.rmtree(data, ignore_errors=True)
        for folder in FOLDERS:
            _copy(HERE / folder, data / folder)
        # -k: a program this machine cannot build (no FUSE headers, say) is left out and
        # the rest still built; build.log says why, and `abtlab doctor` reads it
        proc = subprocess.run(["make", "-k", "-s", "-C", str(data / "backends")],
                              capture_output=True, text=True)
        (data / "backends" / "build.log").write_text(proc.stdout + proc.stderr)
        # names the cache copy abtlab.about makes (the same build, the same copy)
        (data / "BUILD").write_text(_digest(data) + "\n")


class LaunchedCommand(build_scripts):
    """The `abtlab` command compiled from backends/start/abt-start.c: it starts Python with
    SIGINT and SIGTERM blocked until abtlab's handlers exist (a Ctrl-C during the
    interpreter's own start-up printed a traceback). Static where the C library allows,
    so no dynamic loading comes before its first statement. Without a C compiler the
    command is scripts/abtlab, a Python script, and the build says so."""

    def run(self):
        self.force = True           # scripts/abtlab over what an earlier build left
        super().run()
        with tempfile.TemporaryDirectory() as tmp:     # build_dir is installed whole
            new = Path(tmp) / "abtlab"
            cc = os.environ.get("CC", "cc").split()
            base = [*cc, "-O2", "-std=gnu11", "-Wall", f"-DABT_PYTHON={_c_string(sys.executable)}",
                    "-o", str(new), str(HERE / "backends/start/abt-start.c")]
            for cmd in ([*base, "-static"], base):
                try:
                    if subprocess.run(cmd, capture_output=True).returncode == 0:
                        shutil.move(new, Path(self.build_dir) / "abtlab")
                        return
                except OSError:     # no compiler
                    break
        self.warn("no C compiler built backends/start/abt-start.c: the `abtlab` command is "
                  "scripts/abtlab, where a Ctrl-C during Python's own start-up prints a traceback")


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class WithPrograms(Distribution):
    """Holds compiled programs (not Python extensions): a platform wheel."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """Tagged for this platform and any Python 3: the programs do not use Python's ABI."""

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(distclass=WithPrograms, cmdclass={"build_py": BuildWithData, "build_scripts": LaunchedCommand,
                                        "bdist_wheel": PlatformWheel})
