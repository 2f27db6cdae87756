"""abtlab installed on its own, outside the checkout: `python -m build` makes the sdist and,
from it, the wheel (setup.py compiles the C programs into it); the wheel goes into a new
virtual environment, and from a folder outside the checkout `abtlab doctor`, `abtlab lab
list`, a simulated run and a small guest run must work from the package alone.

Installing the dependencies (numba, ..., and with [all] pymc, jupyter, dask) into the new environment
takes about 4 minutes here, so the wheel is installed with --no-deps and the environment
reaches this environment's site-packages through a .pth path line. Path lines only extend
sys.path after the new environment's own site-packages; the .pth files of the directory they
add are not read, so this environment's editable install of the checkout stays out, and
the first test checks that abtlab is imported from the new environment. ABTLAB_WHEEL_DEPS=1
installs the dependencies instead, every extra's too (`lab list` reads notebooks: [all]),
in minutes. The guest part is skipped, with the reason,
where the guest cannot run (abtlab.machines.guest.available); its kernel build is cached in
/var/cache/abtlab by the clone's set-up, so the installed package builds only its initramfs.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[1]


def _run(argv, timeout=600, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw)
    print(f"$ {' '.join(Path(str(a)).name if i == 0 else str(a) for i, a in enumerate(argv))}"
          f"  -> exit {proc.returncode}")
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(environment variables, working folder, venv folder, wheel) of the wheel installed
    into a new virtual environment, run from a folder outside the checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    proc = _run([sys.executable, "-m", "build", "--outdir", tmp / "dist", CHECKOUT])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheel, = (tmp / "dist").glob("abtlab-*.whl")
    sdist, = (tmp / "dist").glob("abtlab-*.tar.gz")
    print(f"sdist {sdist.name} {sdist.stat().st_size / 1e3:.0f} kB, "
          f"wheel {wheel.name} {wheel.stat().st_size / 1e3:.0f} kB")
    venv = tmp / "venv"
    deps = os.environ.get("ABTLAB_WHEEL_DEPS") == "1"
    proc = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert proc.returncode == 0, proc.stderr
    if not deps:
        site = Path(_run([venv / "bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                    .stdout.strip())
        (site / "zz_abtlab_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # the caller's PYTHONPATH (a checkout first on the path) would show pip abtlab as installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = _run([sys.executable, "-m", "pip", "--python", venv / "bin/python", "install", "-q",
                 *((f"{wheel}[all]",) if deps else ("--no-deps", wheel))], timeout=1800, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    env.update(PATH=f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}", ABTLAB_CACHE=str(tmp / "cache"))
    work = tmp / "work"
    work.mkdir()
    return env, work, venv, wheel


def abtlab(installed, *args, timeout=600):
    env, work, venv, _ = installed
    proc = _run([venv / "bin/abtlab", *args], timeout=timeout, cwd=work, env=env)
    print(proc.stdout.rstrip())
    return proc


def test_the_wheel_holds_the_compiled_programs_and_the_data(installed):
    *_, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("backends/iozone/abt-iozone", "backends/trace/libabtrace.so", "backends/kernel/build-kernel.sh",
                 "backends/kernel/delayjc.patch", "backends/kernel/k342/08-delayjc.patch",
                 "notebooks/lab_1_faster_cpu.ipynb", "examples/paper_cells.toml",
                 "data/reference/bps_published.csv", "BUILD"):
        assert f"abtlab/_data/{name}" in names, name
    assert not any("/kernel/out/" in n for n in names)


def test_the_command_is_the_launcher_beside_the_new_environments_python(installed):
    """`abtlab` is backends/start/abt-start.c compiled (Python starts with SIGINT and SIGTERM
    blocked, tests/test_start.py), and it runs the python beside it: the new environment's."""
    env, work, venv, wheel = installed
    with zipfile.ZipFile(wheel) as z:
        script, = [n for n in z.namelist() if n.endswith(".data/scripts/abtlab")]
        assert z.read(script)[:4] == b"\x7fELF", z.read(script)[:80]
    assert (venv / "bin/abtlab").read_bytes()[:4] == b"\x7fELF"
    proc = _run([venv / "bin/abtlab", "--version"], cwd=work, env=env)
    assert proc.returncode == 0 and proc.stdout.startswith("abtlab "), proc.stdout + proc.stderr


