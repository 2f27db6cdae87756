"""The simulator's event loop: threads on cores, one device, one jbd2-like journal.

Compiled with numba when it is installed (pure Python otherwise: same code, slower).
State lives in a few flat arrays indexed by the constants below, so no Python object
is made per event. Times are microseconds (float64).

Mechanism (seed 000 Figs. 4-6):
- CPU: N threads on C cores, round-robin run queue with a time slice (quantum); a
  thread keeps its core across CPU phases until its slice ends or it blocks; woken
  threads go to the front of the queue when `wake_front` (CFS favours sleepers).
- Device: one FIFO server for data flushes, inode writes (no journal) and commits.
- Journal: one running transaction, at most one committing. A commit locks metadata
  for its whole duration: opens and write() calls arriving meanwhile block until it
  ends (Figs. 5 and 6). An fsync whose changes are in the running transaction asks
  for a commit; the policy decides when it starts (at once for ext4, after a window
  for delayjc/batch) and it never starts while another commit runs.
"""
from __future__ import annotations

import numpy as np

try:  # numba is optional: the same functions run uncompiled without it
    from numba import njit
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

    def njit(*a, **k):
        return (lambda f: f) if not (a and callable(a[0])) else a[0]

# helpers stay separate compiled functions (inline="always" made compiling 3x slower
# for no measured gain)
_inline = njit(cache=True)

__all__ = ["run_kernel", "HAVE_NUMBA", "P", "POL_EXT4", "POL_NOJC", "POL_FIXED", "POL_ADAPT",
           "POL_BATCH", "OPS_COLS", "COMMIT_COLS"]

# op codes (abtlab.trace.Op)
OPEN, WRITE, FSYNC, CLOSE, BARRIER = 1, 2, 3, 4, 12
POL_EXT4, POL_NOJC, POL_FIXED, POL_ADAPT, POL_BATCH = 0, 1, 2, 3, 4
# parameter vector (CPU costs already at the simulated frequency)
P = dict(quantum=0, c_open=1, c_write=2, c_fsync=3, c_close=4, flush_fixed=5,
         flush_per_byte=6, commit_fixed=7, commit_per_block=8, blocks_per_handle=9,
         inode_write=10, policy=11, window=12, kparam=13, max_resets=14, max_age=15,
         wake_front=16, alpha=17, d0=18, record_bytes=19, cores=20)
NPARAM = 21
# the same indices as names numba can fold into constants
I_QUANTUM = 0
I_C_OPEN = 1
I_C_WRITE = 2
I_C_FSYNC = 3
I_C_CLOSE = 4
I_FLUSH_FIXED = 5
I_FLUSH_PER_BYTE = 6
I_COMMIT_FIXED = 7
I_COMMIT_PER_BLOCK = 8
I_BLOCKS_PER_HANDLE = 9
I_INODE_WRITE = 10
I_POLICY = 11
I_WINDOW = 12
I_KPARAM = 13
I_MAX_RESETS = 14
I_MAX_AGE = 15
I_WAKE_FRONT = 16
I_ALPHA = 17
I_D0 = 18
I_RECORD_BYTES = 19
I_CORES = 20
# thread int state / float state columns
PC, PHASE, CORE, TXN, WAIT, WTXN = range(6)
REM, SLICE, OPSTART, DIRTY = range(4)
W_NONE, W_LOCK, W_COMMIT, W_BARRIER, W_DEV, W_CPU = range(6)
# journal ints / floats
RUN, COMMITTING, COMMITTED, NCOMMIT, PENDING, GEN, RESETS, LOCKED, NBAR, HANDLES, SEQ, \
    QH, QT, QN, HSIZE = range(15)
DEVFREE, FIRST, DEADLINE, GAP, LAST, EWMA_D = range(6)
# events
EV_CPU, EV_DEV, EV_COMMIT, EV_TIMER, EV_START = range(5)
OPS_COLS = ("tid", "op", "bytes", "start", "end")
COMMIT_COLS = ("tid", "start", "flushing", "end", "handles", "blocks")


@_inline
def _less(hf, hn, a, b):
    return hf[a] < hf[b] or (hf[a] == hf[b] and hn[a, 0] < hn[b, 0])


@_inline
def _swap(hf, hn, a, b):
    hf[a], hf[b] = hf[b], hf[a]
    for c in range(3):
        hn[a, c], hn[b, c] = hn[b, c], hn[a, c]


