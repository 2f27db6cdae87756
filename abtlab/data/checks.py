"""What a command checks of a dataset a user names, before reading it as a run: that it
is abtlab's at all, and that it has what the asked-for table needs (two frequencies for
a slowdown), each failure saying what to do instead."""
from __future__ import annotations

from ..errors import ConfigError
from . import schema

__all__ = ["check_abtlab_dataset", "check_frequencies"]


def check_abtlab_dataset(ds, path, field="run") -> None:
    """ConfigError naming `path` as not an abtlab dataset when it has neither abtlab's
    version attribute nor a `rep` dim (a NetCDF file written by something else)."""
    if "abtlab_version" in ds.attrs or schema.REP in ds.dims:
        return
    raise ConfigError(field, str(path), "an abtlab dataset (written by `abtlab run`, `sweep` or "
                      "abtlab.run): this file is not an abtlab dataset (no abtlab_version "
                      "attribute, no rep dim)")


def check_frequencies(ds, var, option="--slowdown") -> None:
    """ConfigError for a ratio between clocks on a run with fewer than two frequencies,
    with the command line that makes one."""
    n = ds.sizes.get(schema.FREQ, 0) if var not in ds else \
        (ds[var].sizes.get(schema.FREQ, 0))
    if n >= 2:
        return
    backend = ds.attrs.get("backend", "sim")
    raise ConfigError(option, f"a run with {n} frequenc{'y' if n == 1 else 'ies'}",
                      f"a run with two or more: run it again with --freq 1.6,3.3, e.g. "
                      f"`abtlab run {backend} --freq 1.6,3.3 --out RUN.nc`"
                      + (" (emulated:1.6,3.3 on the host)" if backend != "sim" else ""))
