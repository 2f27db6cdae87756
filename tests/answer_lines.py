"""A notebook's `Answer:` line against its own tables, read from the executed .ipynb: every
number the answer states must be a number the notebook also shows (a printed or displayed
table, a printed line), at the precision the answer gives it, unless the notebook's own
text states it (its markdown: the confidence level, a paper's year) or it is a paper's
figure the project keeps in data/reference/. An answer computed apart from the tables it
summarises, or from other data, then fails, whatever the notebook is.

Used by tests/present/test_notebooks.py for every notebook (one helper, no per-notebook
parsing)."""
from __future__ import annotations

import json
import re
from pathlib import Path

ANSWER = re.compile(r"^Answer: .*$", re.M)
# a number as printed: 3, -0.87, 1.2e+09, 1,234 (thousands), not a name's digits (lab_1, p10)
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")


def outputs_text(ipynb) -> list[str]:
    """Every text the executed notebook showed, in order: streams, and each result's or
    display's text/plain (a DataFrame's table) and text/html (its <td> cells)."""
    nb = json.loads(Path(ipynb).read_text())
    texts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append("".join(out.get("text", "")))
            data = out.get("data", {})
            for mime in ("text/plain", "text/html", "text/markdown"):
                if mime in data:
                    texts.append("".join(data[mime]))
    return texts


REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference"
# a confidence level is how an interval was made, not a number of the run: "95% CI",
# "simultaneous 95% CIs", "95% bootstrap CI", "(Bonferroni: 98.75% each)"
LEVEL = re.compile(r"\d+(?:\.\d+)?%(?= (?:bootstrap )?CIs?\b| each\b)")


def answer_and_tables(ipynb) -> tuple[str | None, str]:
    """(the notebook's Answer: line or None, the text of everything else it showed)."""
    text = "\n".join(outputs_text(ipynb))
    m = ANSWER.search(text)
    if m is None:
        return None, text
    return m.group(0), text[:m.start()] + text[m.end():]


def stated(ipynb) -> str:
    """What the notebook states besides its outputs: its markdown, and the papers' figures
    in data/reference/ (an answer may quote them beside what it measured)."""
    nb = json.loads(Path(ipynb).read_text())
    md = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    return "\n".join(md + [p.read_text() for p in sorted(REFERENCE.glob("*.csv"))])


def _value(token: str) -> float:
    return float(token.replace(",", ""))


def _decimals(token: str) -> int:
    """The precision the token is stated at: its decimals (1.2e+09: 1 decimal of 10^9)."""
    mant, _, exp = token.replace(",", "").lower().partition("e")
    d = len(mant.split(".")[1]) if "." in mant else 0
    return d - int(exp or 0)


def numbers(text: str) -> list[str]:
    """The numbers printed in text; a ratio's x (x0.87) is not part of a name."""
    return NUMBER.findall(re.sub(r"(?<![A-Za-z])x(?=[-+]?\d)", "x ", text))


def _significant(token: str) -> int:
    mant = token.replace(",", "").lower().partition("e")[0].lstrip("+-").replace(".", "")
    return len(mant.lstrip("0"))


def _half(token: str) -> float:
    return 0.5 * 10.0 ** -_decimals(token)


def unbacked(answer: str, tables: str) -> list[str]:
    """The answer's numbers that no number of the tables equals at the coarser of the two
    precisions (half a unit of the last digit; a table's own only from 3 significant digits
    on, so a row index 2 backs no 2.35, while a table's 2.497e+09 backs 2497490340.71)."""
    shown = [(_value(t), _half(t) if _significant(t) >= 3 else 0.0) for t in numbers(tables)]
    missing = []
    for token in numbers(LEVEL.sub("", answer)):
        a, half = _value(token), _half(token)
        if not any(abs(v - a) <= max(half, h) * (1 + 1e-9) for v, h in shown):
            missing.append(token)
    return missing
