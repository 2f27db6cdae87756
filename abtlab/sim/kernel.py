"""The simulator's event loop: N threads on C cores, one device, one jbd2-like journal.

Mechanism (Chang et al., MASCOTS 2014, Figs. 4-6), with the journal and device in `journal`:
- CPU: N threads on C cores, round-robin run queue with a time slice (quantum); a
  thread keeps its core across CPU phases until its slice ends or it blocks; woken
  threads go to the front of the queue when `wake_front` (CFS favours sleepers).
- Every op: start, metadata-lock check (open and write() block while a commit holds
  the lock), CPU phase, then for fsync the block allocation (a handle, which waits for
  the lock too), the data write-back and the journal wait.
- Start: a barrier releases every thread when the last arrives; with I_POLL (IOzone's
  start: each child polls a shared flag with select(1 us)) every thread, the last too,
  wakes at its own poll timer's next expiry, up to I_POLL_US after the release, and
  needs a little CPU (I_C_POLL) before it writes: a release spread of fixed time.
- The journal thread (row n of the thread arrays) runs when a commit costs CPU
  (I_C_COMMIT > 0, see `journal`).
- Each op record also keeps when its thread began and ended waiting for a commit's
  lock (out_t columns 2-3, -1 if it did not): the simulator knows why a write slept.
`run_batch` runs many repetitions in one compiled call, reusing every array.
"""
from __future__ import annotations

import numpy as np

from . import journal as J
from .heap import fifo_cap, fpush, jit, jit_inline, pop, push, reset
from .state import (I_JBD2_FRONT, I_C_COMMIT, I_C_POLL, I_POLL, I_POLL_US, JBD2, JBD2_IDLE,
                    JBD2_QUEUED, JBD2_WAKE, BARRIER, COMMITTED, CORE, DATA_FSYNC, DIOREAD_NOLOCK,
                    DIRTY, EV_COMMIT, EV_DEV, EV_START, EV_TIMER, EV_UNLOCK, FSYNC, GEN, HANDLES,
                    HAVE_NUMBA, FH, FT, HSIZE, NCOMMIT, I_C_CLOSE, I_C_FSYNC, I_C_OPEN, I_C_WRITE,
                    I_CORES, I_DATA, I_DIOREAD, I_FLUSH_FIXED, I_FLUSH_PER_BYTE, I_FSYNC_ALLOC,
                    I_FSYNC_SPIN, I_INODE_WRITE, I_POLICY, I_QUANTUM, I_RECORD_BYTES, I_WAKE_FRONT,
                    LOCKED, NBAR, NJF, NJI, OPEN, PC, PHASE, SP, POL_NOJC, QH, QN, QT, REM, RUN,
                    SEQ, SLICE, TXN, W_BARRIER, W_COMMIT, W_CPU, W_DEV, W_LOCK, W_NONE, WAIT, WRITE,
                    WTXN)

__all__ = ["run_batch", "HAVE_NUMBA"]


@jit
def _arm(k, t, ct, cs, ji):
    """Core k's next CPU event. Cores keep their own event slot (at most one pending
    each) instead of the heap: most events are CPU events, and a scan of C slots is
    cheaper than a heap push and pop."""
    ji[SEQ] += 1
    ct[k] = t
    cs[k] = ji[SEQ]


@jit
def _enqueue(i, front, q, ji, ti):
    n = q.size
    ti[i, WAIT] = W_CPU
    if front:
        ji[QH] = (ji[QH] - 1) % n
        q[ji[QH]] = i
    else:
        q[ji[QT]] = i
        ji[QT] = (ji[QT] + 1) % n
    ji[QN] += 1


@jit
def _block(i, why, ti, core):
    k = ti[i, CORE]
    if k >= 0:
        core[k] = -1
        ti[i, CORE] = -1
    ti[i, WAIT] = why


@jit
def _cost(op, pr):
    if op == OPEN:
        return pr[I_C_OPEN]
    if op == WRITE:
        return pr[I_C_WRITE]
    if op == FSYNC:
        return pr[I_C_FSYNC]
    return pr[I_C_CLOSE]


