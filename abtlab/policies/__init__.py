"""ABT policy specs, shared by real runs and the simulator.

Grammar (one spec per string):
    ext4                              default jbd2 journal, data=ordered
    nojc                              no journal (mkfs.ext4 -O ^has_journal)
    delayjc:window=16ms,max_resets=64[,max_age=1s]   fixed-window group commit
    delayjc:adaptive[,max_resets=N,max_age=T]        window tuned at run time
    kdelayjc:window=2ms,max_resets=8  the same inside jbd2 (backends/kernel/delayjc.patch)
    batch:min_us=A,max_us=B           ext4 min_batch_time/max_batch_time mount options
Durations accept ns, us, ms, s (a bare number is microseconds).
"""
from __future__ import annotations

from .parse import KINDS, parse, parse_list
from .policy import Policy, parse_duration_us

__all__ = ["Policy", "parse", "parse_list", "parse_duration_us", "KINDS"]
