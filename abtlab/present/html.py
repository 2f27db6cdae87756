"""A self-contained HTML page (the report index): sections of trusted HTML made by abtlab."""
from __future__ import annotations

import html
from pathlib import Path

__all__ = ["write_page"]


def write_page(path, title: str, sections: list[tuple[str, str]]) -> Path:
    """sections: (heading, html body) pairs; bodies are trusted HTML made by abtlab."""
    body = "\n".join(f"<h2>{html.escape(h)}</h2>\n{b}" for h, b in sections)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
img{{max-width:100%}} table{{border-collapse:collapse;font-size:90%}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} .label{{color:#a00;font-weight:bold}}</style>
</head><body><h1>{html.escape(title)}</h1>
{body}
</body></html>"""
    path = Path(path)
    path.write_text(page)
    return path
