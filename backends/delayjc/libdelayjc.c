/*
 * libdelayjc.c - delayJC: a group commit around fsync/fdatasync, by LD_PRELOAD.
 *
 * The first caller on a filesystem (key: st_dev) opens a batch and waits; each
 * later caller joins it and resets the timer (at most ABT_DELAYJC_MAX_RESETS
 * times, never past ABT_DELAYJC_MAX_AGE_US after the open). When the timer runs
 * out and no flush of that filesystem is running, the batch closes and its
 * opener makes every member durable with ONE syncfs(): ext4 writes back all
 * dirty data of the filesystem and commits the whole running jbd2 transaction.
 * Every member returns that flush's error; then each member collects the
 * writeback error of its own file with sync_file_range(WAIT_AFTER), which
 * reports and advances the file's errseq (file_fdatawait_range) without a
 * second commit or cache flush. Callers that arrive during a flush join the
 * next batch, so a call never returns before a flush that began after it.
 * Only regular files and directories on ext2/3/4 are batched; every other fd
 * goes to the real call unchanged. Batches are per process.
 *
 * Policies: fixed (window = ABT_DELAYJC_WINDOW_US) and adaptive (docs/delayjc.md):
 * window 0 (each call goes to the kernel as is, recorded as a batch of one;
 * jbd2 batches concurrent fsyncs itself) plus an A/B controller that tries a window of
 * half the EWMA flush time for one period, keeps it only if syncs/s beat the
 * window-0 period just before by KEEP_GAIN, and backs off exponentially if not.
 * A bad or missing setting refuses to run: a message naming it, exit status 2.
 * That is ABT_DELAYJC_FLUSH=syncfs. The default, ABT_DELAYJC_FLUSH=fsync, was
 * faster here (docs/delayjc.md): the closed batch releases its members together
 * to fsync their own files (data written back in parallel, one jbd2 commit
 * serving them, each file's own errors reported natively); the batch ends when
 * the last member's fsync returns and its first error goes to every member.
 * ABT_DELAYJC_FAULT_ERRNO (test hook) makes every flush report that errno.
 */
#define _GNU_SOURCE
#define ABT_PRELOAD_NAME "libdelayjc"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "abt_preload.h"
#include "abt_trace.h"

#define MAX_FS 16
#define MAX_RECORDS (1u << 21)        /* 64 MiB of stats at most; later ones are counted */
#define EXT4_MAGIC 0xEF53              /* ext2, ext3 and ext4 share it */
#define GAP_CAP_NS 1000000000.0        /* an idle second is not a rate */
#define PERIOD_BATCHES 8               /* adaptive: a measuring period is >= 8 batches */
#define PERIOD_MIN_NS 20000000ull      /* ... and >= 20 ms */
#define KEEP_GAIN 1.10                 /* a window must beat window 0 by 10 % to stay */
#define HOLD_PERIODS 8                 /* a kept window is re-tested after 8 periods */
#define MAX_BACKOFF 64                 /* at most 64 window-0 periods between probes */
#define DRAIN_NS 30000000000ull        /* exit waits at most this for open batches */

typedef struct {
    uint64_t open_ns, close_ns, deadline_ns;
    uint32_t members, resets, refs;
    uint32_t pending;                 /* FLUSH=fsync: members still syncing */
    uint64_t flush_start;
    int err, done, go;
    uint64_t window;                  /* the window this batch was opened with */
    uint32_t gen;                     /* controller period it was opened in */
} batch;

enum { BASE, PROBE, HOLD };           /* adaptive controller phases */

typedef struct {
    dev_t dev;
    int used, flushing;
    batch *open;                      /* the collecting batch, or NULL */
    pthread_cond_t cv;
    uint64_t last_arrival;            /* adaptive estimates and controller below */
    double gap_ns, flush_ns;
    int phase, want_probe;
    uint64_t win;                     /* window of the current phase (0 in BASE) */
    uint32_t gen, per_batches, per_members, backoff, skip, held;
    uint64_t per_start;
    double base_rate;                 /* syncs/s of the last window-0 period */
} fsq;