@jit
def _device_wait(i, t, dur, xfer, nbytes, files, flush, pr, hf, hn, ji, jf, ti, core):
    # the thread sleeps until its request is served (on a server of the queue,
    # J.device), and with a write cache until the cache took it (then flushed it)
    end = J.write_req(t, dur, xfer, nbytes, files, pr, jf)
    if flush:
        end = J.flush_req(end, pr[I_FLUSH_FIXED], pr, jf)
    _block(i, W_DEV, ti, core)
    push(hf, hn, ji, end, EV_DEV, i)


@jit
def _join(i, ji, ti):
    """Thread i's change joins the running transaction (one handle per thread and txn)."""
    if ti[i, TXN] != ji[RUN]:
        ti[i, TXN] = ji[RUN]
        ji[HANDLES] += 1


@jit
def _allocates(i, pr, tf):
    """fsync with delalloc: the write-back allocates the file's blocks in a handle of the
    running transaction (ext4_map_blocks under ext4_writepages), so the fsync then needs
    that transaction committed, not only the one its writes joined."""
    return (pr[I_FSYNC_ALLOC] > 0 and tf[i, DIRTY] > 0 and int(pr[I_DATA]) == DATA_FSYNC
            and int(pr[I_POLICY]) != POL_NOJC)


@jit
def _flush(i, t, pr, nz, hf, hn, ji, jf, ti, tf, core):
    """fsync, data part: write back the thread's own dirty data. True if it must wait."""
    if tf[i, DIRTY] <= 0 or int(pr[I_DATA]) != DATA_FSYNC:
        return False
    f = nz[i, ti[i, PC], 1]
    xfer = pr[I_FLUSH_PER_BYTE] * tf[i, DIRTY] * f
    dur = pr[I_FLUSH_FIXED] * f + xfer
    nbytes = tf[i, DIRTY]
    tf[i, DIRTY] = 0.0
    _device_wait(i, t, dur, xfer, nbytes, 1.0, False, pr, hf, hn, ji, jf, ti, core)
    return True


@jit
def _journal(i, t, pr, nz, cn, hf, hn, ji, jf, ti, tf, core, out_c):
    """fsync, metadata part: make the changes durable. True if it must wait."""
    txn = ti[i, TXN]
    if txn < 0:
        return False
    if int(pr[I_POLICY]) == POL_NOJC:             # no journal: write data and inode in place
        ti[i, TXN] = -1
        dur, xfer = pr[I_INODE_WRITE] * nz[i, ti[i, PC], 2], 0.0
        nbytes = 4096.0 + tf[i, DIRTY]            # the inode's block and the data
        if tf[i, DIRTY] > 0:
            xfer = pr[I_FLUSH_PER_BYTE] * tf[i, DIRTY] * nz[i, ti[i, PC], 1]
            dur += pr[I_FLUSH_FIXED] * nz[i, ti[i, PC], 1] + xfer
            tf[i, DIRTY] = 0.0
        # ext4 without a journal ends an fsync with a cache flush
        _device_wait(i, t, dur, xfer, nbytes, 2.0, True, pr, hf, hn, ji, jf, ti, core)
        return True
    if txn <= ji[COMMITTED]:
        return False
    if txn == ji[RUN]:
        J.request_commit(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c)
    ti[i, WTXN] = txn
    _block(i, W_COMMIT, ti, core)
    return True


@jit
def _barrier(i, t, pc, pr, nz, hf, hn, ji, ti, core):
    """True if thread i must wait for the others at the barrier (row n of ti is the
    journal thread). Polling, each wakes at its own timer after the release (its phase
    drawn in nz[j, pc, 1]), the last to arrive too."""
    n = ti.shape[0] - 1
    ji[NBAR] += 1
    if ji[NBAR] < n:
        _block(i, W_BARRIER, ti, core)
        return True
    poll = pr[I_POLL] > 0
    if poll:
        _block(i, W_BARRIER, ti, core)
    for j in range(n):
        if ti[j, WAIT] == W_BARRIER:
            if poll:
                push(hf, hn, ji, t + pr[I_POLL_US] * nz[j, pc, 1], EV_START, j)
            else:
                fpush(hf, hn, ji, t, j, ti.shape[0])
    return poll


