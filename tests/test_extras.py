"""abtlab.extras: the core installs alone, each extra's feature names what to install.

The packaging side reads pyproject.toml and environment.yml; the behaviour side runs
abtlab in a child Python where every extra's modules are hidden (None in sys.modules, so
importing one fails as for a package that is not installed), which is a core-only
install as far as abtlab can tell: `abtlab run sim`, `stats` and `fit --model ols` work,
and the Bayesian models, reports, labs, dask sweeps and live widgets fail with one clear
line naming the missing module and the pip command.
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from abtlab import extras
from abtlab.errors import ConfigError, UnavailableError

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OPTIONAL = PROJECT["optional-dependencies"]

# every extra's modules and what they bring in with them: hidden in the core-only child
HIDDEN = ("pymc", "arviz", "pytensor", "nutpie", "dask", "distributed", "papermill", "nbclient",
          "nbconvert", "nbformat", "ipykernel", "ipywidgets", "IPython", "jupyter_client",
          "jupyter_core", "jupyterlab", "notebook", "zmq", "traitlets", "widgetsnbextension")


def _name(req: str) -> str:
    """A requirement's distribution name, normalised (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", req).group()).lower()


def _names(reqs) -> set[str]:
    return {_name(r) for r in reqs}


# ---- packaging ---------------------------------------------------------------------------

def test_the_extras_in_pyproject_are_those_abtlab_names():
    assert set(OPTIONAL) == {*extras.EXTRAS, "all", "test", "docs"}


def test_all_is_every_extra_and_the_core_holds_none_of_them():
    parts = [set(OPTIONAL[e]) for e in extras.EXTRAS]
    assert set(OPTIONAL["all"]) == set().union(*parts)
    assert not _names(PROJECT["dependencies"]) & _names(OPTIONAL["all"])
    for heavy in ("pymc", "arviz", "dask", "jupyter", "papermill", "ipywidgets", "nbconvert"):
        assert heavy not in _names(PROJECT["dependencies"]), heavy
    # what the core itself needs stays in it: the simulator's compiler, the tests' statistics
    assert {"numba", "statsmodels", "numpy", "xarray", "h5py", "h5netcdf"} <= _names(PROJECT["dependencies"])


@pytest.mark.parametrize("extra", sorted(extras.EXTRAS))
def test_each_module_an_extra_checks_comes_from_a_distribution_it_installs(extra):
    dists = importlib.metadata.packages_distributions()
    listed = _names(OPTIONAL[extra]) | ({"distributed"} if "dask" in _names(OPTIONAL[extra]) else set())
    for module in extras.EXTRAS[extra].modules:
        assert _names(dists.get(module, ())) & listed, (module, dists.get(module), listed)


def test_environment_yml_installs_the_core_and_every_extra():
    text = (ROOT / "environment.yml").read_text()
    conda = {_name(ln.split("-", 1)[1].strip()) for ln in text.splitlines()
             if re.match(r"\s+- [A-Za-z]", ln)}
    conda |= {"matplotlib"} if "matplotlib-base" in conda else set()
    conda |= {"dask"} if {"dask", "distributed"} <= conda else set()
    missing = (_names(PROJECT["dependencies"]) | _names(OPTIONAL["all"])) - conda
    assert not missing, missing


def test_setup_installs_every_extra():
    setup = (ROOT / "scripts/setup.sh").read_text()
    line, = [ln for ln in setup.splitlines() if "pip install" in ln and " -e " in ln]
    assert "'.[all,test]'" in line, line


# ---- require, check, missing -------------------------------------------------------------

def test_require_returns_the_module():
    assert extras.require("json", "bayes") is sys.modules["json"]


def test_a_missing_module_names_itself_its_feature_and_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymc", None)
    with pytest.raises(extras.MissingExtra) as err:
        extras.require("pymc", "bayes")
    msg = str(err.value)
    assert msg.startswith("pymc is not installed; it is needed for the Bayesian predictors")
    assert "pip install 'abtlab[bayes]'" in msg and "[all]" in msg
    # an abtlab error the CLI prints in one line, and an ImportError for code that falls back
    assert isinstance(err.value, UnavailableError) and isinstance(err.value, ImportError)
    assert err.value.name == "pymc" and err.value.extra == "bayes"


def test_a_missing_dependency_of_a_submodule_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    monkeypatch.delitem(sys.modules, "dask.distributed", raising=False)   # imported by a test before
    with pytest.raises(extras.MissingExtra, match=r"^distributed is not installed; it is needed "
                       r"for a dask cluster.*pip install 'abtlab\[dask\]'"):
        extras.require("dask.distributed", "dask", "a dask cluster")


def test_a_module_that_is_there_but_does_not_import_says_why(tmp_path, monkeypatch):
    (tmp_path / "abtlab_broken_probe.py").write_text("raise ImportError('libfoo.so: cannot open')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(extras.MissingExtra, match=r"abtlab_broken_probe does not import "
                       r"\(libfoo.so: cannot open\).*abtlab\[notebooks\]"):
        extras.require("abtlab_broken_probe", "notebooks")


