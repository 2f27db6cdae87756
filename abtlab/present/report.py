"""Batch reports: execute parameterized notebooks with papermill into HTML, with an index.

One item = one notebook and one set of parameters. `run_batch` executes items into
<out>/<name>.ipynb and a self-contained <name>.html (images embedded as data: URIs),
then writes <out>/index.html linking them all with status and run time. A failing item
is recorded with its error and the batch goes on. Items that do real I/O on this
machine (notebook metadata `abtlab.real_io` and a `data` parameter that is not "sim",
"guest" or a dataset path) run one at a time with nothing else running, so that their
timings are not disturbed; the others run in a small process pool.
"""
from __future__ import annotations

import ast
import concurrent.futures as cf
import html
import itertools
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import about
from ..data.tomlfile import read_toml
from ..errors import ConfigError
from ..extras import check, require
from .batch_progress import BatchProgress
from .html import write_page

__all__ = ["Item", "Outcome", "execute", "run_batch", "load_grid", "write_index",
           "notebook_parameters", "parse_value", "answers", "NOTEBOOK_DIR", "STATIC_ENV"]

NOTEBOOK_DIR = about.NOTEBOOKS
STATIC_ENV = "ABTLAB_STATIC"      # set in executed kernels: widgets draw static figures
PROGRESS_ENV = "ABTLAB_PROGRESS"  # "off" in executed kernels (abtlab.progress)
_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Item:
    notebook: Path
    parameters: dict = field(default_factory=dict)
    name: str = ""

    def __post_init__(self):
        self.notebook = resolve_notebook(self.notebook)
        if not self.name:
            tail = "_".join(f"{k}-{v}" for k, v in self.parameters.items())
            self.name = self.notebook.stem + (f"__{tail}" if tail else "")
        self.name = _NAME.sub("_", self.name)[:120]


@dataclass
class Outcome:
    item: Item
    status: str                    # "ok" | "failed"
    seconds: float
    ipynb: Path | None = None
    html: Path | None = None
    error: str = ""
    real_io: bool = False


def _require(module):
    return require(module, "notebooks", "abtlab report, lab and demo (notebooks executed into HTML)")


def resolve_notebook(path) -> Path:
    """A notebook path as given, or a name in the repository's notebooks/ folder."""
    p = Path(path)
    for cand in (p, NOTEBOOK_DIR / p, NOTEBOOK_DIR / f"{p}.ipynb"):
        if cand.is_file() and cand.suffix == ".ipynb":
            return cand.resolve()
    raise ConfigError("notebook", str(path), f"an .ipynb file, or a name in {NOTEBOOK_DIR}")


def notebook_parameters(notebook) -> dict:
    """Parameter name -> default (as source text) of the cell tagged `parameters`."""
    pm = _require("papermill")
    return {k: v["default"] for k, v in pm.inspect_notebook(str(notebook)).items()}


