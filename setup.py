"""The build step pyproject.toml cannot state: the wheel carries the checkout's native/
(C programs compiled here by `make -C native`), notebooks/, examples/ and data/ under
abtlab/_data, where abtlab.about finds them in an installed package. An editable install
skips it: abtlab.about uses the checkout itself."""
import hashlib
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:                                   # setuptools >= 70.1 has its own
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
FOLDERS = ("native", "notebooks", "examples", "data")


def _source(path: Path) -> bool:
    """False for what a build leaves in native/ (programs, libraries, the guest's out/)."""
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
        proc = subprocess.run(["make", "-k", "-s", "-C", str(data / "native")],
                              capture_output=True, text=True)
        (data / "native" / "build.log").write_text(proc.stdout + proc.stderr)
        # names the cache copy abtlab.about makes (the same build, the same copy)
        (data / "BUILD").write_text(_digest(data) + "\n")


class WithPrograms(Distribution):
    """Holds compiled programs (not Python extensions): a platform wheel."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """Tagged for this platform and any Python 3: the programs do not use Python's ABI."""

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(distclass=WithPrograms, cmdclass={"build_py": BuildWithData, "bdist_wheel": PlatformWheel})