def test_an_extra_abtlab_does_not_have_is_a_config_error():
    with pytest.raises(ConfigError, match="bayes | fast | dask | notebooks | all"):
        extras.require("json", "gpu")


def test_check_and_missing_find_without_importing(monkeypatch):
    monkeypatch.setitem(sys.modules, "nbconvert", None)
    assert extras.missing("notebooks") == ["nbconvert"]
    assert "nbconvert" in extras.missing("all")
    with pytest.raises(extras.MissingExtra, match="^nbconvert is not installed; it is needed for "
                       "HTML pages"):
        extras.check("notebooks", "HTML pages")
    extras.check("bayes")                         # everything is installed here
    assert ("notebooks", ["nbconvert"]) in [(e, gone) for e, gone, _ in extras.status()]


def test_installed_from_a_checkout_the_message_gives_the_editable_command_too(monkeypatch):
    from abtlab import about
    monkeypatch.setattr(about, "INSTALLED", False)
    assert extras.install_command("dask") == (f"pip install 'abtlab[dask]', or from this checkout "
                                              f"pip install -e '{ROOT}[dask]'")
    monkeypatch.setattr(about, "INSTALLED", True)
    assert extras.install_command("all") == "pip install 'abtlab[all]'"


# ---- abtlab with only the core -----------------------------------------------------------

def _core_only(code: str, cwd, timeout=300) -> subprocess.CompletedProcess:
    """Run `code` in a child Python that cannot import any extra's module."""
    prelude = f"import sys\nfor _m in {HIDDEN!r}:\n    sys.modules[_m] = None\n"
    # the simulator uncompiled: a compile here would cost a minute, and changes nothing tested
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_DISABLE_JIT="1", ABTLAB_SIM_AOT="off",
               ABTLAB_PROGRESS="off")
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _cli(*argv) -> str:
    return f"from abtlab.cli import main\nsys.exit(main({list(argv)!r}))\n"


@pytest.fixture(scope="module")
def core_run(tmp_path_factory):
    """A simulated run made by `abtlab run` with every extra hidden."""
    work = tmp_path_factory.mktemp("core")
    proc = _core_only(_cli("run", "sim", "--threads", "4,8", "--file-size", "64k", "--record", "32k",
                           "--freq", "1.6,3.3", "--reps", "3", "--quiet", "--out", "s.nc"), work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work


def test_import_abtlab_and_a_simulated_run_need_no_extra(core_run):
    assert (core_run / "s.nc").stat().st_size > 0


def test_stats_needs_no_extra(core_run):
    proc = _core_only(_cli("stats", "s.nc", "--slowdown", "--test", "--anova"), core_run)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ANOVA (type 2)" in proc.stdout and "reject" in proc.stdout


def test_fit_ols_needs_no_extra(core_run):
    proc = _core_only(_cli("fit", "s.nc", "--model", "ols"), core_run)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ols baseline" in proc.stdout


@pytest.mark.parametrize("argv, module, extra", [
    (("fit", "s.nc", "--model", "hierarchical"), "pymc", "bayes"),
    (("fit", "s.nc", "--model", "delay"), "pymc", "bayes"),
    (("report", "01_slowdown", "--out", "rep"), "papermill", "notebooks"),
    (("lab", "list"), "nbformat", "notebooks"),
    (("demo", "--sim", "--out", "demo"), "papermill", "notebooks"),
])
def test_a_command_that_needs_an_extra_says_what_to_install(core_run, argv, module, extra):
    proc = _core_only(_cli(*argv), core_run)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    line, = proc.stderr.strip().splitlines()          # one line, no traceback
    assert line.startswith(f"abtlab {argv[0]}: error: {module} is not installed"), line
    assert f"pip install 'abtlab[{extra}]'" in line, line


def test_the_python_api_says_what_to_install(core_run):
    proc = _core_only("""
        import abtlab
        from abtlab.extras import MissingExtra
        ds = abtlab.load("s.nc")
        from abtlab.present import widgets
        for call in (lambda: abtlab.bayes.fit_hierarchical(ds, draws=10, tune=10),
                     lambda: abtlab.run("sim", threads=4, file_size="64k", reps=1, quiet=True,
                                        scheduler="local"),
                     lambda: widgets.delay_explorer(static=False)):
            try:
                call()
            except MissingExtra as exc:
                print(exc.module, exc.extra)
            else:
                print("no error")
        """, core_run)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:3] == ["pymc bayes", "dask dask", "ipywidgets notebooks"]


def test_doctor_lists_the_missing_extras(core_run):
    proc = _core_only(_cli("doctor"), core_run)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = {ln.split()[1]: ln for ln in proc.stdout.splitlines()
             if ln[:5] in ("  ok ", "  no ") and ln.split()[1] in extras.EXTRAS}
    assert sorted(lines) == sorted(extras.EXTRAS)
    assert all(ln.startswith("  no ") for ln in lines.values()), lines
    assert "missing: pymc, arviz" in lines["bayes"]


def test_help_says_what_each_extra_is_for():
    from abtlab.cli import build_parser
    text = build_parser().format_help()
    for extra in (*extras.EXTRAS.keys() - {"fast"}, "all"):
        assert f"'abtlab[{extra}]'" in text, extra
