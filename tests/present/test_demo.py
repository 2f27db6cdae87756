"""abtlab.present.demo: its notebooks, and the index page that opens with notebook 08's answer."""
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from abtlab.present import demo
from abtlab.present.report import NOTEBOOK_DIR, Item, Outcome, write_index


def test_demo_runs_every_study_notebook_with_08():
    names = [it.name for it in demo.demo_items()]
    assert demo.ANSWER_NOTEBOOK in names
    assert names == sorted(p.stem for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    sim = {it.name: it.parameters for it in demo.demo_items(force_sim=True)}
    assert {p.get("data") for p in sim.values()} == {"sim"}
    assert sim["01_slowdown"]["metarates_data"] == "sim"      # no real Metarates under --sim


def _executed(tmp_path, table="<table><tr><td>host</td><td>not run: no root</td></tr></table>"):
    cells = [new_code_cell("x", outputs=[new_output("stream", name="stdout", text="not the answer")]),
             new_code_cell("y", metadata={"tags": ["answer"]}, outputs=[
                 new_output("execute_result", data={"text/html": table, "text/plain": "t"}, execution_count=1),
                 new_output("display_data", data={"image/png": "iVBORw0KGgo=\n"})])]
    path = tmp_path / "08_kernel_history.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    page = tmp_path / "08_kernel_history.html"
    page.write_text("<html></html>")
    item = Item(NOTEBOOK_DIR / "08_kernel_history.ipynb", {}, demo.ANSWER_NOTEBOOK)
    return Outcome(item, "ok", 1.0, path, page)


def test_answer_is_the_tagged_cells_outputs(tmp_path):
    o = _executed(tmp_path)
    html = demo.answer_html(o)
    assert "not run: no root" in html and "data:image/png;base64,iVBORw0KGgo=" in html
    assert "not the answer" not in html and 'href=\'08_kernel_history.html\'' in html
    o.status, o.error = "failed", "RunError: guest boot timed out"
    assert "notebook 08 failed: RunError: guest boot timed out" in demo.answer_html(o)
    assert "did not run" in demo.answer_html(None)


def test_index_opens_with_the_answer(tmp_path):
    o = _executed(tmp_path)
    page = Path(write_index([o], tmp_path, "demo", lead=[("The answer", demo.answer_html(o))])).read_text()
    assert page.index("The answer") < page.index("not run: no root") < page.index("Notebooks")
