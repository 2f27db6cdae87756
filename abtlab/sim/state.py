"""The simulator's state layout: op codes, the parameter vector's indices, the columns
of the flat state arrays, event kinds. Constants only, so the run path reads them without
importing numba (abtlab.sim.aot loads an ahead-of-time compiled kernel instead).

All state lives in a few flat arrays indexed by the constants below, so no Python
object is made per event. Times are microseconds (float64). Random variation is drawn
beforehand with numpy (core.draws), one generator per repetition. The compiled code that
uses them is in heap, journal and kernel.
"""
from __future__ import annotations

from importlib.util import find_spec

# numba is optional: without it the same functions run uncompiled (heap.jit)
HAVE_NUMBA = find_spec("numba") is not None

# numba's cache keys on each module's own source and freezes these constants into it:
# after changing a constant here, touch heap.py, journal.py and kernel.py so they
# recompile (the ahead-of-time kernel's key includes this file).
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
