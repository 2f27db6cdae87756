"""The simulator's compiled building blocks: constants, the event heap, state arrays.

numba compiles these when it is installed (plain Python otherwise: same code, slower).
All state lives in a few flat arrays indexed by the constants below, so no Python
object is made per event. Times are microseconds (float64). Random variation is drawn
beforehand with numpy (core.draws), one generator per repetition.
"""
from __future__ import annotations

try:  # numba is optional: the same functions run uncompiled without it
    from numba import njit
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

    def njit(*a, **k):
        return (lambda f: f) if not (a and callable(a[0])) else a[0]

# cache=True: compiled code is kept on disk, so only the first import in a tree compiles.
# numba keys that cache on each module's own source and freezes these constants into it:
# after changing a constant here, touch journal.py and kernel.py so they recompile.
jit = njit(cache=True, error_model="numpy", nogil=True)
# The event loop's per-event functions are inlined at numba's level: LLVM left them as
# calls, and each call passed ~17 arrays as ~120 scalars. Inlining those four cut the
# kernel 3.5-4x (benchmarks.sim) and compile time a little; inlining every helper
# instead had tripled compile time, and the rest (pop, the journal) gained nothing.
jit_inline = njit(cache=True, error_model="numpy", nogil=True, inline="always")

# op codes (abtlab.trace.Op)
OPEN, WRITE, FSYNC, CLOSE, BARRIER = 1, 2, 3, 4, 12
POL_EXT4, POL_NOJC, POL_FIXED, POL_ADAPT, POL_BATCH = 0, 1, 2, 3, 4
DATA_FSYNC, DATA_COMMIT = 0, 1
# parameter vector (CPU costs already at the simulated frequency)
I_QUANTUM, I_C_OPEN, I_C_WRITE, I_C_FSYNC, I_C_CLOSE, I_FLUSH_FIXED, I_FLUSH_PER_BYTE, \
    I_COMMIT_FIXED, I_COMMIT_PER_BLOCK, I_BLOCKS_PER_HANDLE, I_INODE_WRITE, I_POLICY, \
    I_WINDOW, I_KPARAM, I_MAX_RESETS, I_MAX_AGE, I_WAKE_FRONT, I_ALPHA, I_D0, \
    I_RECORD_BYTES, I_CORES, I_LOCK, I_DATA, I_COMMIT_PER_FILE, I_FSYNC_ALLOC, I_QDEPTH, \
    I_DIOREAD, I_FSYNC_SPIN, I_SHARED_XFER, I_SHADOW, I_CACHE, I_MEDIA_PER_BYTE, \
    I_DESTAGE_FILE, I_DESTAGE_FIXED, I_C_COMMIT, I_POLL, I_POLL_US, I_C_POLL, I_JBD2_FRONT = range(39)
NPARAM = 39
# where a delalloc write-back's allocation joins a transaction (ext4's dioread_[no]lock)
DIOREAD_LOCK, DIOREAD_NOLOCK = 0, 1
# thread int state / float state columns
PC, PHASE, CORE, TXN, WAIT, WTXN = range(6)
REM, SLICE, DIRTY = range(3)
W_NONE, W_LOCK, W_COMMIT, W_BARRIER, W_DEV, W_CPU = range(6)
# journal ints / floats
RUN, COMMITTING, COMMITTED, NCOMMIT, PENDING, GEN, RESETS, LOCKED, NBAR, HANDLES, SEQ, \
    QH, QT, QN, HSIZE, FH, FT, SP, JBD2 = range(19)
NJI = 19
# JBD2: the journal thread's state when a commit costs it CPU (I_C_COMMIT > 0)
JBD2_IDLE, JBD2_WAKE, JBD2_QUEUED = 0, 1, 2
# PIPE: when the device's shared transfer is free (shared_transfer); SHARED: whether it
# is; MEDIA: when a write cache's platter has written back all it holds; then one
# free-at time per device server (queue depth, at most MAX_QDEPTH)
QDEPTH, FIRST, DEADLINE, GAP, LAST, EWMA_D, PIPE, SHARED, MEDIA, DEVQ = range(10)
MAX_QDEPTH = 256
NJF = DEVQ + MAX_QDEPTH
# events
EV_CPU, EV_DEV, EV_COMMIT, EV_TIMER, EV_START, EV_UNLOCK = range(6)
COMMIT_COLS = ("tid", "start", "flushing", "end", "handles", "blocks")


@jit
def less(hf, hn, a, b):
    return hf[a] < hf[b] or (hf[a] == hf[b] and hn[a, 0] < hn[b, 0])


@jit
def swap(hf, hn, a, b):
    hf[a], hf[b] = hf[b], hf[a]
    for c in range(3):
        hn[a, c], hn[b, c] = hn[b, c], hn[a, c]


@jit
def push(hf, hn, ji, t, kind, idx):
    """Binary min-heap on (time, insertion sequence) over preallocated arrays."""
    ji[SEQ] += 1
    j = ji[HSIZE]
    ji[HSIZE] = j + 1
    hf[j] = t
    hn[j, 0], hn[j, 1], hn[j, 2] = ji[SEQ], kind, idx
    while j > 0:
        parent = (j - 1) // 2
        if not less(hf, hn, j, parent):
            break
        swap(hf, hn, j, parent)
        j = parent


@jit
def pop(hf, hn, ji):
    t, kind, idx = hf[0], hn[0, 1], hn[0, 2]
    n = ji[HSIZE] - 1
    ji[HSIZE] = n
    swap(hf, hn, 0, n)
    j = 0
    while True:
        a, b, m = 2 * j + 1, 2 * j + 2, j
        if a < n and less(hf, hn, a, m):
            m = a
        if b < n and less(hf, hn, b, m):
            m = b
        if m == j:
            return t, kind, idx
        swap(hf, hn, j, m)
        j = m


@jit
def fifo_cap(n):
    """Room for starts queued at the current time (wakes of up to n threads, a few times)."""
    return 4 * n + 8


@jit
def fpush(hf, hn, ji, t, idx, n):
    """Thread idx starts at the current time t. Such starts come in bulk (barrier, end of
    a commit) and in (time, sequence) order, so a FIFO in the tail fifo_cap(n) slots of
    the heap arrays keeps them ordered without heap work; the heap takes the rest."""
    cap = fifo_cap(n)
    if ji[FT] >= cap:
        push(hf, hn, ji, t, EV_START, idx)
        return
    ji[SEQ] += 1
    j = hf.size - cap + ji[FT]
    ji[FT] += 1
    hf[j] = t
    hn[j, 0], hn[j, 1], hn[j, 2] = ji[SEQ], EV_START, idx


@jit
def reset(pr, ti, tf, ji, jf, core):
    """Fresh state for one repetition, in the preallocated arrays."""
    ti[:, :] = 0
    ti[:, CORE] = -1
    ti[:, TXN] = -1
    tf[:, :] = 0.0
    ji[:] = 0
    ji[COMMITTING] = -1
    ji[COMMITTED] = -1
    jf[:] = 0.0
    jf[GAP] = -1.0
    jf[LAST] = -1.0
    jf[EWMA_D] = pr[I_D0]
    jf[QDEPTH] = pr[I_QDEPTH]
    jf[SHARED] = pr[I_SHARED_XFER]
    core[:] = -1
