"""Dataset conventions: the names, units and required attributes of every run dataset.

This module *describes*; `abtlab.system` *collects*. Every dim, variable and attr
name used elsewhere comes from the constants here, so one place says what a run is.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = ["Var", "VARIABLES", "FACTOR_DIMS", "REQUIRED_ATTRS", "FREQ_MODES", "validate",
           "REP", "OP_DIM", "COMMIT_DIM", "BATCH_DIM", "RUN_ID", "SWEEP_SPEC", "RENAMED",
           "current_names"]

# dims of swept factors (a backend uses the subset it has) and of raw repetitions
POLICY, FREQ, THREADS, FILE_SIZE, RECORD_SIZE, FILES, DEVICE, REP = (
    "policy", "freq_ghz", "threads", "file_size", "record_size", "files", "device", "rep")
MACHINE = "machine"
FACTOR_DIMS = (POLICY, FREQ, THREADS, FILE_SIZE, RECORD_SIZE, FILES, DEVICE, MACHINE,
               "workload", "mode", "block_size", "lock", "work")
# ragged traces live on their own dims, tagged with the run they belong to
OP_DIM, COMMIT_DIM, BATCH_DIM = "op", "commit", "batch"
RUN_ID = "run_id"
# one row per run or workload of a table a ranking reads (abtlab.bps.study, lab 6's runs)
RUN = "run"
SWEEP_SPEC = "sweep_spec"    # attr: JSON of what `--resume` must match (factors, options, seed)
FAILED_RUNS = "failed_runs"  # attr: a keep-going sweep's missing runs, one line each with its error
# attrs of a merged dataset (abtlab.data.merge): its sources, the levels each had where they
# differ, and the sources it kept that repeat each other
MERGED_FROM, MERGED_LEVELS, MERGED_DUPLICATES = "merged_from", "merged_levels", "duplicates"
# attrs of a guest run's kernel knobs (abtlab.machines.kernel_knobs); "kernel" stays uname -r
ATTR_KERNEL_PRESET, ATTR_LEGACY, ATTR_SCHED, ATTR_IOSCHED = (
    "kernel_preset", "kernel_legacy", "kernel_sched", "kernel_iosched")
ATTR_BFQ = "kernel_bfq"      # the BFQ tunables a guest run wrote ("default": none)
FREQ_MODES = ("real", "emulated", "simulated", "virtual")
# the dataset schema's version, stored in every dataset written (attr schema_version). 1: no
# attr, `throughput` timed to the end of each fsync; 2: `throughput` is the write op (eq. 3 as
# IOzone reports it) and `throughput_fsync` the fsync-timed one
ATTR_SCHEMA_VERSION, SCHEMA_VERSION = "schema_version", 2
ATTR_MIGRATED_FROM = "migrated_from"    # the version a dataset was read from (abtlab.data.migrate)
# attrs of a stored result (abtlab.results): how to regenerate it and what it ran on
ATTR_RESULT_COMMAND, ATTR_RESULT_SAYS, ATTR_RESULT_COMMIT = (
    "result_command", "result_says", "abtlab_commit")
ATTR_HOST_MINUTES, ATTR_RESULT_DATE, ATTR_REDUCED_FROM = "host_minutes", "date", "reduced_from"


@dataclass(frozen=True)
class Var:
    name: str
    units: str
    long_name: str


VARIABLES = {v.name: v for v in [
    Var("throughput", "bytes/s", "IOzone initial-write throughput, eq. (3): sum over threads of "
        "S / T_write, T_write = first write start to last write end (IOzone's default report; "
        "the fsync runs after the clock stops), the paper's quantity"),
    Var("throughput_fsync", "bytes/s", "eq. (3) with T_write running to the end of the thread's "
        "fsync (IOzone -e)"),
    Var("throughput_stonewall", "bytes/s", "eq. (3) with IOzone's stonewalling (its default): each "
        "thread's bytes and time up to its first record after the first thread finished writing"),
    Var("fcr", "files/s", "Metarates file creation rate, eq. (9): files per second of one "
        "worker's create path (open, any write, fsync, close), not an aggregate"),
    Var("fcr_aggregate", "files/s", "aggregate file creation rate: all files / wall time from "
        "the first open to the last close (as mdtest's rate; not eq. 9)"),
    Var("fcr_approx", "files/s", "file creation rate from fsync time only, eq. (10)"),
    Var("elapsed", "s", "wall time from first op start to last op end"),
    Var("start_phase", "s", "the seeded wait in the guest before the workload starts (a "
        "repetition's own phase of the drive's rotation, the timer ticks and the journal's "
        "commit timer, as a real machine's repetitions have; guest option start_phase)"),
    Var("commits", "1", "journal commits in the run (tracefs jbd2_end_commit)"),
    Var("jbd2_info_commits", "1", "commit delta from /proc/fs/jbd2/<dev>/info"),
    Var("jbd2_shadow_waits", "1", "handles that slept on a buffer being written to the log "
        "(guest kernel's legacy.patch counter in /proc/fs/jbd2/<dev>/info)"),
    Var("jbd2_shadow_wait", "s", "total time of those sleeps"),
    Var("device_requests", "1", "requests the emulated disk served during the run"),
    Var("device_positionings", "1", "of those, requests that paid seek + rotation"),
    Var("threads_clear_of_commits", "1", "threads whose write op shares no time with any commit "
        "(span overlap, not the paper's unblocked count: blind to waits that end before a "
        "commit's end event; unblocked_threads is eq. 4 on the trace evidence)"),
    Var("blocked_full", "1", "threads fully blocked (Y) by some commit, eq. (5)"),
    Var("blocked_partial", "1", "threads partially blocked (Z) by some commit and in no Y, eq. (6)"),
    Var("unblocked_threads", "1", "threads whose write op never slept on the journal (eq. 4 on "
        "trace evidence: no handle start waiting on a locked transaction, no shadow-buffer or "
        "other journal wait while a commit ran; abtlab.model.waits)"),
    Var("journal_blocked_full", "1", "threads that slept on the journal during a commit which "
        "started after their write op began (Y of eq. 5, on trace evidence)"),
    Var("journal_blocked_partial", "1", "threads that slept on the journal during a commit which "
        "was running when their write op began, and in no Y (Z of eq. 6, on trace evidence)"),
    Var("write_wait_journal", "s", "mean time per writer its write op slept on the journal "
        "(t_locked + shadow + journal_other)"),
    *(Var(f"write_wait_{c}", "s", f"mean time per writer its write op was off the CPU: {d}")
      for c, d in (("cpu", "runnable, waiting for a CPU"),
                   ("t_locked", "a handle start waiting while a commit held the transaction locked"),
                   ("shadow", "a buffer the commit was writing to the log"),
                   ("journal_other", "other journal waits (log space, a commit to finish)"),
                   ("dirty", "dirty-page throttling"), ("page", "a page lock or writeback"),
                   ("inode_lock", "an inode rwsem or mutex"), ("other", "any other sleep"))),
    Var("lead_to_commit_cpu", "s", "the workload's CPU time (its threads on a CPU, summed over "
        "CPUs, from the trace's sched_switch) between the lead writer's first write start and "
        "the first commit's start; the rest of that delay is other tasks' CPU and idle time"),
    Var("writer_lag_cpu", "s", "median over writers of the workload's CPU time (summed over "
        "CPUs) between the lead writer's first write start and the writer's"),
    Var("blocked_inside", "1", "threads whose write op overlaps a commit and ends inside it (I), "
        "in no Y or Z: the stalls 3.4's T_LOCKED and shadow-buffer waits release before the commit ends"),
    Var("mean_commit_wait", "s", "mean time from a thread's fsync start to the end of the commit that covered it"),
    Var("mean_fsync", "s", "mean fsync duration"),
    Var("mean_write", "s", "mean T_write per thread, eq. (4): the write op, fsync excluded"),
    Var("mean_write_fsync", "s", "mean T_write per thread with its fsync timed (IOzone -e)"),
    Var("batches", "1", "delayJC batches (flushes)"),
    Var("fsync_calls", "1", "fsync/fdatasync calls made by the workload"),
    Var("bps", "blocks/s", "blocks per second of overlapped I/O time (He et al., IPDPS Workshops 2013)"),
    Var("iops", "ops/s", "I/O operations per second of run time"),
    Var("bandwidth", "bytes/s", "bytes moved per second of run time"),
    Var("arpt", "s", "average response time per request"),
    Var("power_w", "W", "mean power of the run (RAPL, or a labelled power model)"),
    Var("energy_j", "J", "energy of the run (RAPL, or a labelled power model)"),
    Var("edp", "J s", "energy-delay product"),
    Var(RUN_ID, "1", "index of this run's records in the op/commit/batch tables"),
]}
# variables stored under an earlier name: old -> current (a dataset is read with the current)
RENAMED = {"nonblocked_threads": "threads_clear_of_commits"}

# ragged per-record tables: column name -> (dim, units)
OP_COLUMNS = {"op_run": "1", "op_tid": "1", "op_kind": "1", "op_flags": "1",
              "op_bytes": "bytes", "op_t_start": "ns", "op_t_end": "ns"}
COMMIT_COLUMNS = {"commit_run": "1", "commit_tid": "1", "commit_start": "ns",
                  "commit_locking": "ns", "commit_flushing": "ns", "commit_logging": "ns",
                  "commit_end": "ns", "commit_handles": "1", "commit_blocks": "1"}
BATCH_COLUMNS = {"batch_run": "1", "batch_open": "ns", "batch_close": "ns",
                 "batch_members": "1", "batch_resets": "1",
                 "batch_flush_start": "ns", "batch_flush_end": "ns", "batch_window_us": "us"}
# the op table's small columns (a run's position, a thread, an op kind, flags: 16 bits
# or 32 in the binary trace record) stored in 32 bits: 40 bytes a record instead of 56,
# so a 256-thread sweep of 100 repetitions writes and reads ~30% less; the rest int64
TABLE_DTYPES = {"op_run": "int32", "op_tid": "int32", "op_kind": "int32", "op_flags": "int32"}


def table_dtype(column: str) -> str:
    """The stored integer type of a table column."""
    return TABLE_DTYPES.get(column, "int64")

REQUIRED_ATTRS = {
    "backend": "driver name from the registry",
    "freq_mode": "real | emulated | simulated",
    "filesystem": "filesystem type and journal mode of the runs",
    "mount_options": "mount options of the scratch filesystem",
    "kernel": "uname -r",
    "cpu": "CPU model and logical count",
    "abtlab_version": "package version",
    "command": "the command line or call that made the run",
    "start_time": "ISO 8601 UTC",
    "end_time": "ISO 8601 UTC",
}


def validate(ds) -> None:
    """Raise ConfigError naming the first thing in ds that breaks the conventions."""
    for key in REQUIRED_ATTRS:
        if key not in ds.attrs:
            raise ConfigError(f"attrs.{key}", None, REQUIRED_ATTRS[key])
    if ds.attrs["freq_mode"] not in FREQ_MODES:
        raise ConfigError("attrs.freq_mode", ds.attrs["freq_mode"], " | ".join(FREQ_MODES))
    for name, var in ds.data_vars.items():
        if name in VARIABLES or name in OP_COLUMNS or name in COMMIT_COLUMNS or name in BATCH_COLUMNS:
            if "units" not in var.attrs:
                raise ConfigError(f"{name}.attrs.units", None, "a units string")
    if REP in ds.dims and ds.sizes[REP] < 1:
        raise ConfigError("rep", ds.sizes[REP], "at least one repetition")


def current_names(ds):
    """ds with each variable stored under an earlier name (RENAMED) under its current one."""
    old = {k: v for k, v in RENAMED.items() if k in ds.variables and v not in ds.variables}
    return ds.rename_vars(old) if old else ds


def timestamp() -> str:
    """Now as a dataset's start_time/end_time: ISO 8601, UTC, whole seconds."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