static struct {
    int ready, adaptive, fault, owner, each;   /* each: ABT_DELAYJC_FLUSH=fsync */
    uint64_t window_ns, max_age_ns;
    uint32_t max_resets;
    const char *stats;
} cfg;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fsq queues[MAX_FS];
static abt_record *recs;
static size_t nrec, caprec;
static uint64_t dropped;
static int exiting;

/* ---- configuration ------------------------------------------------------ */

static int parse_fault(void)
{
    const char *s = getenv("ABT_DELAYJC_FAULT_ERRNO");
    if (!s) return 0;
    static const struct { const char *n; int e; } names[] = {
        {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i].n)) return names[i].e;
    return (int)abt_env_parse_int("ABT_DELAYJC_FAULT_ERRNO", s, 1, 4095, "EIO, ENOSPC, EROFS, "
                                  "EDQUOT or an errno 1..4095 (test hook: every flush reports it)");
}

static void parse_config(void)
{
    static const char *const policies[] = {"fixed", "adaptive", NULL};
    static const char *const flushes[] = {"syncfs", "fsync", NULL};
    cfg.adaptive = abt_env_choice("ABT_DELAYJC_POLICY", policies, -1, "fixed or adaptive") == 1;
    if (cfg.adaptive && getenv("ABT_DELAYJC_WINDOW_US"))
        abt_refuse("ABT_DELAYJC_WINDOW_US", getenv("ABT_DELAYJC_WINDOW_US"),
                   "unset when ABT_DELAYJC_POLICY=adaptive (the window is tuned at run time)");
    if (!cfg.adaptive)
        cfg.window_ns = 1000ull * (uint64_t)abt_env_int(
            "ABT_DELAYJC_WINDOW_US", 0, 60000000, "an integer from 0 to 60000000 (microseconds)");
    cfg.max_resets = (uint32_t)abt_env_int("ABT_DELAYJC_MAX_RESETS", 0, 1000000,
                                           "an integer from 0 to 1000000");
    cfg.max_age_ns = 1000ull * (uint64_t)abt_env_int(
        "ABT_DELAYJC_MAX_AGE_US", 1, 600000000, "an integer from 1 to 600000000 (microseconds)");
    cfg.fault = parse_fault();
    cfg.each = abt_env_choice("ABT_DELAYJC_FLUSH", flushes, 1, "fsync or syncfs (unset: fsync)");
    cfg.stats = getenv("ABT_DELAYJC_STATS");
    if (cfg.stats && (!*cfg.stats || strlen(cfg.stats) > PATH_MAX - 16))
        abt_refuse("ABT_DELAYJC_STATS", cfg.stats, "a writable file path (or unset)");
}

/* ---- adaptive estimates (called with mu held) --------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void ewma(double *x, double v)
{
    *x = *x > 0 ? *x + (v - *x) / 8.0 : v;
}

static uint64_t window_ns(const fsq *q)
{
    return cfg.adaptive ? q->win : cfg.window_ns;
}

static void new_period(fsq *q, int phase, uint64_t win)
{
    q->phase = phase;
    q->win = win;
    q->gen++;
    q->per_batches = q->per_members = 0;
}

static void back_off(fsq *q)
{
    q->backoff = q->backoff ? (q->backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : q->backoff * 2) : 1;
    q->skip = q->backoff;
    new_period(q, BASE, 0);
}

/* A/B step at the end of a period with `rate` syncs/s. BASE measures window 0;
 * PROBE keeps its window only if it beat that baseline by KEEP_GAIN; HOLD drops
 * the window as soon as a period falls below the baseline, and re-tests it
 * against a fresh baseline every HOLD_PERIODS periods. */
