"""The simulator's compiled building blocks: the jit decorators (numba when it is installed,
plain Python otherwise: same code, slower), the event heap, the FIFO of starts and the
fresh state of a repetition, in the flat arrays whose layout is in `state`.
"""
from __future__ import annotations

from .state import (COMMITTED, COMMITTING, CORE, EV_START, EWMA_D, FT, GAP, HSIZE, I_D0, I_QDEPTH,
                    I_SHARED_XFER, LAST, QDEPTH, SEQ, SHARED, TXN)

try:  # numba is optional: the same functions run uncompiled without it
    from numba import njit
except ImportError:  # pragma: no cover - exercised only where numba is missing
    def njit(*a, **k):
        return (lambda f: f) if not (a and callable(a[0])) else a[0]

# cache=True: compiled code is kept on disk, so only the first import in a tree compiles.
jit = njit(cache=True, error_model="numpy", nogil=True)
# The event loop's per-event functions are inlined at numba's level: LLVM left them as
# calls, and each call passed ~17 arrays as ~120 scalars. Inlining those four cut the
# kernel 3.5-4x (benchmarks.sim) and compile time a little; inlining every helper
# instead had tripled compile time, and the rest (pop, the journal) gained nothing.
jit_inline = njit(cache=True, error_model="numpy", nogil=True, inline="always")


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
