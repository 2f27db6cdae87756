"""The device and the jbd2-like journal of the simulator (compiled helpers).

jbd2 semantics kept here (fs/jbd2/transaction.c, commit.c):
- one running transaction takes every new handle; at most one transaction commits;
  a commit never starts while another runs, and a requested one starts as soon as the
  previous ends;
- an fsync whose thread has a handle in the running transaction asks for its commit
  and waits for it; one whose transaction is already committing just waits;
- a commit locks new handles. jbd2 holds T_LOCKED only until the running handles stop
  (tens of us), after which new handles go to the next transaction; Chang et al.'s (MASCOTS 2014) model
  (Figs. 5 and 6) has writes block for the whole commit. `lock` (us, < 0 = whole
  commit) chooses; the paper's semantics is the default. With `shadow_wait` the lock
  lasts at least until the commit's log blocks are written (its end less the commit
  record): a handle that dirties a buffer the commit is logging waits for that log
  write (jbd2's BH_Shadow; 3.4's BJ_Shadow until the refile, the same moment with one
  log write), and every file's inode shares a few inode-table blocks;
- data=ordered: with DATA_COMMIT the commit writes back the data of every member of
  the transaction before its journal blocks (ext3, or ext4 with nodelalloc), so one
  commit with many members is long but shared. With DATA_FSYNC each fsync writes back
  its own file first (ext4 delalloc: ext4_sync_file -> file_write_and_wait_range), and
  that write-back allocates the file's blocks in a handle of the running transaction,
  so the fsync commits that transaction (`fsync_allocates`; off: only opens and writes
  join transactions);
- a commit logs 2 + blocks_per_handle * handles blocks: files share inode-table, bitmap
  and directory blocks, so calibration from real commits gives well under one.
The device serves `queue_depth` requests at once, each on the server free first: 1 is
one FIFO queue shared by data flushes and commits; a depth as large as the thread count
makes every request an independent delay. With `shared_transfer` the requests' transfers
(their per-byte part) go one after another at the device's rate, each before its own
latency, as a bandwidth-limited device does with several requests in flight.
A device with a volatile write cache (I_CACHE bytes, the drive model of
backends/include/abt_disk.h, calibrated: abtlab.sim.params) takes a write at interface
speed while it fits; its platter writes the cache back behind (one positioning when it
starts from idle, then per file and per byte at the media rate), and a FLUSH (a commit's
record, NOJC's fsync) returns once the cache is clean. A commit's record is written FUA
after that flush. With I_C_COMMIT > 0 the journal thread needs that much CPU to start a
commit: the kernel queues it for a core (ji[JBD2]) and it locks the transaction only
when it has run, so on few cores it waits behind runnable writers.
"""
from __future__ import annotations

from .state import (COMMITTED, COMMITTING, DATA_COMMIT, DEADLINE, DEVQ, DIRTY, EV_COMMIT, EV_TIMER,
                    EV_UNLOCK, EWMA_D, FIRST, GAP, GEN, HANDLES, I_ALPHA, I_BLOCKS_PER_HANDLE,
                    I_COMMIT_FIXED, I_COMMIT_PER_BLOCK, I_COMMIT_PER_FILE, I_DATA, I_FLUSH_PER_BYTE,
                    I_KPARAM, I_LOCK, I_MAX_AGE, I_MAX_RESETS, I_POLICY, I_SHADOW, I_WINDOW, LAST,
                    LOCKED, NCOMMIT, PENDING, PIPE, POL_ADAPT, POL_BATCH, POL_FIXED, QDEPTH,
                    RESETS, RUN, SHARED, TXN, I_CACHE, I_MEDIA_PER_BYTE, I_DESTAGE_FILE,
                    I_DESTAGE_FIXED, I_FLUSH_FIXED, I_C_COMMIT, JBD2, JBD2_IDLE, JBD2_WAKE, MEDIA)
from .heap import jit, push


@jit
def device(t, dur, xfer, jf):
    """A request of dur (xfer of it its transfer) issued at t, served by the server free
    first; (start, end). A shared transfer admits it when the previous ones are through
    (a request without data, a cache flush or an inode's latency alone, does not wait)."""
    best = DEVQ
    for s in range(DEVQ + 1, DEVQ + int(jf[QDEPTH])):
        if jf[s] < jf[best]:
            best = s
    start = max(t, jf[best])
    end = start + dur
    if jf[SHARED] > 0 and xfer > 0:
        admit = max(start, jf[PIPE])
        jf[PIPE] = admit + xfer
        end = admit + dur
    jf[best] = end
    return start, end


@jit
def _hold(end, jf):
    """Every server of the queue is busy until end (a flush, a write waiting for room)."""
    for s in range(DEVQ, DEVQ + int(jf[QDEPTH])):
        jf[s] = max(jf[s], end)


