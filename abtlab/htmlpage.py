"""A self-contained HTML page of figures and tables (images embedded as base64 PNG)."""
from __future__ import annotations

import base64
import html
import io
from pathlib import Path

__all__ = ["fig_to_img", "write_page"]


def fig_to_img(fig, alt="figure") -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


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
