"""The gallery's executed notebooks: `abtlab results gallery NAME` runs notebooks/NAME.ipynb
with papermill on stored-result-sized defaults (the simulator, `data = "sim"`; answers
shown, ABTLAB_ANSWER_KEY=1) into docs/gallery/NAME.ipynb, whose metadata says how and
when, and which stored results it read (each with its file's fingerprint). The docs
build shows that copy and runs nothing; a copy whose code is no longer the notebook's, or
whose stored results have changed since, is stale (`stale`, checked by the tests) and is
executed again."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..data.schema import timestamp
from ..errors import ConfigError
from ..extras import require
from . import registry
from .stored import _git_commit

__all__ = ["PARAMETERS", "execute", "stale", "code_of", "changed_results"]

CHECKOUT = Path(__file__).resolve().parents[2]
NOTEBOOKS, GALLERY = CHECKOUT / "notebooks", CHECKOUT / "docs" / "gallery"
KEY = "abtlab_gallery"
# the parameters of each executed copy: the simulator, so the gallery runs anywhere
PARAMETERS = {"01_slowdown": {"data": "sim", "metarates_data": "sim"},
              "02_abt_model": {"data": "sim"}, "03_delay": {"data": "sim"},
              "06_frequency_policies": {"data": "sim"},
              "lab_1_faster_cpu": {"data": "sim", "real_kernel": "stored"},
              "09_paper_machine": {}}     # stored results of the guest, read


def code_of(nb: dict) -> list[str]:
    """The code cells' sources, papermill's injected parameters left out."""
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
            and "injected-parameters" not in c.get("metadata", {}).get("tags", [])]


def execute(name: str) -> Path:
    """Execute notebooks/NAME.ipynb into docs/gallery/NAME.ipynb (replacing its link)."""
    if name not in PARAMETERS:
        raise ConfigError("NAME", name, ", ".join(PARAMETERS))
    papermill = require("papermill", "notebooks")
    src, dest = NOTEBOOKS / f"{name}.ipynb", GALLERY / f"{name}.ipynb"
    tmp = dest.with_suffix(".tmp.ipynb")
    os.environ["ABTLAB_ANSWER_KEY"] = "1"
    log = dest.with_suffix(".results-read")
    log.unlink(missing_ok=True)
    os.environ[registry.READ_LOG] = str(log)      # the kernel inherits it
    start = time.monotonic()
    try:
        papermill.execute_notebook(str(src), str(tmp), parameters=PARAMETERS[name],
                                   cwd=str(CHECKOUT), progress_bar=False)
        read = sorted(set(log.read_text().split())) if log.exists() else []
    finally:
        os.environ.pop(registry.READ_LOG, None)
        log.unlink(missing_ok=True)
    nb = json.loads(tmp.read_text())
    nb["metadata"][KEY] = {"source": f"notebooks/{name}.ipynb", "parameters": PARAMETERS[name],
                           "answer_key": True, "abtlab_commit": _git_commit(),
                           "date": timestamp(), "host_minutes": round((time.monotonic() - start) / 60, 2),
                           "results": {n: registry.fingerprint(n) for n in read}}
    tmp.write_text(json.dumps(nb, indent=1) + "\n")
    dest.unlink(missing_ok=True)
    os.replace(tmp, dest)
    return dest


def changed_results(meta: dict, folder=None) -> list[str]:
    """The stored results an executed copy read (its metadata's `results`) whose file is
    not the one it read any more, or is gone."""
    return [n for n, fp in meta.get("results", {}).items() if registry.fingerprint(n, folder) != fp]


def stale() -> list[str]:
    """The executed copies whose code is not their notebook's any more, or whose stored
    results have changed since they were executed."""
    out = []
    for p in sorted(GALLERY.glob("*.ipynb")):
        if p.is_symlink():
            continue
        nb = json.loads(p.read_text())
        meta = nb["metadata"].get(KEY, {})
        source = CHECKOUT / meta.get("source", f"notebooks/{p.name}")
        if not source.exists() or code_of(nb) != code_of(json.loads(source.read_text())):
            out.append(f"{p.relative_to(CHECKOUT)}: its code is not {source.relative_to(CHECKOUT)}'s "
                       f"(abtlab results gallery {p.stem})")
        elif changed := changed_results(meta):
            out.append(f"{p.relative_to(CHECKOUT)}: the stored results {', '.join(changed)} changed "
                       f"since it was executed (abtlab results gallery {p.stem})")
    return out