static void end_period(fsq *q, double rate)
{
    switch (q->phase) {
    case BASE:
        q->base_rate = rate;
        if (q->skip) q->skip--;
        else q->want_probe = 1;           /* decided at the next open (arrive) */
        new_period(q, BASE, 0);
        break;
    case PROBE:
        if (rate > q->base_rate * KEEP_GAIN) {
            q->backoff = q->held = 0;
            new_period(q, HOLD, q->win);
        } else back_off(q);
        break;
    default:
        if (rate < q->base_rate) back_off(q);
        else if (++q->held >= HOLD_PERIODS) new_period(q, BASE, 0);
        else new_period(q, HOLD, q->win);
    }
}

/* Count a finished batch into the period of its controller generation. */
static void account(fsq *q, const batch *b, uint64_t t1)
{
    if (!cfg.adaptive || b->gen != q->gen) return;
    if (q->per_batches++ == 0) q->per_start = b->open_ns;
    q->per_members += b->members;
    if (q->per_batches >= PERIOD_BATCHES && t1 - q->per_start >= PERIOD_MIN_NS)
        end_period(q, q->per_members * 1e9 / (double)(t1 - q->per_start));
}

/* A probe starts only with evidence that a window can collect anyone: on average
 * more than one arrival per flush time (EWMA gap < EWMA flush). With one thread
 * the gap always covers the previous flush, so it never starts. */
static void maybe_probe(fsq *q)
{
    if (!cfg.adaptive || !q->want_probe) return;
    q->want_probe = 0;
    if (q->gap_ns > 0 && q->flush_ns > 0 && q->gap_ns < q->flush_ns)
        new_period(q, PROBE, min_u64((uint64_t)(q->flush_ns / 2), cfg.max_age_ns));
}

/* ---- batches ------------------------------------------------------------ */

static fsq *queue_for(dev_t dev)
{
    for (int i = 0; i < MAX_FS; i++)
        if (queues[i].used && queues[i].dev == dev) return &queues[i];
    for (int i = 0; i < MAX_FS; i++)
        if (!queues[i].used) {
            pthread_condattr_t a;
            pthread_condattr_init(&a);
            pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
            memset(&queues[i], 0, sizeof queues[i]);
            pthread_cond_init(&queues[i].cv, &a);
            queues[i].dev = dev;
            queues[i].used = 1;
            return &queues[i];
        }
    return NULL;
}

/* Open a batch or join the open one; returns it with a reference taken. */
static void note_arrival(fsq *q, uint64_t now)
{
    if (q->last_arrival) {
        double gap = (double)(now - q->last_arrival);
        ewma(&q->gap_ns, gap < GAP_CAP_NS ? gap : GAP_CAP_NS);
    }
    q->last_arrival = now;
}

static batch *arrive(fsq *q, uint64_t now, int *leader)
{
    if (!cfg.adaptive || q->open) note_arrival(q, now);   /* else noted by the caller */
    batch *b = q->open;
    *leader = b == NULL;
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        maybe_probe(q);
        b->open_ns = now;
        b->window = min_u64(window_ns(q), cfg.max_age_ns);
        b->deadline_ns = now + b->window;
        b->gen = q->gen;
        q->open = b;
    } else if (b->resets < cfg.max_resets) {
        uint64_t d = min_u64(now + window_ns(q), b->open_ns + cfg.max_age_ns);
        if (d > b->deadline_ns) b->deadline_ns = d;   /* a reset never shortens */
        b->resets++;
    }
    b->members++;
    b->refs++;
    return b;
}

static void wait_until(fsq *q, uint64_t deadline)
{
    struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
    pthread_cond_timedwait(&q->cv, &mu, &ts);
}

static void record(uint16_t op, uint16_t flags, uint32_t tid, uint32_t bytes, uint64_t t0, uint64_t t1)
{
    if (nrec == caprec) {
        size_t cap = caprec ? caprec * 2 : 1024;
        abt_record *r = cap <= MAX_RECORDS ? realloc(recs, cap * sizeof *r) : NULL;
        if (!r) { dropped++; return; }
        recs = r;
        caprec = cap;
    }
    recs[nrec++] = (abt_record){(uint32_t)getpid(), tid, op, flags, bytes, t0, t1};
}