def parse_value(text: str):
    """A -p value: int, float, true/false, none, otherwise the string itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _check_parameters(item: Item) -> None:
    known = notebook_parameters(item.notebook)
    for k in item.parameters:
        if k not in known:
            raise ConfigError(f"{item.notebook.name}: parameter {k}", item.parameters[k],
                              "one of " + (", ".join(known) or "(no parameters cell)"))


def is_real_io(item: Item) -> bool:
    """True when the item may run real I/O here (see module doc)."""
    nbformat = _require("nbformat")
    meta = nbformat.read(item.notebook, as_version=4).metadata.get("abtlab", {})
    if not meta.get("real_io"):
        return False
    data = item.parameters.get("data")
    if data is None:                          # the notebook's own default
        try:
            data = ast.literal_eval(notebook_parameters(item.notebook).get("data", "'auto'"))
        except (ValueError, SyntaxError):
            data = "auto"
    data = str(data)
    if data in ("sim", "guest") or Path(data).exists():   # a guest runs in its own virtual time
        return False
    # deferred: the drivers load numpy; `abtlab report`'s parent process does without
    # until a notebook may run real I/O
    from ..backends import get as get_backend
    return bool(get_backend(meta.get("backend", "iozone")).available().ok)


def _kernel_config():
    """Encrypt the kernel's local TCP channels where the kernel can (CurveZMQ), so that
    ipykernel >= 7.3 does not warn about plain text on every notebook; elsewhere as before."""
    KernelManager = _require("jupyter_client.manager").KernelManager
    import zmq                      # deferred: jupyter_client's own dependency, extra [notebooks]
    from traitlets.config import Config     # deferred: as zmq
    if not (zmq.has("curve") and KernelManager.class_traits().get("transport_encryption")):
        return Config()
    return Config({"KernelManager": {"transport_encryption": "auto"}})


def execute(item: Item, out, timeout: int = 900) -> Outcome:
    """Execute one item into out/<name>.ipynb and out/<name>.html; never raises on a
    notebook error (the Outcome says failed, with the error)."""
    pm = _require("papermill")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ipynb, page = out / f"{item.name}.ipynb", out / f"{item.name}.html"
    # inherited by the kernel: widgets draw static figures, and no progress lands in the
    # page (the batch prints a line per notebook itself)
    before = {k: os.environ.get(k) for k in (STATIC_ENV, PROGRESS_ENV)}
    os.environ.update({STATIC_ENV: "1", PROGRESS_ENV: "off"})
    t0 = time.monotonic()
    error = ""
    try:
        pm.execute_notebook(str(item.notebook), str(ipynb), parameters=item.parameters,
                            kernel_name="python3", cwd=str(out), progress_bar=False,
                            execution_timeout=timeout, log_output=False,
                            config=_kernel_config())
    except pm.PapermillExecutionError as exc:
        error = f"{exc.ename}: {exc.evalue}"
    except Exception as exc:                 # kernel died, timeout, bad notebook: report it
        error = f"{type(exc).__name__}: {exc}"
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    seconds = time.monotonic() - t0
    html_path = _to_html(ipynb, page) if ipynb.exists() else None
    return Outcome(item, "failed" if error else "ok", seconds, ipynb if ipynb.exists() else None,
                   html_path, error)


def _to_html(ipynb: Path, page: Path) -> Path:
    nbformat = _require("nbformat")
    HTMLExporter = _require("nbconvert").HTMLExporter
    nb = nbformat.read(ipynb, as_version=4)
    body, _ = HTMLExporter(template_name="lab", embed_images=True).from_notebook_node(nb)
    page.write_text(body)
    return page


def _run_one(args):
    item, out, timeout = args
    return execute(item, out, timeout)


def run_batch(items, out, workers: int = 2, title: str = "abtlab report", timeout: int = 900,
              progress=print) -> tuple[list[Outcome], Path]:
    """Execute items (real-I/O ones first, one at a time; then the rest in a pool of
    `workers` processes); write out/index.html. Returns (outcomes in item order, index)."""
    check("notebooks", "abtlab report, lab check and demo (notebooks executed into HTML)")
    items = list(items)
    if not items:
        raise ConfigError("items", [], "at least one notebook to run")
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError("workers", workers, "an integer >= 1")
    names = [it.name for it in items]
    if len(set(names)) != len(names):
        raise ConfigError("name", names, "distinct item names")
    for it in items:
        _check_parameters(it)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    real = {it.name for it in items if is_real_io(it)}
    shown = BatchProgress(items, out, workers, progress, real)
    shown.begin(f"running {len(items)} notebook{'s' * (len(items) > 1)} ({len(real)} with real "
                f"I/O alone, the others {workers} at a time)")
    done: dict[str, Outcome] = {}
    try:
        for it in (i for i in items if i.name in real):
            shown.start(it)
            done[it.name] = _report(execute(it, out, timeout), shown, real=True)
        _run_pool([i for i in items if i.name not in real], out, timeout, workers, shown, done)
    finally:
        shown.close()
    outcomes = [done[n] for n in names]
    return outcomes, write_index(outcomes, out, title)


def _run_pool(items, out, timeout, workers, shown, done) -> None:
    """items in a pool of `workers` processes, longest first by their recorded durations,
    handed out one at a time so that each start is seen; each result shown as it ends."""
    if not items:
        return
    queue = shown.order(items)
    with cf.ProcessPoolExecutor(max_workers=min(workers, len(items))) as pool:
        running = set()
        while queue or running:
            while queue and len(running) < workers:
                it = queue.pop(0)
                shown.start(it)
                running.add(pool.submit(_run_one, (it, out, timeout)))
            finished, running = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                o = fut.result()
                done[o.item.name] = _report(o, shown)


def _report(o: Outcome, shown, real=False) -> Outcome:
    o.real_io = real
    shown.finish(o)
    return o


# lines a notebook prints as its answer: a study's "Answer: ..." (abtlab.present.answers),
# a lab's graded checks and, under `abtlab lab check`, its answer key
ANSWER_MARKS = ("Answer:", "[ANSWER KEY]", "[CORRECT]", "[NOT QUITE]")


def answers(ipynb) -> list[str]:
    """The answer lines an executed notebook printed, in cell order."""
    nbformat = _require("nbformat")
    found = []
    for cell in nbformat.read(ipynb, as_version=4).cells:
        for o in cell.get("outputs", []):
            text = o.get("text", "") if o.get("output_type") == "stream" else \
                o.get("data", {}).get("text/plain", "")
            found += [ln.strip() for ln in str(text).splitlines() if ln.strip().startswith(ANSWER_MARKS)]
    return found


def _answers_section(outcomes) -> str:
    """What each notebook found, first: its answer lines, or why it has none."""
    items = []
    for o in outcomes:
        got = answers(o.ipynb) if o.ipynb else []
        if o.status != "ok":
            got.append(f"failed: {o.error[-300:]}")
        lines = "".join(f"<li>{html.escape(a)}</li>" for a in got) or "<li>(no answer printed)</li>"
        link = f'<a href="{html.escape(o.html.name)}">{html.escape(o.item.name)}</a>' if o.html \
            else html.escape(o.item.name)
        items.append(f"<li>{link}<ul>{lines}</ul></li>")
    return f"<ul class='answers'>{''.join(items)}</ul>"


def write_index(outcomes, out, title="abtlab report", lead=()) -> Path:
    """out/index.html: after the (heading, trusted html) sections of `lead` (the demo's
    headline answer), the answers each notebook printed, then one row per outcome
    (links, parameters, status, time, error)."""
    rows = []
    for o in outcomes:
        link = (f'<a href="{html.escape(o.html.name)}">{html.escape(o.item.name)}</a>'
                if o.html else html.escape(o.item.name))
        nb = f'<a href="{html.escape(o.ipynb.name)}">ipynb</a>' if o.ipynb else ""
        params = ", ".join(f"{k}={v!r}" for k, v in o.item.parameters.items())
        err = f"<pre>{html.escape(o.error[-2000:])}</pre>" if o.error else ""
        rows.append(f"<tr class='{o.status}'><td>{link}</td><td>{nb}</td><td>{html.escape(params)}</td>"
                    f"<td>{o.status}{' (real I/O, alone)' if o.real_io else ''}</td>"
                    f"<td>{o.seconds:.1f} s</td><td>{err}</td></tr>")
    ok = sum(o.status == "ok" for o in outcomes)
    body = (f"<p>{ok} of {len(outcomes)} notebooks ran without error. Every figure says whether "
            f"its data was measured, emulated or simulated.</p><table><tr><th>report</th><th>notebook</th>"
            f"<th>parameters</th><th>status</th><th>run time</th><th>error</th></tr>{''.join(rows)}</table>")
    page = write_page(Path(out) / "index.html", title,
                      [*lead, ("Answers", _answers_section(outcomes)), ("Notebooks", body)])
    page.write_text(page.read_text().replace(
        "</style>", "tr.failed{background:#fdd} tr.ok{background:#efe} td{text-align:left}"
                    " pre{white-space:pre-wrap;margin:0}</style>", 1))
    return page


def load_grid(path) -> list[Item]:
    """Items of a grid TOML file: [[run]] tables with notebook, optional name, a
    `parameters` table (fixed values) and a `grid` table (lists, one item per
    combination). Notebook paths are relative to the file, or names in notebooks/."""
    path = Path(path)
    data = read_toml(path, "grid", "a TOML file of [[run]] tables")
    runs = data.get("run")
    if not isinstance(runs, list) or not runs:
        raise ConfigError("grid.run", runs, "one or more [[run]] tables")
    items = []
    for i, run in enumerate(runs):
        items += _grid_items(run, i, path.parent)
    return items


def _grid_items(run: dict, i: int, base: Path) -> list[Item]:
    where = f"run[{i}]"
    extra = set(run) - {"notebook", "name", "parameters", "grid"}
    if extra:
        raise ConfigError(f"{where}.{sorted(extra)[0]}", run[sorted(extra)[0]],
                          "notebook, name, parameters, grid")
    if "notebook" not in run:
        raise ConfigError(f"{where}.notebook", None, "a notebook path or name")
    nb = base / run["notebook"] if (base / run["notebook"]).is_file() else run["notebook"]
    fixed, grid = run.get("parameters", {}), run.get("grid", {})
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{where}.grid.{k}", v, "a non-empty list of values")
    items = []
    for combo in itertools.product(*grid.values()):
        params = {**fixed, **dict(zip(grid, combo))}
        name = run.get("name", "")
        if name and grid:
            name += "__" + "_".join(f"{k}-{v}" for k, v in zip(grid, combo))
        items.append(Item(nb, params, name))
    return items
