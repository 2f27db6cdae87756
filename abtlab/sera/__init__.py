"""SERA-IO (Ge, Feng and Sun, "SERA-IO: Integrating Energy Consciousness into Parallel I/O
Middleware", IEEE/ACM CCGrid 2012): I/O patterns, target-frequency tables, libsera, policy comparison.

    import abtlab.sera as sera
    table = sera.load("data/reference/sera_target_table_example.csv")
    table.lookup(sera.IOPattern.make("read", "2MB"))          # -> (1.8, entry)
    df = sera.compare(sera.sim_workloads(), freqs=(0.8, 1.3, 1.8, 2.5))
"""
from __future__ import annotations

from .compare import POLICIES, Phase, Workload, build_table, compare, slowdown_freqs, utilisation
from .patterns import IOPattern, format_size, parse_size, posix_pattern
from .preload import environment, read_decisions, write_table
from .profile import (DEFAULT_THRESHOLD_S, Profile, ProfilePoint, access_type, load_profile,
                      profile_pattern, target_frequency)
from .table import FrequencyTable, TableEntry, build, load, lookup, save
from .workloads import WORKLOADS, emulated_workloads, sim_workloads

__all__ = ["IOPattern", "parse_size", "format_size", "posix_pattern",
           "ProfilePoint", "Profile", "load_profile", "profile_pattern", "target_frequency",
           "access_type", "DEFAULT_THRESHOLD_S",
           "TableEntry", "FrequencyTable", "build", "load", "save", "lookup",
           "write_table", "environment", "read_decisions",
           "Phase", "Workload", "POLICIES", "compare", "build_table", "utilisation",
           "slowdown_freqs", "WORKLOADS", "sim_workloads", "emulated_workloads"]
