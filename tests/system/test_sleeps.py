"""Off-CPU intervals and their causes from a tracefs text trace (abtlab.system.sleeps)."""
import numpy as np
import pytest

from abtlab.system.sleeps import CAUSES, cause_of, comm_of, offcpu_table


def _switch(ts, prev, prev_pid, state, nxt, next_pid, cpu=0):
    return (f"      {prev}-{prev_pid}     [{cpu:03d}] d..3.  {ts}: sched_switch: prev_comm={prev} "
            f"prev_pid={prev_pid} prev_prio=120 prev_state={state} ==> next_comm={nxt} "
            f"next_pid={next_pid} next_prio=120")


def _stack(ts, comm, pid, frames, cpu=0):
    return [f"      {comm}-{pid}     [{cpu:03d}] d..3.  {ts}: <stack trace>"] + \
        [f" => {f}" for f in frames]


# 6.1 with a stacktrace trigger: a stack after each writer switch-out only
TRACE_61 = [
    _switch("1.000000", "abt-iozone", 56, "D", "abt-iozone", 57),
    *_stack("1.000001", "abt-iozone", 56, ["__schedule", "schedule", "wait_transaction_locked",
                                         "add_transaction_credits", "start_this_handle",
                                         "jbd2__journal_start", "ext4_da_write_begin"]),
    _switch("1.000500", "abt-iozone", 57, "R+", "jbd2/nullb1-8", 30),
    *_stack("1.000501", "abt-iozone", 57, ["__schedule", "preempt_schedule_irq",
                                         "asm_sysvec_apic_timer_interrupt"]),
    "   jbd2/nullb1-8-30      [000] .....  1.001000: jbd2_end_commit: dev 253,1 transaction 5 sync 0 head 4",
    _switch("1.002000", "jbd2/nullb1-8", 30, "S", "abt-iozone", 56),
    _switch("1.003000", "abt-iozone", 56, "D", "abt-iozone", 57),
    *_stack("1.003001", "abt-iozone", 56, ["__schedule", "schedule", "io_schedule",
                                         "bit_wait_io", "__wait_on_bit",
                                         "out_of_line_wait_on_bit", "do_get_write_access",
                                         "jbd2_journal_get_write_access"]),
    _switch("1.004000", "abt-iozone", 57, "D", "swapper/0", 0),
    *_stack("1.004001", "abt-iozone", 57, ["__schedule", "schedule", "rwsem_down_write_slowpath",
                                         "down_write", "ext4_buffered_write_iter"]),
    _switch("1.005000", "swapper/0", 0, "R", "abt-iozone", 56),
    _switch("1.006000", "swapper/0", 0, "R", "abt-iozone", 57),
    _switch("1.007000", "abt-iozone", 57, "D", "swapper/0", 0),   # never switched back in
]


def test_intervals_run_from_switch_out_to_switch_in_with_the_cause_from_the_stack():
    t = offcpu_table(TRACE_61, "abt-iozone")
    got = sorted(zip(t["pid"].tolist(), t["t_out"].tolist(), t["t_in"].tolist(), t["cause"].tolist()))
    assert got == [(56, 1_000_000_000, 1_002_000_000, "t_locked"),
                   (56, 1_003_000_000, 1_005_000_000, "shadow"),
                   (57, 1_000_500_000, 1_003_000_000, "cpu"),
                   (57, 1_004_000_000, 1_006_000_000, "inode_lock")]
    assert t["stacked"].all()
    assert set(t["cause"]) <= set(CAUSES)


def test_linux_34_stacks_every_event_and_only_a_writers_own_switch_out_keeps_one():
    lines = [
        _switch("2.000000", "abt-iozone", 70, "D", "jbd2/ram0-8", 31),
        *_stack("2.000000", "abt-iozone", 70, ["schedule", "do_get_write_access",
                                             "jbd2_journal_get_write_access"]),
        "   jbd2/ram0-8-31   [000]  2.000400: jbd2_commit_logging: dev 1,0 transaction 3 sync 0",
        *_stack("2.000400", "jbd2/ram0-8", 31, ["jbd2_journal_commit_transaction", "kjournald2"]),
        _switch("2.001000", "jbd2/ram0-8", 31, "S", "abt-iozone", 70),
        *_stack("2.001000", "jbd2/ram0-8", 31, ["schedule", "kjournald2"]),
        _switch("2.002000", "abt-iozone", 70, "D", "swapper/0", 0),   # no stack: 'other'
        _switch("2.003000", "swapper/0", 0, "R", "abt-iozone", 70),
    ]
    t = offcpu_table(lines, "abt-iozone")
    assert t["cause"].tolist() == ["shadow", "other"]
    assert t["stacked"].tolist() == [True, False]
    assert (t["t_in"] - t["t_out"]).tolist() == [1_000_000, 1_000_000]


@pytest.mark.parametrize("state, stack, cause", [
    ("R", [], "cpu"), ("R+", ["__schedule"], "cpu"), ("S", ["futex_wait"], "other"),
    ("D", ["schedule", "balance_dirty_pages", "wait_transaction_locked"], "dirty"),
    ("D", ["schedule", "jbd2_log_wait_commit", "ext4_sync_file"], "journal_other"),
    ("D", ["schedule", "io_schedule", "folio_wait_bit_common", "folio_wait_writeback"], "page"),
    ("D", ["schedule", "wait_transaction_locked+0x7a/0xb0"], "t_locked"),
    ("D", ["0xffffffff812ed2ff"], "other"),
])
def test_the_frame_nearest_the_sleep_decides(state, stack, cause):
    assert cause_of(state, stack) == cause


def test_a_threads_command_name_is_the_programs_basename_cut_as_the_kernel_cuts_it():
    assert comm_of("/abt/abt-iozone") == "abt-iozone"
    assert comm_of("/abt/a-very-long-program-name") == "a-very-long-pro"


def test_other_threads_and_an_empty_trace_give_no_interval():
    assert offcpu_table(TRACE_61, "fio")["pid"].size == 0
    t = offcpu_table([], "abt-iozone")
    assert t["pid"].size == 0 and t["pid"].dtype == np.int64


def test_oncpu_intervals_of_the_workloads_threads_per_cpu():
    from abtlab.system.sleeps import oncpu_table
    lines = [
        _switch("1.000000", "abt-iozone", 56, "R", "abt-iozone", 57),   # 56's start unseen
        _switch("1.000100", "swapper/1", 0, "R", "abt-iozone", 58, cpu=1),
        *_stack("1.000101", "abt-iozone", 56, ["__schedule", "schedule"]),
        _switch("1.000500", "abt-iozone", 57, "R+", "jbd2/vda-8", 30),
        _switch("1.000700", "abt-iozone", 58, "D", "swapper/1", 0, cpu=1),
        _switch("1.002000", "jbd2/vda-8", 30, "S", "abt-iozone", 56),
        _switch("1.003000", "abt-iozone", 56, "D", "abt-iozone", 57),
        _switch("1.004000", "swapper/1", 0, "R", "abt-iozone", 58, cpu=1),   # to the end: left out
    ]
    t = oncpu_table(lines, "abt-iozone")
    got = sorted(zip(t["pid"], t["cpu"], t["t_in"], t["t_out"]))
    assert got == [(56, 0, 1_002_000_000, 1_003_000_000), (57, 0, 1_000_000_000, 1_000_500_000),
                   (58, 1, 1_000_100_000, 1_000_700_000)]
    empty = oncpu_table([], "abt-iozone")
    assert set(empty) == {"pid", "cpu", "t_in", "t_out"} and empty["t_in"].size == 0
