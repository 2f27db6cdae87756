"""`make demo`: the study notebooks executed on their embedded defaults into an HTML report
that opens with notebook 08's answer in the paper's terms (its cells tagged `answer`: the
table of throughput ratios with the write op timed, the fsync-timed ones beside them and the
unblocked threads per clock, then the two figures), then notebook 09's: the paper's machine
in the guest (stored results, virtual time) against the paper's stated values.

Each notebook runs on the real kernel (scratch ext4 on a loop device) where root and
loop devices are here and on the simulator otherwise (`force_sim`: always the
simulator); real-I/O notebooks run one at a time, the others two at a time. The
result is <out>/index.html linking one self-contained HTML page per notebook.
"""
from __future__ import annotations

from pathlib import Path
import html

from .report import Item, NOTEBOOK_DIR, notebook_parameters, run_batch, write_index

__all__ = ["run_demo", "run_demo_report", "demo_items", "answer_html", "ANSWER_NOTEBOOK"]

ANSWER_NOTEBOOK = "08_kernel_history"
PAPER_MACHINE_NOTEBOOK = "09_paper_machine"
ANSWER_TAG = "answer"


def demo_items(force_sim=False) -> list:
    """One report item per study notebook (notebooks/NN_*.ipynb), on its defaults."""
    items = []
    for nb in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")):
        # every data source of the notebook (data, metarates_data, ...), not only the first
        sources = [k for k in notebook_parameters(nb) if k == "data" or k.endswith("_data")]
        items.append(Item(nb, {k: "sim" for k in sources} if force_sim else {}, nb.stem))
    return items


def run_demo_report(out="demo-out", quiet=False, force_sim=False):
    """Run every study notebook into out/; return (outcomes, out/index.html)."""
    title = "abtlab demo: does a faster CPU slow parallel I/O here?"
    if not quiet:       # reading eight notebooks' parameters takes seconds: say so first
        print("abtlab demo: reading the study notebooks and which of them run real I/O here ...",
              flush=True)
    outcomes, _ = run_batch(demo_items(force_sim), Path(out), workers=2, title=title,
                            progress=None if quiet else print)
    named = {o.item.name: o for o in outcomes}
    answer, machine = named.get(ANSWER_NOTEBOOK), named.get(PAPER_MACHINE_NOTEBOOK)
    lead = [("The answer, in the paper's terms: throughput at 3.3 GHz over 1.6 GHz by kernel with "
             "each writer's write op timed (eq. 3), the fsync-timed ratio beside it, and the unblocked "
             "threads at each clock (trace evidence)", answer_html(answer))] if answer else []
    if machine is not None:
        lead.append(("On the paper's machine in the guest (Linux 3.4.2, four vCPUs each at the "
                     "clock, VIRTUAL TIME, stored results): Fig. 7a's quantities against the "
                     "paper's stated values (stars)", answer_html(machine, "notebook 09")))
    return outcomes, write_index(outcomes, Path(out), title, lead=lead)


def answer_html(outcome, label: str = "notebook 08") -> str:
    """The outputs of an executed notebook's cells tagged `answer` (tables as the
    notebook rendered them, figures as embedded PNG), or what went wrong."""
    # deferred: nbformat is optional or only for this
    import nbformat
    if outcome is None or outcome.ipynb is None:
        return f"<p class='label'>{label} did not run.</p>"
    parts = [] if outcome.status == "ok" else [
        f"<p class='label'>{label} failed: {html.escape(outcome.error[-500:])}</p>"]
    nb = nbformat.read(outcome.ipynb, as_version=4)
    for cell in nb.cells:
        if ANSWER_TAG in cell.metadata.get("tags", []):
            parts += [_output_html(o) for o in cell.get("outputs", [])]
    link = f"<p>From <a href='{html.escape(outcome.html.name)}'>{label}</a>.</p>" if outcome.html else ""
    return "\n".join(p for p in parts if p) + link


def _output_html(out) -> str:
    data = out.get("data", {})
    if "image/png" in data:
        return f"<img alt='figure' src='data:image/png;base64,{data['image/png'].strip()}'>"
    if "text/html" in data:                     # pandas' table, made by abtlab's notebook
        return data["text/html"]
    if out.get("output_type") == "stream":
        return f"<pre>{html.escape(out.get('text', ''))}</pre>"
    return ""


def run_demo(out="demo-out", quiet=False, force_sim=False) -> Path:
    """Run every study notebook into out/; return out/index.html."""
    return run_demo_report(out, quiet, force_sim)[1]