static void finish(fsq *q, batch *b, uint64_t t1)
{
    ewma(&q->flush_ns, (double)(t1 - b->flush_start));
    b->done = 1;
    q->flushing = 0;
    /* BATCH.tid = the batch's window in us (saturating): the stats show the rule */
    uint64_t w_us = b->window / 1000;
    record(ABT_OP_BATCH, (uint16_t)(b->resets > 0xffff ? 0xffff : b->resets),
           (uint32_t)(w_us > UINT32_MAX ? UINT32_MAX : w_us), b->members, b->open_ns, b->close_ns);
    record(ABT_OP_FLUSH, b->err ? ABT_F_ERROR : 0, 0, b->err ? (uint32_t)b->err : b->members,
           b->flush_start, t1);
    account(q, b, t1);
    pthread_cond_broadcast(&q->cv);
}

/* The opener: wait for the timer and for the previous flush, then close the
 * batch and flush it once (syncfs), or release every member to sync its own
 * file together (FLUSH=fsync: jbd2 groups their commits). */
static void lead(fsq *q, batch *b, int fd)
{
    uint64_t now;
    while (now = abt_now_ns(), q->flushing || (now < b->deadline_ns && !exiting)) {
        if (q->flushing) pthread_cond_wait(&q->cv, &mu);
        else wait_until(q, b->deadline_ns);
    }
    q->open = NULL;
    q->flushing = 1;
    b->close_ns = now;
    b->flush_start = abt_now_ns();
    if (cfg.each) {
        b->go = 1;
        b->pending = b->members;
        pthread_cond_broadcast(&q->cv);
        return;
    }
    pthread_mutex_unlock(&mu);
    int err = syncfs(fd) ? errno : 0;
    if (cfg.fault) err = cfg.fault;
    uint64_t t1 = abt_now_ns();
    pthread_mutex_lock(&mu);
    b->err = err;
    finish(q, b, t1);
}

/* FLUSH=fsync: this member's part of the flush; the first error goes to all. */
static void sync_own(fsq *q, batch *b, int fd, int (*real)(int))
{
    while (!b->go) pthread_cond_wait(&q->cv, &mu);
    pthread_mutex_unlock(&mu);
    int err = real(fd) ? errno : 0;
    if (cfg.fault) err = cfg.fault;
    uint64_t t1 = abt_now_ns();
    pthread_mutex_lock(&mu);
    if (err && !b->err) b->err = err;
    if (--b->pending == 0) finish(q, b, t1);
}

static int batchable(int fd, dev_t *dev)
{
    struct stat st;
    struct statfs sf;
    if (fstat(fd, &st) || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) return 0;
    if (fstatfs(fd, &sf) || sf.f_type != EXT4_MAGIC) return 0;
    *dev = st.st_dev;
    return 1;
}

/* Adaptive, window 0 and no probe batch open: the call goes to the kernel as
 * is (jbd2 batches concurrent fsyncs itself) and is recorded as a batch of one
 * with window 0, so the controller measures the plain-ext4 rate. */
static int pass_through(fsq *q, int fd, int (*real)(int), uint64_t t0)
{
    batch b = {.open_ns = t0, .close_ns = t0, .members = 1, .gen = q->gen};
    pthread_mutex_unlock(&mu);
    b.flush_start = abt_now_ns();
    int rc = real(fd), err = rc ? errno : 0;
    if (cfg.fault) err = cfg.fault, rc = -1;
    uint64_t t1 = abt_now_ns();
    pthread_mutex_lock(&mu);
    b.err = err;
    int was = q->flushing;
    finish(q, &b, t1);                 /* stats, flush EWMA, controller */
    q->flushing = was;                 /* a pass-through call is not the fs's flush */
    pthread_mutex_unlock(&mu);
    if (rc) errno = err;
    return rc;
}