def test_the_wheel_declares_the_core_and_the_extras(installed):
    """The core's Requires-Dist has no optional package; each extra is declared."""
    import email
    import re
    *_, wheel = installed
    with zipfile.ZipFile(wheel) as z:
        name, = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(z.read(name))
    assert {"bayes", "fast", "dask", "notebooks", "all"} <= set(meta.get_all("Provides-Extra"))
    reqs = meta.get_all("Requires-Dist")
    core = {re.match(r"[A-Za-z0-9_.-]+", r).group().lower() for r in reqs if "extra ==" not in r}
    assert {"numpy", "xarray", "numba", "statsmodels"} <= core, core
    assert not core & {"pymc", "arviz", "nutpie", "dask", "jupyter", "papermill", "ipywidgets", "nbconvert"}, core
    assert any(r.startswith("pymc") and 'extra == "bayes"' in r for r in reqs), reqs


def test_abtlab_comes_from_the_new_environment(installed):
    env, work, venv, _ = installed
    proc = _run([venv / "bin/python", "-c", "import abtlab, abtlab.about as a; "
                 "print(abtlab.__file__, a.INSTALLED, a.ROOT, sep='\\n')"], cwd=work, env=env)
    where, flag, root = proc.stdout.split("\n")[:3]
    assert proc.returncode == 0 and where.startswith(str(venv)) and flag == "True", proc.stdout + proc.stderr
    assert root.startswith(env["ABTLAB_CACHE"])


def test_doctor(installed):
    proc = abtlab(installed, "doctor", timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = {ln.split("  ")[2].strip(): ln for ln in proc.stdout.splitlines() if ln[2:4] in ("ok", "NO")}
    assert lines["abtlab files"].startswith("  ok") and "installed package" in lines["abtlab files"]
    backends = lines["C programs"]
    assert backends.startswith("  ok") or "skipping" in backends, backends   # left out: says why
    assert "guest machine" in lines


def test_lab_list(installed):
    proc = abtlab(installed, "lab", "list", timeout=120)
    assert proc.returncode == 0, proc.stderr
    in_checkout = sorted(p.stem for p in (Path(__file__).parents[1] / "notebooks").glob("lab_*.ipynb"))
    assert len(in_checkout) >= 7     # the wheel ships every lab of the checkout
    assert [ln.split()[0] for ln in proc.stdout.splitlines()] == in_checkout


def test_simulated_run(installed, monkeypatch):
    # numba's first compile in a new tree costs 30-80 s here; uncompiled, the same code
    # runs this point in seconds (abtlab.sim.state)
    monkeypatch.setitem(installed[0], "NUMBA_DISABLE_JIT", "1")
    _, work, *_ = installed
    proc = abtlab(installed, "run", "sim", "--threads", "4", "--file-size", "64k", "--record", "32k",
                  "--policy", "ext4", "--freq", "1.6,3.3", "--reps", "2", "--out", "sim.nc", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (work / "sim.nc").stat().st_size > 0


def test_small_guest_run(installed):
    env, work, venv, _ = installed
    probe = _run([venv / "bin/python", "-c", "from abtlab.machines import guest; print(*guest.available(), sep='|')"],
                 cwd=work, env=env)
    ok, why = probe.stdout.strip().split("|", 1)
    if ok != "True":
        pytest.skip(f"the guest cannot run here: {why}")
    proc = abtlab(installed, "run", "iozone", "--machine", "guest", "--threads", "4", "--file-size", "64k",
                  "--record", "32k", "--policy", "ext4", "--freq", "emulated:3.3", "--reps", "1",
                  "--out", "x.nc", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (work / "x.nc").stat().st_size > 0
    # the guest build wrote into the cache folder's copy, not into site-packages
    built = list(Path(env["ABTLAB_CACHE"]).glob("package/*/backends/kernel/out/initramfs.cpio.gz"))
    assert len(built) == 1, built
    assert not list(venv.glob("lib/python*/site-packages/abtlab/_data/backends/kernel/out"))