@_inline
def _push(heap, ji, t, kind, idx):
    """Binary min-heap on (time, sequence) over preallocated arrays."""
    hf, hn = heap
    ji[SEQ] += 1
    j = ji[HSIZE]
    ji[HSIZE] = j + 1
    hf[j] = t
    hn[j, 0], hn[j, 1], hn[j, 2] = ji[SEQ], kind, idx
    while j > 0:
        parent = (j - 1) // 2
        if not _less(hf, hn, j, parent):
            break
        _swap(hf, hn, j, parent)
        j = parent


@_inline
def _pop(heap, ji):
    hf, hn = heap
    t, kind, idx = hf[0], hn[0, 1], hn[0, 2]
    n = ji[HSIZE] - 1
    ji[HSIZE] = n
    _swap(hf, hn, 0, n)
    j = 0
    while True:
        a, b, m = 2 * j + 1, 2 * j + 2, j
        if a < n and _less(hf, hn, a, m):
            m = a
        if b < n and _less(hf, hn, b, m):
            m = b
        if m == j:
            return t, kind, idx
        _swap(hf, hn, j, m)
        j = m


@_inline
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


@_inline
def _release(i, ti, core):
    k = ti[i, CORE]
    if k >= 0:
        core[k] = -1
        ti[i, CORE] = -1


@_inline
def _device(t, dur, jf):
    """FIFO device: a request of dur issued at t ends at this time."""
    start = max(t, jf[DEVFREE])
    jf[DEVFREE] = start + dur
    return start, start + dur


@_inline
def _window(t, pr, ji, jf):
    """Delay before a commit closes the batch, by policy (see abtlab.sim.policy docs)."""
    pol = int(pr[I_POLICY])
    if pol == POL_FIXED:
        return pr[I_WINDOW]
    if pol == POL_BATCH:
        return min(max(jf[EWMA_D], pr[I_WINDOW]), pr[I_KPARAM])
    if pol == POL_ADAPT:
        if jf[GAP] < 0:                      # no gap seen yet: hold up to one commit time
            return jf[EWMA_D]
        w = pr[I_KPARAM] * jf[GAP]
        return w if w <= jf[EWMA_D] else 0.0  # sparse arrivals: waiting costs more than it saves
    return 0.0


@_inline
def _start_commit(t, pr, cn, heap, ji, jf, out_c):
    k = ji[RUN]
    handles = ji[HANDLES]
    blocks = 2.0 + pr[I_BLOCKS_PER_HANDLE] * handles    # descriptor + commit block
    dur = (pr[I_COMMIT_FIXED] + pr[I_COMMIT_PER_BLOCK] * blocks) * cn[k % cn.size]
    dstart, end = _device(t, dur, jf)
    ji[COMMITTING] = k
    ji[RUN] = k + 1
    ji[PENDING] = 0
    ji[HANDLES] = 0
    ji[LOCKED] = 1
    c = ji[NCOMMIT]
    out_c[c, 0] = k
    out_c[c, 1] = t
    out_c[c, 2] = dstart
    out_c[c, 3] = end
    out_c[c, 4] = handles
    out_c[c, 5] = blocks
    ji[NCOMMIT] = c + 1
    _push(heap, ji, end, EV_COMMIT, k)


@_inline
def _try_start(t, pr, cn, heap, ji, jf, out_c):
    if ji[PENDING] == 1 and ji[COMMITTING] < 0 and t >= jf[DEADLINE]:
        _start_commit(t, pr, cn, heap, ji, jf, out_c)


@_inline
def _request_commit(t, pr, cn, heap, ji, jf, out_c):
    """An fsync needs the running transaction committed."""
    if jf[LAST] >= 0:
        a = pr[I_ALPHA]
        g = t - jf[LAST]
        jf[GAP] = g if jf[GAP] < 0 else (1 - a) * jf[GAP] + a * g
    jf[LAST] = t
    pol = int(pr[I_POLICY])
    if ji[PENDING] == 0:
        ji[PENDING] = 1
        ji[RESETS] = 0
        jf[FIRST] = t
        jf[DEADLINE] = t + _window(t, pr, ji, jf)
    elif (pol == POL_FIXED or pol == POL_ADAPT) and ji[RESETS] < pr[I_MAX_RESETS]:
        ji[RESETS] += 1                      # another arrival: reset the timer, bounded
        jf[DEADLINE] = min(t + _window(t, pr, ji, jf), jf[FIRST] + pr[I_MAX_AGE])
    else:
        return
    if jf[DEADLINE] > t:
        ji[GEN] += 1
        _push(heap, ji, jf[DEADLINE], EV_TIMER, ji[GEN])
    else:
        _try_start(t, pr, cn, heap, ji, jf, out_c)