@jit
def _cached(a, nbytes, files, pr, jf):
    """The write cache takes nbytes (files extents) the interface finished at a; the
    platter writes them back behind what it holds. Returns when the write completes:
    at a, or once the cache has room for it."""
    work = pr[I_DESTAGE_FILE] * files + pr[I_MEDIA_PER_BYTE] * nbytes
    if jf[MEDIA] < a:                       # the platter was idle: position first
        jf[MEDIA] = a + pr[I_DESTAGE_FIXED] + work
    else:
        jf[MEDIA] += work
    room = pr[I_CACHE] * pr[I_MEDIA_PER_BYTE]   # write-back time a full cache holds
    done = max(a, jf[MEDIA] - room)
    if done > a:
        _hold(done, jf)
    return done


@jit
def write_req(t, dur, xfer, nbytes, files, pr, jf):
    """A data write of nbytes issued at t (dur, xfer: its interface time, or without a
    cache its whole device time); its completion time."""
    _, end = device(t, dur, xfer, jf)
    if pr[I_CACHE] <= 0:
        return end
    return _cached(end, nbytes, files, pr, jf)


@jit
def flush_req(a, after, pr, jf):
    """A FLUSH issued at a (then `after` us, e.g. a FUA record): returns when done;
    the cache is clean then. Without a cache: a."""
    if pr[I_CACHE] <= 0:
        return a
    end = max(a, jf[MEDIA]) + after
    jf[MEDIA] = end
    _hold(end, jf)
    return end


@jit
def window(pr, jf):
    """Delay before a requested commit closes its batch, by policy."""
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


@jit
def _member_data(k, pr, ti, tf):
    """Device time to write back the data of transaction k's members (DATA_COMMIT), and
    the transfer part of it."""
    us, xfer = 0.0, 0.0
    for i in range(ti.shape[0]):
        if ti[i, TXN] == k and tf[i, DIRTY] > 0:
            us += pr[I_COMMIT_PER_FILE] + pr[I_FLUSH_PER_BYTE] * tf[i, DIRTY]
            xfer += pr[I_FLUSH_PER_BYTE] * tf[i, DIRTY]
            tf[i, DIRTY] = 0.0
    return us, xfer


@jit
def start_commit(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c):
    k = ji[RUN]
    handles = ji[HANDLES]
    blocks = 2.0 + pr[I_BLOCKS_PER_HANDLE] * handles    # descriptor + commit block
    f = cn[k % cn.size]
    cache = pr[I_CACHE] > 0
    if cache:            # the log through the interface into the cache; the record after
        xfer = pr[I_FLUSH_PER_BYTE] * 4096.0 * blocks   # a flush, FUA (commit_fixed)
        dur = pr[I_FLUSH_FIXED] + xfer
    else:
        xfer = pr[I_COMMIT_PER_BLOCK] * blocks
        dur = pr[I_COMMIT_FIXED] + xfer
    nbytes = 4096.0 * blocks
    if int(pr[I_DATA]) == DATA_COMMIT:
        data, data_xfer = _member_data(k, pr, ti, tf)
        dur, xfer = dur + data, xfer + data_xfer
        if pr[I_FLUSH_PER_BYTE] > 0:
            nbytes += data_xfer / pr[I_FLUSH_PER_BYTE]
    dstart, end = device(t, dur * f, xfer * f, jf)
    logged = end
    if cache:
        logged = _cached(end, nbytes, 1.0, pr, jf)
        end = flush_req(logged, pr[I_COMMIT_FIXED] * f, pr, jf)
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
    push(hf, hn, ji, end, EV_COMMIT, k)
    lock = pr[I_LOCK]
    if lock >= 0 and pr[I_SHADOW] >= 0:       # and until its log blocks are written
        lock = max(lock, (logged if cache else end - pr[I_SHADOW]) - t)
    if lock >= 0 and t + lock < end:
        push(hf, hn, ji, t + lock, EV_UNLOCK, k)


@jit
def try_start(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c):
    if ji[PENDING] == 1 and ji[COMMITTING] < 0 and t >= jf[DEADLINE]:
        if pr[I_C_COMMIT] > 0:                # the journal thread must run first
            if ji[JBD2] == JBD2_IDLE:
                ji[JBD2] = JBD2_WAKE
            return
        start_commit(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c)


@jit
def request_commit(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c):
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
        jf[DEADLINE] = t + window(pr, jf)
    elif (pol == POL_FIXED or pol == POL_ADAPT) and ji[RESETS] < pr[I_MAX_RESETS]:
        ji[RESETS] += 1                      # another arrival: reset the timer, bounded
        jf[DEADLINE] = min(t + window(pr, jf), jf[FIRST] + pr[I_MAX_AGE])
    else:
        return
    if jf[DEADLINE] > t:
        ji[GEN] += 1
        push(hf, hn, ji, jf[DEADLINE], EV_TIMER, ji[GEN])
    else:
        try_start(t, pr, cn, hf, hn, ji, jf, ti, tf, out_c)


@jit
def commit_ended(k, t, pr, jf, ji, out_c):
    """Bookkeeping at the end of commit k (waking waiters is the kernel's job)."""
    c = ji[NCOMMIT] - 1
    a = pr[I_ALPHA]
    jf[EWMA_D] = (1 - a) * jf[EWMA_D] + a * (out_c[c, 3] - out_c[c, 1])
    ji[COMMITTED] = k
    ji[COMMITTING] = -1
    ji[LOCKED] = 0
