"""The last step of every plot helper: titles that fit, so a saved figure keeps them.

A title wider than its figure (the provenance label makes titles long) is clipped by
`savefig`, and tight_layout does not wrap text; so each title is wrapped to the width it
has (the figure for the suptitle, its axes for a panel title) before the layout is set.
"""
from __future__ import annotations

import textwrap

__all__ = ["finish"]


def _fit(text_artist, width_px, renderer, tries=4):
    """Rewrap a Text until its rendered width is within width_px."""
    for _ in range(tries):
        text = text_artist.get_text()
        w = text_artist.get_window_extent(renderer).width
        if not text or w <= width_px:
            return
        longest = max(len(line) for line in text.splitlines())
        chars = max(8, int(longest * width_px / w * 0.95))
        text_artist.set_text("\n".join(textwrap.fill(line, chars) for line in text.splitlines()))


def finish(fig):
    """Wrap the figure's suptitle and panel titles to their space, then lay it out
    (tight_layout, which makes room for the wrapped lines). Returns fig."""
    renderer = fig.canvas.get_renderer()
    sup = getattr(fig, "_suptitle", None)
    if sup is not None:
        _fit(sup, fig.bbox.width * 0.98, renderer)
    for ax in fig.axes:
        for t in (ax.title, ax._left_title, ax._right_title):
            # a panel's title may use its axes' width plus its share of the margins
            _fit(t, min(fig.bbox.width * 0.98, ax.bbox.width * 1.1), renderer)
    fig.tight_layout()
    return fig