@jit
def _finish_op(i, t, op, row, pr, ji, ti, tf, out_t):
    out_t[row, 1] = t
    if op == OPEN or op == WRITE:             # the change joins the running transaction
        _join(i, ji, ti)
        if op == WRITE:
            tf[i, DIRTY] += pr[I_RECORD_BYTES]
    ti[i, PC] += 1
    ti[i, PHASE] = 0


@jit_inline
def _step(i, t, prog, pr, nz, cn, hf, hn, ji, jf, ti, tf, core, q, out_t, out_c):
    """Advance thread i as far as it goes at time t. Phases of every op: 0 start,
    1 metadata lock check, 2 CPU, 3 block allocation/flush/barrier, (6 the extent
    conversion after the flush, dioread_nolock), 4 journal, (7 the fsync's dilation
    spin, frequency by dilation), then finish."""
    nprog = prog.size
    while ti[i, PC] < nprog:
        pc = ti[i, PC]
        op = prog[pc]
        row = i * nprog + pc
        ph = ti[i, PHASE]
        if ph == 0:
            out_t[row, 0] = t
            ph = 1
        if ph == 1:
            if (op == OPEN or op == WRITE) and ji[LOCKED] == 1:
                ti[i, PHASE] = 1
                if out_t[row, 2] < 0:
                    out_t[row, 2] = t
                _block(i, W_LOCK, ti, core)      # new handles wait for the commit's lock
                return
            if out_t[row, 2] >= 0:
                out_t[row, 3] = t
            ph = 2
        if ph == 2:
            ti[i, PHASE] = 3
            if op != BARRIER:
                tf[i, REM] = _cost(op, pr) * nz[i, pc, 0]
                if ti[i, CORE] < 0:
                    _enqueue(i, pr[I_WAKE_FRONT] > 0 and ti[i, WAIT] != W_NONE, q, ji, ti)
                return
            ph = 3
        if ph == 3:
            alloc = op == FSYNC and _allocates(i, pr, tf)
            late = alloc and int(pr[I_DIOREAD]) == DIOREAD_NOLOCK
            if alloc and not late:
                if ji[LOCKED] == 1:              # the allocation's handle waits for the lock
                    ti[i, PHASE] = 3
                    _block(i, W_LOCK, ti, core)
                    return
                _join(i, ji, ti)
            ti[i, PHASE] = 4
            if op == BARRIER and _barrier(i, t, pc, pr, nz, hf, hn, ji, ti, core):
                ti[i, PHASE] = 5
                return
            if op == FSYNC and _flush(i, t, pr, nz, hf, hn, ji, jf, ti, tf, core):
                if late:
                    ti[i, PHASE] = 6
                return
            ph = 4
        if ph == 6:
            # dioread_nolock: the unwritten extents are converted when the data I/O has
            # completed, before the page's write-back ends, in a reserved handle, which
            # joins whatever transaction runs then without waiting for a commit's lock
            _join(i, ji, ti)
            ph = 4
        if ph == 4:
            ti[i, PHASE] = 5
            if op == FSYNC and _journal(i, t, pr, nz, cn, hf, hn, ji, jf, ti, tf, core, out_c):
                return
            ph = 5
        if ph == 5 and op == BARRIER and pr[I_POLL] > 0:
            # the poll's timer fired: back from select(), the thread reads the flag
            ti[i, PHASE] = 7
            tf[i, REM] = pr[I_C_POLL] * nz[i, pc, 0]
            if ti[i, CORE] < 0:
                _enqueue(i, pr[I_WAKE_FRONT] > 0, q, ji, ti)
            return
        if ph == 5 and op == FSYNC and pr[I_FSYNC_SPIN] > 0:
            # frequency by dilation: the fsync's CPU ran at f_ref before its write-back;
            # the thread spins the dilation once the call has returned
            ti[i, PHASE] = 7
            tf[i, REM] = pr[I_FSYNC_SPIN] * nz[i, pc, 0]
            if ti[i, CORE] < 0:
                _enqueue(i, pr[I_WAKE_FRONT] > 0 and ti[i, WAIT] != W_NONE, q, ji, ti)
            return
        _finish_op(i, t, op, row, pr, ji, ti, tf, out_t)
    _block(i, W_NONE, ti, core)


