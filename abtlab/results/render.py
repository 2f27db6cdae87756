"""Pages take their numbers from the stored results. A page source marks each quoted
number:

    <!-- result:NAME FIELD [var=VAR] [DIM=LEVEL ...] -->0.51 [0.50, 0.53]<!-- /result -->

and `abtlab results render` (`make render`) rewrites the text between the markers from
the result's stored file (abtlab.results.quotes). `stale` lists the markers whose text is
not what the stored result gives, and `unsourced` the confidence intervals a page quotes
outside any marker: the tests fail on either."""
from __future__ import annotations

import re
from pathlib import Path

from ..data.store import load
from ..errors import ConfigError
from . import registry
from .quotes import quote

__all__ = ["MARKER", "CI", "render_text", "render_files", "stale", "unsourced", "pages"]

MARKER = re.compile(r"<!-- result:(?P<name>[\w.-]+) (?P<field>\w+)(?P<args>(?: [^\s=]+=[^\s]+)*) -->"
                    r"(?P<text>.*?)<!-- /result -->")
INDEX = re.compile(r"(<!-- results:index -->\n)(.*?)(<!-- /results:index -->)", re.S)
CI = re.compile(r"[0-9]\.[0-9]+ \[[0-9.]+, [0-9.]+\]")
PAGES = ("README.md", "docs")
JOURNAL = "docs/journal"


def _text_for(m, results, folder, cache) -> str:
    name, field = m["name"], m["field"]
    if name not in results:
        return f"(result {name} not stored yet)"
    args = dict(a.split("=", 1) for a in m["args"].split())
    if name not in cache:
        cache[name] = load(results[name].path(folder))
    var = args.pop("var", results[name].var)
    try:
        return quote(cache[name], field, var=var, **args)
    except ConfigError as exc:
        raise ConfigError(f"marker result:{name} {field}{m['args']}", exc.given, exc.accepted) from None


def index_table(results) -> str:
    """The registry as a Markdown table: name, what it shows, the command (its output: X.nc)."""
    rows = ["| result | what it shows | command |", "| --- | --- | --- |"]
    rows += [f"| `{r.name}` | {r.says} | `{r.command.replace('{out}', 'X.nc')}` |"
             for r in results.values()]
    return "\n".join(rows) + "\n"


def render_text(text: str, folder=None, cache=None) -> str:
    folder = Path(folder or registry.root())
    results, cache = registry.read(folder), ({} if cache is None else cache)
    text = INDEX.sub(lambda m: m.group(1) + index_table(results) + m.group(3), text)
    return MARKER.sub(lambda m: m.group(0).replace(
        f"-->{m['text']}<!--", f"-->{_text_for(m, results, folder, cache)}<!--", 1), text)


def pages(checkout) -> list[Path]:
    """README.md and every Markdown page of docs/ outside the journal."""
    root = Path(checkout)
    docs = sorted(p for p in (root / "docs").rglob("*.md")
                  if not p.relative_to(root).as_posix().startswith(JOURNAL + "/"))
    return [root / "README.md"] + docs


def render_files(paths, folder=None) -> list[Path]:
    """Rewrite each page's markers; the pages that changed."""
    changed, cache = [], {}
    for p in map(Path, paths):
        old = p.read_text()
        new = render_text(old, folder, cache)
        if new != old:
            p.write_text(new)
            changed.append(p)
    return changed


def stale(paths, folder=None) -> list[str]:
    """'page: marker says X, the stored result gives Y' for every marker out of date."""
    out, cache = [], {}
    for p in map(Path, paths):
        for m in INDEX.finditer(p.read_text()):
            if m.group(2) != index_table(registry.read(folder or registry.root())):
                out.append(f"{p}: the results index is not the registry's (abtlab results render)")
        for m in MARKER.finditer(p.read_text()):
            want = MARKER.match(render_text(m.group(0), folder, cache))["text"]
            if want != m["text"]:
                out.append(f"{p}: result:{m['name']} {m['field']}{m['args']} says "
                           f"{m['text']!r}, the stored result gives {want!r}")
    return out


def unsourced(paths) -> list[str]:
    """'page:line: CI' for each confidence interval quoted outside a result marker."""
    out = []
    for p in map(Path, paths):
        text = p.read_text()
        inside = [m.span("text") for m in MARKER.finditer(text)]
        for m in CI.finditer(text):
            if not any(a <= m.start() and m.end() <= b for a, b in inside):
                out.append(f"{p}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
    return out