static int group_sync(int fd, int (*real)(int))
{
    dev_t dev;
    if (!cfg.ready || !batchable(fd, &dev)) return real(fd);
    int cs, leader;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);   /* a waiter must not vanish */
    pthread_mutex_lock(&mu);
    fsq *q = exiting ? NULL : queue_for(dev);
    uint64_t now = abt_now_ns();
    if (q && cfg.adaptive && !q->open) {
        note_arrival(q, now);
        maybe_probe(q);
        if (!q->win) {
            int rc = pass_through(q, fd, real, now);
            pthread_setcancelstate(cs, NULL);
            return rc;
        }
    }
    batch *b = q ? arrive(q, now, &leader) : NULL;
    if (!b) {
        pthread_mutex_unlock(&mu);
        pthread_setcancelstate(cs, NULL);
        return real(fd);
    }
    if (cfg.adaptive && (!leader || q->flushing || b->deadline_ns > abt_now_ns())) {
        /* about to wait: start this file's writeback now, so it overlaps the
         * flush in flight as it would under plain ext4 (errors stay in the
         * file's errseq for the real fsync / the WAIT_AFTER below) */
        pthread_mutex_unlock(&mu);
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        pthread_mutex_lock(&mu);
    }
    if (leader) lead(q, b, fd);
    if (cfg.each) sync_own(q, b, fd, real);
    while (!b->done) pthread_cond_wait(&q->cv, &mu);
    int err = b->err;
    if (--b->refs == 0) free(b);
    pthread_mutex_unlock(&mu);
    /* this file's own writeback error since its last check (no commit, no flush) */
    if (!err && !cfg.each && sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
                                SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)
        && errno != ESPIPE && errno != EINVAL)
        err = errno;
    pthread_setcancelstate(cs, NULL);
    if (err) { errno = err; return -1; }
    return 0;
}

int fsync(int fd)
{
    ABT_REAL(int (*)(int), fsync);
    return group_sync(fd, real_fsync);
}

int fdatasync(int fd)
{
    ABT_REAL(int (*)(int), fdatasync);
    return group_sync(fd, real_fdatasync);
}

/* ---- process life: fork, start, exit ------------------------------------ */

/* The child has one thread: batches of the parent's other threads are theirs. */
static void child_after_fork(void)
{
    memset(queues, 0, sizeof queues);   /* their batches stay with the parent */
    free(recs);
    recs = NULL;
    nrec = caprec = 0;
    dropped = 0;
    cfg.owner = 0;
}

__attribute__((constructor)) static void delayjc_init(void)
{
    parse_config();
    char pid[24], *own = getenv("ABT_DELAYJC_STATS_OWNER");
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    cfg.owner = !own || !strcmp(own, pid);   /* an exec'd descendant is not */
    if (!own) setenv("ABT_DELAYJC_STATS_OWNER", pid, 1);
    abt_on_fork(&mu, child_after_fork);
    cfg.ready = 1;
}

/* Close open batches now and wait (bounded) for their flushes. */
static void drain(void)
{
    uint64_t limit = abt_now_ns() + DRAIN_NS;
    for (int i = 0; i < MAX_FS; i++) {
        fsq *q = &queues[i];
        if (!q->used) continue;
        pthread_cond_broadcast(&q->cv);
        while ((q->open || q->flushing) && abt_now_ns() < limit) wait_until(q, limit);
    }
}

__attribute__((destructor)) static void delayjc_fini(void)
{
    if (!cfg.ready) return;
    pthread_mutex_lock(&mu);
    exiting = 1;
    drain();
    if (cfg.stats && (cfg.owner || nrec)) {
        char path[PATH_MAX];
        if (cfg.owner) snprintf(path, sizeof path, "%s", cfg.stats);
        else snprintf(path, sizeof path, "%s.%ld", cfg.stats, (long)getpid());
        if (abt_trace_write(path, ABT_KIND_BATCHES, recs, nrec))
            fprintf(stderr, "libdelayjc: ABT_DELAYJC_STATS: cannot write '%s': %s\n",
                    path, strerror(errno));
        if (dropped)
            fprintf(stderr, "libdelayjc: %llu batch records not kept (limit %u)\n",
                    (unsigned long long)dropped, MAX_RECORDS);
    }
    pthread_mutex_unlock(&mu);
}
