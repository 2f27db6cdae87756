"""A real browser (headless Chromium) opens an HTML report and the plots render.

The page is shot twice, with images on and off: the plots account for many pixels
that differ between the two, so a report whose images are missing or broken fails."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from abtlab.present.report import NOTEBOOK_DIR, Item, run_batch

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package chromium)")


def _shot(page, png, tmp_path, images=True):
    profile = tmp_path / f"profile-{png.stem}"
    profile.mkdir()
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
           "--window-size=1200,2400"]
    if not images:
        cmd.append("--blink-settings=imagesEnabled=false")
    subprocess.run(cmd + [page.as_uri()], check=True, timeout=120, capture_output=True)
    from matplotlib.image import imread
    return imread(png)[..., :3]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("shot")
    item = Item(NOTEBOOK_DIR / "01_slowdown.ipynb",
                dict(data="sim", sim_threads="64", freqs="1.6,3.3", reps=2, metarates=False), "slowdown")
    outcomes, index = run_batch([item], out, workers=1, progress=None)
    assert outcomes[0].status == "ok", outcomes[0].error
    return outcomes[0].html, index


def test_html_embeds_png(report):
    page, index = report
    html = page.read_text()
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,[A-Za-z0-9+/]{1000}', html)) >= 3
    assert 'href="slowdown.html"' in index.read_text()


def test_screenshot_shows_plots(report, tmp_path):
    page, index = report
    with_img = _shot(page, tmp_path / "with.png", tmp_path)
    without = _shot(page, tmp_path / "without.png", tmp_path, images=False)
    assert with_img.shape == without.shape
    nonwhite = (with_img < 0.95).any(axis=-1).mean()
    assert nonwhite > 0.05, f"page looks blank: {nonwhite:.1%} non-white pixels"
    # missing or broken images add ~0%; three rendered small plots (white axes, thin
    # lines) add 4-8% of a 1200 x 2400 shot
    differ = (np.abs(with_img - without) > 0.1).any(axis=-1).mean()
    assert differ > 0.02, f"images add only {differ:.1%} of the pixels: plots not rendered"
    # plots use colour (lines, CI bands): the shot with images has many more coloured pixels
    sat = lambda im: (im.max(axis=-1) - im.min(axis=-1) > 0.25).mean()  # noqa: E731
    assert sat(with_img) > 1.1 * sat(without)


def test_index_page_renders(report, tmp_path):
    _, index = report
    shot = _shot(index, tmp_path / "index.png", tmp_path)
    assert (shot < 0.95).any(axis=-1).mean() > 0.005
