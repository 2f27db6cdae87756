"""Writing a CPU's cpufreq limits and governor back: what a FrequencyPin undoes on exit
and what `abtlab cleanup` puts back from the state a killed pin saved."""
from __future__ import annotations

import json
from pathlib import Path

from ._shell import read, write

__all__ = ["set_limits", "put_back", "restore_saved"]


def set_limits(cf: Path, lo: int, hi: int):
    # The kernel refuses min > max at every step, so move whichever bound keeps it valid.
    if lo > int(read(cf / "scaling_max_freq")):
        write(cf / "scaling_max_freq", hi)
        write(cf / "scaling_min_freq", lo)
    else:
        write(cf / "scaling_min_freq", lo)
        write(cf / "scaling_max_freq", hi)


def restore_saved(state_file) -> list[str]:
    """Put back every CPU a dead FrequencyPin recorded (see `leftovers`); the cpufreq
    directories restored."""
    state = json.loads(Path(state_file).read_text())
    for cf, saved in state.items():
        put_back(Path(cf), saved)
    return list(state)


def put_back(cf: Path, saved: dict):
    write(cf / "scaling_governor", saved["scaling_governor"])
    set_limits(cf, int(saved["scaling_min_freq"]), int(saved["scaling_max_freq"]))
