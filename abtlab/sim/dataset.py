"""Simulated RunResults -> one run dataset (abtlab.data.assemble, with the simulator's attrs)."""
from __future__ import annotations

import itertools

from ..data.schema import timestamp

__all__ = ["assemble_sim_dataset"]


def assemble_sim_dataset(levels: dict, reps: int, results: list, command: str,
                         start_time: str, traces: bool = True):
    """levels: factor dim -> list of values (grid order = itertools.product, rep last);
    results: RunResults in that order. traces=False leaves the op and commit tables empty."""
    from ..data.assemble import assemble_results
    from ..data.result import RunResult
    points = [dict(zip(levels, combo)) for combo in itertools.product(*levels.values())]
    runs = [(points[k // reps], k % reps,
             r if traces else RunResult(scalars=r.scalars, attrs=r.attrs))
            for k, r in enumerate(results)]
    attrs = _attrs(results[0].attrs, levels, command, start_time)
    attrs["filesystem"] = "; ".join(sorted({r.attrs["filesystem"] for r in results}))
    return assemble_results(runs, levels, attrs)


def _attrs(first, levels, command, start_time):
    import platform
    from ..about import __version__
    per_point = {f"sim_{k}" for k in levels} | {"sim_policy", "sim_freq_ghz"}
    attrs = {k: v for k, v in first.items() if k not in per_point}
    attrs.update(kernel=f"simulated (host {platform.release()})",
                 cpu=f"simulated, {first.get('sim_cores', '?')} cores",
                 abtlab_version=__version__, command=command,
                 start_time=start_time, end_time=timestamp())
    return attrs
