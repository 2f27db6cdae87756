"""Export a run dataset as a pyperf JSON suite, so `python -m pyperf compare_to a.json
b.json` compares two runs point by point with pyperf's own tables and significance test.

One benchmark per point (named `dim=value,...` over every factor dim, so two exports of
the same grid match by name), one pyperf run per finished repetition (NaN skipped).
pyperf values are times where lower is better, so:
  - a time variable (units "s", e.g. elapsed) is exported as is;
  - a rate (units "<x>/s", e.g. throughput in bytes/s) is exported as its inverse,
    seconds per <x> (throughput -> seconds per byte), so "faster" in compare_to means
    higher throughput; the benchmark metadata says which conversion was made.
The dataset's provenance (freq_mode, backend, command) goes into each run's metadata;
no metadata of the exporting machine is collected (the runs were not measured here).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import schema
from ..errors import ConfigError
from ..stats.values import _values

__all__ = ["export_pyperf", "benchmark_name"]

_ATTRS = ("freq_mode", "backend", "command", "filesystem", "kernel", "cpu", "start_time")


def _conversion(da, var):
    """(function on values, description) turning var into seconds, lower = better."""
    units = str(da.attrs.get("units") or getattr(schema.VARIABLES.get(var), "units", ""))
    if units == "s":
        return (lambda v: v), f"{var} in seconds"
    if units.endswith("/s") and len(units) > 2:
        per = units[:-2].rstrip("s") or "unit"
        return (lambda v: 1.0 / v), f"seconds per {per} = 1 / {var} ({units})"
    raise ConfigError("var", f"{var} (units {units!r})",
                      "a time (units 's', e.g. elapsed) or a rate (units '<x>/s', e.g. throughput)")


def _fmt(v) -> str:
    v = v.item() if hasattr(v, "item") else v
    return f"{v:g}" if isinstance(v, float) else str(v)


def benchmark_name(point: dict) -> str:
    """'policy=ext4,freq_ghz=1.6,threads=64' from {dim: value} (dim order kept)."""
    return ",".join(f"{d}={_fmt(v)}" for d, v in point.items())


def _metadata(ds, name, how):
    md = {"name": name, "unit": "second", "description": f"abtlab export: {how}"}
    for k in _ATTRS:
        v = str(ds.attrs.get(k, "")).replace("\n", " ").strip()
        if v:
            md[f"abtlab_{k}"] = v
    return md


def export_pyperf(ds, path, var="throughput") -> dict:
    """Write ds[var] as a pyperf BenchmarkSuite JSON at path (replaced if present).

    Returns {"path", "benchmarks", "runs", "skipped"}: skipped lists points without
    any finite repetition. Values must be > 0 (pyperf's rule): ConfigError otherwise."""
    # deferred: pyperf is optional or only for this
    import pyperf
    da = _values(ds, var)
    convert, how = _conversion(da, var)
    dims = [d for d in da.dims if d != schema.REP]
    x = da.transpose(*dims, schema.REP).values
    if (x[np.isfinite(x)] <= 0).any():
        raise ConfigError(var, "values <= 0", "positive values (pyperf stores times > 0)")
    benches, skipped, runs = [], [], 0
    for idx in np.ndindex(x.shape[:-1]):
        name = benchmark_name({d: da[d].values[i] for d, i in zip(dims, idx)})
        vals = x[idx][np.isfinite(x[idx])]
        if not vals.size:
            skipped.append(name)
            continue
        md = _metadata(ds, name, how)
        benches.append(pyperf.Benchmark([pyperf.Run([float(convert(v))], metadata=md,
                                                    collect_metadata=False) for v in vals]))
        runs += vals.size
    path = Path(path)
    if not path.parent.is_dir():
        raise ConfigError("path", str(path), "a file in an existing directory")
    pyperf.BenchmarkSuite(benches).dump(str(path), replace=True)
    return {"path": path, "benchmarks": len(benches), "runs": runs, "skipped": skipped}