@_inline
def _block(i, why, ti, core):
    _release(i, ti, core)
    ti[i, WAIT] = why


@_inline
def _begin_cpu(i, work, pr, ji, ti, tf, q):
    """Thread i needs `work` us of CPU: keep its core, or queue for one."""
    tf[i, REM] = work
    if ti[i, CORE] < 0:
        woken = ti[i, WAIT] != W_NONE
        _enqueue(i, pr[I_WAKE_FRONT] > 0 and woken, q, ji, ti)


@_inline
def _cost(op, pr):
    if op == OPEN:
        return pr[I_C_OPEN]
    if op == WRITE:
        return pr[I_C_WRITE]
    if op == FSYNC:
        return pr[I_C_FSYNC]
    return pr[I_C_CLOSE]


@_inline
def _flush(i, t, pr, nz, heap, ji, jf, ti, tf, core):
    """Phase 3 of an fsync: write back the thread's dirty data. True if it must wait."""
    if tf[i, DIRTY] <= 0:
        return False
    dur = (pr[I_FLUSH_FIXED] + pr[I_FLUSH_PER_BYTE] * tf[i, DIRTY]) * nz[i, ti[i, PC], 1]
    tf[i, DIRTY] = 0.0
    _, end = _device(t, dur, jf)
    _block(i, W_DEV, ti, core)
    _push(heap, ji, end, EV_DEV, i)
    return True


@_inline
def _journal(i, t, pr, nz, cn, heap, ji, jf, ti, core, out_c):
    """Phase 4 of an fsync: make the metadata durable. True if it must wait."""
    txn = ti[i, TXN]
    if int(pr[I_POLICY]) == POL_NOJC:
        if txn < 0:
            return False
        ti[i, TXN] = -1                              # no journal: write the inode in place
        _, end = _device(t, pr[I_INODE_WRITE] * nz[i, ti[i, PC], 2], jf)
        _block(i, W_DEV, ti, core)
        _push(heap, ji, end, EV_DEV, i)
        return True
    if txn < 0 or txn <= ji[COMMITTED]:
        return False
    if txn == ji[RUN]:
        _request_commit(t, pr, cn, heap, ji, jf, out_c)
    ti[i, WTXN] = txn
    _block(i, W_COMMIT, ti, core)
    return True


@_inline
def _barrier(i, t, heap, ji, ti, core):
    """Phase 3 of the barrier: True if thread i must wait for the others."""
    ji[NBAR] += 1
    if ji[NBAR] < ti.shape[0]:
        _block(i, W_BARRIER, ti, core)
        return True
    for j in range(ti.shape[0]):
        if ti[j, WAIT] == W_BARRIER:
            _push(heap, ji, t, EV_START, j)
    return False


@_inline
def _step(i, t, prog, pr, nz, cn, heap, ji, jf, ti, tf, core, q, out_o, out_c):
    """Advance thread i as far as it goes at time t. Phases of every op: 0 start,
    1 metadata lock check, 2 CPU, 3 flush/barrier, 4 journal, 5 finish."""
    nprog = prog.size
    while ti[i, PC] < nprog:
        pc = ti[i, PC]
        op = prog[pc]
        row = i * nprog + pc
        ph = ti[i, PHASE]
        if ph == 0:
            out_o[row, 3] = t
            ph = 1
        if ph == 1:
            if (op == OPEN or op == WRITE) and ji[LOCKED] == 1:
                ti[i, PHASE] = 1
                _block(i, W_LOCK, ti, core)      # metadata locked by the running commit
                return
            ph = 2
        if ph == 2:
            ti[i, PHASE] = 3
            if op != BARRIER:
                _begin_cpu(i, _cost(op, pr) * nz[i, pc, 0], pr, ji, ti, tf, q)
                return
            ph = 3
        if ph == 3:
            ti[i, PHASE] = 4
            if op == BARRIER and _barrier(i, t, heap, ji, ti, core):
                ti[i, PHASE] = 5
                return
            if op == FSYNC and _flush(i, t, pr, nz, heap, ji, jf, ti, tf, core):
                return
            ph = 4
        if ph == 4:
            ti[i, PHASE] = 5
            if op == FSYNC and _journal(i, t, pr, nz, cn, heap, ji, jf, ti, core, out_c):
                return
        _finish_op(i, t, op, row, pr, ji, ti, tf, out_o)
    _release(i, ti, core)


