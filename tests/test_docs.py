"""The documentation site builds in strict mode (a broken link, anchor, nav entry or API
reference fails the build), has one page per nav entry, and shows every notebook."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")
pytest.importorskip("mkdocs_jupyter")

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


class _Loader(yaml.SafeLoader):
    pass


# mkdocs.yml may hold !!python/name tags (none today); read it as plain data
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _config():
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)


def _nav_pages(nav):
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            yield from _nav_pages(value)
        else:
            yield value


def _mkdocs(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "mkdocs", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=300)


def _built_pages(site):
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html")
                  if not p.relative_to(site).parts[0] in ("assets", "search"))


def test_site_builds_strict_with_a_page_per_nav_entry(tmp_path):
    site = tmp_path / "site"
    r = _mkdocs("build", "--strict", "--quiet", "-d", str(site))
    assert r.returncode == 0, r.stderr[-4000:]
    nav = list(_nav_pages(_config()["nav"]))
    pages = _built_pages(site)
    assert len(pages) == len(nav) >= 34, (len(pages), len(nav))
    api = (site / "api" / "index.html").read_text()
    for name in ("abtlab.run", "abtlab.load", "AbtAccessor", "plot_throughput", "run_ids"):
        assert name in api
    notebook = (site / "gallery" / "01_slowdown" / "index.html").read_text()
    assert "jp-Cell" in notebook or "jp-Notebook" in notebook   # rendered, not copied


def test_every_notebook_is_in_the_gallery():
    nav = set(_nav_pages(_config()["nav"]))
    index = (ROOT / "docs" / "gallery" / "index.md").read_text()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = ROOT / "docs" / "gallery" / nb.name
        # a link to the notebook, or its executed copy (abtlab results gallery)
        assert page.is_symlink() and page.resolve() == nb.resolve() or \
            not page.is_symlink() and page.is_file(), nb.name
        assert f"gallery/{nb.name}" in nav and f"({nb.name})" in index, nb.name


def test_the_gallerys_executed_notebooks_are_the_notebooks_code_with_figures():
    import json
    from abtlab.results.gallery import GALLERY, PARAMETERS, stale
    assert stale() == []
    for name in PARAMETERS:
        nb = json.loads((GALLERY / f"{name}.ipynb").read_text())
        outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
        assert any("image/png" in o.get("data", {}) for o in outputs), name
        assert nb["metadata"]["abtlab_gallery"]["parameters"] == PARAMETERS[name]


def test_strict_build_fails_on_a_broken_link(tmp_path):
    """The site's own validation settings turn a link to a missing page into an error."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# x\n\nSee [there](missing.md).\n")
    cfg = {"site_name": "t", "strict": True, "validation": _config()["validation"],
           "nav": [{"Home": "index.md"}]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(cfg))
    r = _mkdocs("build", "--strict", "-d", str(tmp_path / "site"), cwd=tmp_path)
    assert r.returncode != 0 and "missing.md" in r.stderr


def _public_api():
    import abtlab
    from abtlab.present import accessor, plots
    yield from ((f"abtlab.{n}", getattr(abtlab, n)) for n in ("run", "load", "save", "sweep_spec"))
    yield from ((f"ds.abt.{n}", getattr(accessor.AbtAccessor, n)) for n in dir(accessor.AbtAccessor)
                if not n.startswith("_"))
    yield from ((f"plots.{n}", getattr(plots, n)) for n in plots.__all__)


@pytest.mark.parametrize("name,fn", list(_public_api()), ids=lambda x: x if isinstance(x, str) else "")
def test_public_api_has_numpydoc_docstrings(name, fn):
    doc = fn.__doc__ or ""
    for section in ("Returns\n", "Examples\n"):
        assert section in doc, f"{name}: no {section.strip()} section"
    takes = [p for p in __import__("inspect").signature(fn).parameters if p != "self"]
    if takes:
        assert "Parameters\n" in doc, f"{name}: no Parameters section"


def test_papers_are_cited_not_their_storage_files():
    """Papers are cited by authors, title, venue and year; never as 'seed NNN'."""
    import re
    pat = re.compile(r"seed ?0{2}[0-3]", re.I)
    places = [ROOT / "README.md", *[p for d in ("abtlab", "notebooks", "docs")
                                    for p in (ROOT / d).rglob("*") if p.is_file()
                                    and not p.is_symlink() and p.suffix in (".py", ".ipynb", ".md", ".csv", ".toml")]]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in places
            for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if pat.search(line)]
    assert not hits, hits