@jit_inline
def _on_cpu(k, t, crun, ct, cs, prog, pr, nz, cn, hf, hn, ji, jf, ti, tf, core, q, out_t, out_c):
    """The thread on core k ran crun[k] us: finish its phase or preempt it."""
    i = core[k]
    tf[i, REM] -= crun[k]
    tf[i, SLICE] -= crun[k]
    if tf[i, REM] <= 1e-9:
        tf[i, REM] = 0.0
        if i == ti.shape[0] - 1:               # the journal thread: it starts the commit
            ji[JBD2] = JBD2_IDLE
            J.start_commit(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c)
            _block(i, W_NONE, ti, core)
            return
        _step(i, t, prog, pr, nz, cn, hf, hn, ji, jf, ti, tf, core, q, out_t, out_c)
    if core[k] != i:
        return                                 # blocked or finished: the core is free
    if tf[i, SLICE] <= 1e-9:
        if ji[QN] > 0:                         # slice used up and others wait: round robin
            _block(i, W_NONE, ti, core)
            _enqueue(i, False, q, ji, ti)
            return
        tf[i, SLICE] = pr[I_QUANTUM]
    crun[k] = min(tf[i, REM], tf[i, SLICE])
    _arm(k, t + crun[k], ct, cs, ji)


@jit
def _wake(t, k, whole, hf, hn, ji, ti):
    """Wake lock waiters, and when commit k ended, the fsyncs it covered."""
    for j in range(ti.shape[0]):
        w = ti[j, WAIT]
        if w == W_LOCK or (whole and w == W_COMMIT and ti[j, WTXN] <= k):
            fpush(hf, hn, ji, t, j, ti.shape[0])


@jit_inline
def _dispatch(t, crun, ct, cs, pr, ji, ti, tf, core, q):
    if ji[JBD2] == JBD2_WAKE:                  # a commit is due: its thread wants a core
        ji[JBD2] = JBD2_QUEUED
        j = ti.shape[0] - 1
        tf[j, REM] = pr[I_C_COMMIT]
        _enqueue(j, pr[I_JBD2_FRONT] > 0, q, ji, ti)
    if ji[QN] == 0:
        return
    for k in range(core.size):
        if core[k] < 0 and ji[QN] > 0:
            i = q[ji[QH]]
            ji[QH] = (ji[QH] + 1) % q.size
            ji[QN] -= 1
            core[k] = i
            ti[i, CORE] = k
            ti[i, WAIT] = W_NONE
            tf[i, SLICE] = pr[I_QUANTUM]
            crun[k] = min(tf[i, REM], tf[i, SLICE])
            _arm(k, t + crun[k], ct, cs, ji)


@jit
def _before(t1, s1, t2, s2):
    return t1 < t2 or (t1 == t2 and s1 < s2)


@jit_inline
def _next(ct, cs, hf, hn, ji, fb, spawn):
    """Source of the next event by (time, sequence): core k >= 0, the heap (-1), the FIFO
    of starts at fb (-2), the next thread spawn (-4), or -3 when none is left. Cores keep
    their own slots; spawns are sorted already, so they wait in their own array (sequence
    = thread index + 1, as if pushed first) instead of filling the heap."""
    best, bt, bs = -3, np.inf, 0
    for k in range(ct.size):
        if ct[k] < np.inf and (best < 0 or _before(ct[k], cs[k], bt, bs)):
            best, bt, bs = k, ct[k], cs[k]
    sp = ji[SP]
    if sp < spawn.size and (best == -3 or _before(spawn[sp], sp + 1, bt, bs)):
        best, bt, bs = -4, spawn[sp], sp + 1
    if ji[HSIZE] > 0 and (best == -3 or _before(hf[0], hn[0, 0], bt, bs)):
        best, bt, bs = -1, hf[0], hn[0, 0]
    h = fb + ji[FH]
    if ji[FH] < ji[FT] and (best == -3 or _before(hf[h], hn[h, 0], bt, bs)):
        best = -2
    return best