@_inline
def _finish_op(i, t, op, row, pr, ji, ti, tf, out_o):
    out_o[row, 4] = t
    if op == OPEN or op == WRITE:             # the change joins the running transaction
        if ti[i, TXN] != ji[RUN]:
            ti[i, TXN] = ji[RUN]
            ji[HANDLES] += 1
        if op == WRITE:
            tf[i, DIRTY] += pr[I_RECORD_BYTES]
    ti[i, PC] += 1
    ti[i, PHASE] = 0


@_inline
def _on_cpu(k, t, crun, prog, pr, nz, cn, heap, ji, jf, ti, tf, core, q, out_o, out_c):
    """The thread on core k ran crun[k] us: finish its phase or preempt it."""
    i = core[k]
    tf[i, REM] -= crun[k]
    tf[i, SLICE] -= crun[k]
    if tf[i, REM] <= 1e-9:
        tf[i, REM] = 0.0
        _step(i, t, prog, pr, nz, cn, heap, ji, jf, ti, tf, core, q, out_o, out_c)
    if core[k] != i:
        return                                 # blocked or finished: the core is free
    if tf[i, SLICE] <= 1e-9:
        if ji[QN] > 0:                         # slice used up and others wait: round robin
            _release(i, ti, core)
            _enqueue(i, False, q, ji, ti)
            return
        tf[i, SLICE] = pr[I_QUANTUM]
    crun[k] = min(tf[i, REM], tf[i, SLICE])
    _push(heap, ji, t + crun[k], EV_CPU, k)


@_inline
def _on_commit_end(k, t, pr, cn, heap, ji, jf, ti, out_c):
    c = ji[NCOMMIT] - 1
    dur = out_c[c, 3] - out_c[c, 1]
    a = pr[I_ALPHA]
    jf[EWMA_D] = (1 - a) * jf[EWMA_D] + a * dur
    ji[COMMITTED] = k
    ji[COMMITTING] = -1
    ji[LOCKED] = 0
    _try_start(t, pr, cn, heap, ji, jf, out_c)   # jbd2 starts a requested commit at once
    for j in range(ti.shape[0]):
        w = ti[j, WAIT]
        if w == W_LOCK or (w == W_COMMIT and ti[j, WTXN] <= k):
            _push(heap, ji, t, EV_START, j)


@_inline
def _dispatch(t, crun, pr, heap, ji, ti, tf, core, q):
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
            _push(heap, ji, t + crun[k], EV_CPU, k)


@_inline
def _init_state(n, cores, pr):
    ti = np.zeros((n, 6), np.int64)
    ti[:, CORE] = -1
    ti[:, TXN] = -1
    tf = np.zeros((n, 4), np.float64)
    ji = np.zeros(15, np.int64)
    ji[COMMITTING] = -1
    ji[COMMITTED] = -1
    jf = np.zeros(6, np.float64)
    jf[GAP] = -1.0
    jf[LAST] = -1.0
    jf[EWMA_D] = pr[I_D0]
    return ti, tf, ji, jf, -np.ones(cores, np.int64), np.zeros(cores), np.zeros(n + 1, np.int64)


@_inline
def core_cap(pr):
    return int(pr[I_CORES])


@njit(cache=True)
def run_kernel(prog, pr, spawn, nz, cn, out_o, out_c):
    """Simulate one repetition. out_o[:, 3:5] get op start/end, out_c the commits.
    Returns the number of commits."""
    n = spawn.size
    ti, tf, ji, jf, core, crun, q = _init_state(n, int(pr[I_CORES]), pr)
    cap = 2 * out_c.shape[0] + 2 * n + core_cap(pr) + 8   # bound on pending events
    heap = (np.empty(cap), np.empty((cap, 3), np.int64))
    for i in range(n):
        _push(heap, ji, spawn[i], EV_START, i)
    while ji[HSIZE] > 0:
        t, kind, idx = _pop(heap, ji)
        if kind == EV_CPU:
            _on_cpu(idx, t, crun, prog, pr, nz, cn, heap, ji, jf, ti, tf, core, q, out_o, out_c)
        elif kind == EV_START or kind == EV_DEV:
            _step(idx, t, prog, pr, nz, cn, heap, ji, jf, ti, tf, core, q, out_o, out_c)
        elif kind == EV_COMMIT:
            _on_commit_end(idx, t, pr, cn, heap, ji, jf, ti, out_c)
        elif kind == EV_TIMER and idx == ji[GEN]:
            _try_start(t, pr, cn, heap, ji, jf, out_c)
        _dispatch(t, crun, pr, heap, ji, ti, tf, core, q)
    return ji[NCOMMIT]
