"""Saved figures keep their titles: every title's box lies inside the saved image, also
when the title (provenance, a delayJC policy's parameters) is wider than the figure."""
import io

import matplotlib
import pytest

matplotlib.use("Agg")

from abtlab.present.plots import plot_metric  # noqa: E402
from tests.run_data import make_run  # noqa: E402

LONG = "delayjc:window=16ms,max_resets=64,max_age=1s"


def _titles_inside(fig):
    """Save the figure, then check each non-empty title's pixel box against the image."""
    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    w, h = Image.open(buf).size
    renderer = fig.canvas.get_renderer()
    texts = [fig._suptitle] + [a.title for a in fig.axes]
    boxes = [t.get_window_extent(renderer) for t in texts if t is not None and t.get_text()]
    assert boxes
    return [(b.x0 >= 0 and b.y0 >= 0 and b.x1 <= w and b.y1 <= h) for b in boxes]


@pytest.mark.parametrize("facet", [None, "policy"])
def test_titles_of_a_saved_throughput_plot_are_inside_the_image(facet):
    ds = make_run(policies=("ext4", LONG), reps=3)
    ds.attrs["freq_mode"] = "emulated"
    ds.attrs["clock"] = "virtual"          # the longest provenance label there is
    assert all(_titles_inside(plot_metric(ds, "throughput", facet=facet)))


def test_an_unwrapped_long_title_would_be_cut():
    """The check can fail: the same title set without the plot helpers' wrapping is cut."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4.2, 3.4))
    fig.suptitle("iozone throughput vs frequency - measured, frequency by icount shift "
                 "(whole guest CPU), guest points in VIRTUAL time (qemu icount)")
    fig.tight_layout()
    assert not all(_titles_inside(fig))
    from abtlab.present.figures import finish
    assert all(_titles_inside(finish(fig)))