@jit
def _run_one(prog, pr, spawn, nz, cn, hf, hn, ji, jf, ti, tf, core, crun, ct, cs, q, out_t,
             out_c):
    """One repetition on fresh state; returns the number of commits."""
    reset(pr, ti, tf, ji, jf, core)
    out_t[:, 2:] = -1.0
    ct[:] = np.inf
    ji[SEQ] = spawn.size                       # sequences 1..n belong to the spawns
    fb = hf.size - fifo_cap(ti.shape[0])
    while True:
        k = _next(ct, cs, hf, hn, ji, fb, spawn)
        if k >= 0:
            t = ct[k]
            ct[k] = np.inf
            _on_cpu(k, t, crun, ct, cs, prog, pr, nz, cn, hf, hn, ji, jf, ti, tf, core, q,
                    out_t, out_c)
            _dispatch(t, crun, ct, cs, pr, ji, ti, tf, core, q)
            continue
        if k == -3:
            break
        if k == -4:                            # the next thread is spawned
            t, kind, idx = spawn[ji[SP]], EV_START, ji[SP]
            ji[SP] += 1
        elif k == -2:                          # a start queued at the current time
            t, kind, idx = hf[fb + ji[FH]], EV_START, hn[fb + ji[FH], 2]
            ji[FH] += 1
            if ji[FH] == ji[FT]:
                ji[FH], ji[FT] = 0, 0
        else:
            t, kind, idx = pop(hf, hn, ji)
        if kind == EV_START or kind == EV_DEV:
            _step(idx, t, prog, pr, nz, cn, hf, hn, ji, jf, ti, tf, core, q, out_t, out_c)
        elif kind == EV_COMMIT:
            J.commit_ended(idx, t, pr, jf, ji, out_c)
            J.try_start(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c)   # a requested commit starts at once
            _wake(t, idx, True, hf, hn, ji, ti)
        elif kind == EV_UNLOCK:
            if ji[LOCKED] == 1 and ji[RUN] == idx + 1:
                ji[LOCKED] = 0
                _wake(t, idx, False, hf, hn, ji, ti)
        elif kind == EV_TIMER and idx == ji[GEN]:
            J.try_start(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c)
        _dispatch(t, crun, ct, cs, pr, ji, ti, tf, core, q)
    return ji[NCOMMIT]


@jit
def run_batch(prog, pr, spawn, nz, cn, out_t, out_c, ncommit):
    """Simulate every repetition r of one point in one call, from its draws: spawn
    (reps, threads) times, nz (reps, threads, len(prog), 3) CPU/flush/inode factors,
    cn (reps, cap) commit factors. out_t (reps, threads * len(prog), 4) gets op
    start/end and lock wait start/end (us, -1: none), out_c (reps, cap, 6) the commits (state.COMMIT_COLS), ncommit
    (reps,) their counts."""
    n = spawn.shape[1]
    cap = out_c.shape[1]
    # one row per thread and one for the journal thread
    ti, tf = np.empty((n + 1, 6), np.int64), np.empty((n + 1, 3))
    ji, jf = np.empty(NJI, np.int64), np.empty(NJF)
    ncores = int(pr[I_CORES])
    core, crun, q = np.empty(ncores, np.int64), np.zeros(ncores), np.zeros(n + 2, np.int64)
    ct, cs = np.empty(ncores), np.zeros(ncores, np.int64)
    hcap = 3 * cap + 2 * n + ncores + 8        # bound on pending events
    hcap += fifo_cap(n + 1)                    # the FIFO of starts lives in the tail
    hf, hn = np.empty(hcap), np.empty((hcap, 3), np.int64)
    for r in range(spawn.shape[0]):
        ncommit[r] = _run_one(prog, pr, spawn[r], nz[r], cn[r], hf, hn, ji, jf, ti, tf, core, crun, ct,
                              cs, q, out_t[r], out_c[r])
