"""`make demo`: a small end-to-end study on the embedded default, ending in an HTML page.

Real kernel (scratch ext4 on a loop device) when root and loop devices are here,
otherwise the simulator; the page says which.
"""
from __future__ import annotations

import html
from pathlib import Path

__all__ = ["run_demo"]

REAL = dict(threads="16,64", file_size="128k", record_size="32k", policy="ext4,nojc",
            freq="emulated:1.6,2.0,2.6,3.3", device="none", reps=3)
SIM = dict(threads="64,256", file_size="128k", record_size="32k", policy="ext4,nojc",
           freq="1.6,2.0,2.6,3.3", device="hdd7200", reps=5)


def run_demo(out="demo-out", quiet=False, force_sim=False) -> Path:
    from . import runner
    from .backends import get
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    real = not force_sim and get("iozone").available().ok
    backend, params = ("iozone", REAL) if real else ("sim", SIM)
    params = dict(params)
    reps = params.pop("reps")
    nc = out / "demo.nc"
    for stale in (nc,):
        stale.unlink(missing_ok=True)
    ds = runner.run(backend, out=nc, reps=reps, quiet=quiet, warmup=1 if real else 0,
                    command=f"abtlab demo --out {out}", **params)
    return _page(ds, out, backend, real)


def _page(ds, out, backend, real):
    from .htmlpage import fig_to_img, write_page
    from .plots import plot_metric
    from .summary import point_stats, provenance_label
    facet = "threads"
    figs = "".join(fig_to_img(plot_metric(ds, v, facet=facet), v)
                   for v in ("throughput", "nonblocked_threads", "commits", "mean_commit_wait"))
    table = point_stats(ds, "throughput").to_dataframe().reset_index()
    where = ("a scratch ext4 on a loop device of this machine (real jbd2 journal, real fsync)"
             if real else "the SIMULATOR (no root or loop devices here)")
    intro = (f"<p>Backend <b>{backend}</b> on {html.escape(where)}. Data: "
             f"<span class='label'>{html.escape(provenance_label(ds))}</span>. "
             f"Kernel {html.escape(str(ds.attrs.get('kernel', '?')))}, CPU {html.escape(str(ds.attrs.get('cpu', '?')))}. "
             f"Command: <code>{html.escape(str(ds.attrs.get('command', '')))}</code></p>")
    sections = [("What ran", intro), ("Throughput, nonblocked threads, commits, commit wait", figs),
                ("Throughput per point (mean, 95% CI, RSD over repetitions)",
                 table.to_html(index=False, float_format=lambda v: f"{v:.4g}"))]
    return write_page(out / "index.html", "abtlab demo: does a faster CPU slow parallel I/O here?", sections)
