/*
 * abt_workload.h - what the workload programs (abt-iozone, abt-metarates) share:
 * the common options, the start gate, op records in per-worker slots, the trace save,
 * the result lines and the removal of the files a run made. A program keeps its own
 * options, its per-worker loop and its --describe text.
 *
 * Records: worker w owns slots [w*per, (w+1)*per) (per even: 64-byte slices, so
 * workers never share a cache line) and the count n of its state; the trace is written
 * after every worker is done, in worker order, so recording costs no I/O in the run.
 * The log may live in a MAP_SHARED mapping, so forked workers record into it too.
 */
#ifndef ABT_WORKLOAD_H
#define ABT_WORKLOAD_H

#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "abt_dilate.h"
#include "abt_opts.h"
#include "abt_trace.h"

#define ABT_MAX_DILATE 1000.0

/* ---- options every workload takes ------------------------------------------ */

typedef struct {
    const char *dir, *trace;
    int no_record, keep, describe;
    double dilate;
} abt_common;

#define ABT_COMMON_DEFAULTS ((abt_common){NULL, NULL, 0, 0, 0, 1.0})

enum { ABT_O_DIR = 200, ABT_O_TRACE, ABT_O_DILATE, ABT_O_NO_RECORD, ABT_O_KEEP,
       ABT_O_DESCRIBE, ABT_O_HELP };

/* the struct option entries of the common options, for a program's table */
#define ABT_COMMON_OPTIONS \
    {"dir", 1, 0, ABT_O_DIR}, {"trace", 1, 0, ABT_O_TRACE}, {"dilate", 1, 0, ABT_O_DILATE}, \
    {"no-record", 0, 0, ABT_O_NO_RECORD}, {"keep", 0, 0, ABT_O_KEEP}, \
    {"describe", 0, 0, ABT_O_DESCRIBE}, {"help", 0, 0, ABT_O_HELP}

/* A getopt_long(":") result the program does not own: a common option, or exit 2. */
static inline void abt_common_opt(const char *prog, abt_common *c, int ch, char **argv,
                                  void (*usage)(FILE *))
{
    switch (ch) {
    case ABT_O_DIR: c->dir = optarg; break;
    case ABT_O_TRACE: c->trace = optarg; break;
    case ABT_O_DILATE:
        c->dilate = abt_parse_dilate(prog, "--dilate", optarg, ABT_MAX_DILATE);
        break;
    case ABT_O_NO_RECORD: c->no_record = 1; break;
    case ABT_O_KEEP: c->keep = 1; break;
    case ABT_O_DESCRIBE: c->describe = 1; break;
    case ABT_O_HELP: usage(stdout); exit(0);
    default: abt_bad_option(prog, ch, argv, "see --help");
    }
}

/* The common options up front, after the program's own relations: --dir given and able
 * to take files (dir_flags, e.g. O_DIRECT, probed too), exactly one of --trace PATH or
 * --no-record, and the trace path writable. */
static inline void abt_common_check(const char *prog, const abt_common *c, int dir_flags,
                                    const char *dir_what)
{
    if (!c->dir)
        abt_bad_arg(prog, "--dir", "missing; accepted: a directory where files can be created");
    if (!!c->trace == c->no_record)
        abt_bad_arg(prog, "--trace", c->trace ? "given together with --no-record; accepted: "
                    "exactly one of --trace PATH or --no-record" : "missing; accepted: "
                    "exactly one of --trace PATH or --no-record");
    abt_check_dir(prog, "--dir", c->dir, dir_flags, dir_what);
    if (c->trace) {
        FILE *f = fopen(c->trace, "wb");
        if (!f)
            abt_bad_arg(prog, "--trace", "given '%s': %s; accepted: a writable file path",
                        c->trace, strerror(errno));
        fclose(f);
    }
}

/* --describe: the lines every workload prints, before and after its own. */
static inline void abt_describe_head(const char *prog, const char *summary)
{
    printf("name: %s\nsummary: %s\n", prog, summary);
    printf("record_size: %zu\ntrace_kind: %d\n", sizeof(abt_record), ABT_KIND_OPS);
}

static inline void abt_describe_timing(void)
{
    printf("clock: CLOCK_MONOTONIC ns; t_end_ns after the dilation spin\n");
    printf("dilate: each op's thread CPU time is stretched by F (spin after the call); "
           "blocked time is not; records flagged DILATED when F > 1\n");
}

static inline void abt_describe_common(const abt_common *c)
{
    printf("param.dir: %s\n", c->dir ? c->dir : "");
    printf("param.dilate: %g\n", c->dilate);
    printf("param.trace: %s\n", c->trace ? c->trace : "");
    printf("param.no_record: %d\n", c->no_record);
    printf("param.keep: %d\n", c->keep);
}

/* ---- the start gate ----------------------------------------------------------
 * Workers wait behind the gate until every one of them exists, so none starts early
 * (IOzone does the same); if one cannot be created the gate opens with "abort" and the
 * rest leave instead of hanging at the barrier. pshared: forked workers share it. */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int value; /* 0 closed, 1 go, -1 abort */
} abt_gate;

static inline void abt_gate_init(abt_gate *g, int pshared)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, pshared);
    pthread_mutex_init(&g->mu, &ma);
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, pshared);
    pthread_cond_init(&g->cv, &ca);
    g->value = 0;
}

/* Block until the gate opens; 1 = go, 0 = abort. */
static inline int abt_gate_wait(abt_gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (g->value == 0) pthread_cond_wait(&g->cv, &g->mu);
    int go = g->value > 0;
    pthread_mutex_unlock(&g->mu);
    return go;
}

static inline void abt_gate_open(abt_gate *g, int value)
{
    pthread_mutex_lock(&g->mu);
    g->value = value;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Start n threads fn((void *)i) behind the gate, open it, join them all. Returns ns
 * from the opening to the last join, or 0 if one could not start (the rest leave). */
static inline uint64_t abt_run_threads(const char *prog, abt_gate *g, long n,
                                       void *(*fn)(void *))
{
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!th) { fprintf(stderr, "%s: out of memory for %ld threads\n", prog, n); return 0; }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    for (long i = 0; i < n; i++) {
        int e = pthread_create(&th[i], &attr, fn, (void *)(uintptr_t)i);
        if (e) {
            fprintf(stderr, "%s: cannot start thread %ld: %s\n", prog, i, strerror(e));
            abt_gate_open(g, -1);
            for (long j = 0; j < i; j++) pthread_join(th[j], NULL);
            free(th);
            return 0;
        }
    }
    pthread_attr_destroy(&attr);
    uint64_t t0 = abt_now_ns();
    abt_gate_open(g, 1);
    for (long i = 0; i < n; i++) pthread_join(th[i], NULL);
    free(th);
    return abt_now_ns() - t0;
}

/* ---- op records --------------------------------------------------------------- */

/* One cache line per worker: each bumps only its own n. */
typedef struct {
    _Alignas(64) uint64_t n; /* ops done; records stored when recording */
    uint32_t pid;            /* the kernel task (gettid) that ran the worker */
    int failed;
} abt_wstate;

typedef struct {
    const char *prog, *who; /* who: "thread" or "worker", in failure messages */
    double dilate;
    long workers;
    uint64_t per;           /* record slots per worker */
    abt_wstate *ws;
    abt_record *recs;       /* workers x per, or NULL (--no-record: ops counted only) */
} abt_oplog;

/* Slots for ops records: rounded up to even, so each worker's slice is 64-byte aligned. */
static inline uint64_t abt_oplog_slots(uint64_t ops) { return (ops + 1) & ~(uint64_t)1; }

static inline size_t abt_oplog_bytes(long workers, uint64_t per, int no_record)
{
    return (size_t)workers * (sizeof(abt_wstate) + (no_record ? 0 : per * sizeof(abt_record)));
}

/* Lay the log out in mem: abt_oplog_bytes() long, 64-byte aligned and zeroed (zeroing
 * touches every page before the run). */
static inline void abt_oplog_place(abt_oplog *l, void *mem, long workers, uint64_t per,
                                   int no_record)
{
    l->workers = workers;
    l->per = per;
    l->ws = mem;
    l->recs = no_record ? NULL : (abt_record *)(l->ws + workers);
}

/* A worker's first step, in the task that runs it: its kernel tid goes in every record's
 * pid, so the records join the kernel's traces (sched_switch's pids) by worker. */
static inline void abt_worker_start(abt_oplog *l, uint32_t w)
{
    l->ws[w].pid = (uint32_t)syscall(SYS_gettid);
}

/* Close the span of one call and record it; ret < 0 is a failure with errno err: it is
 * recorded with ABT_F_ERROR, said on stderr and marks the worker failed. A WRITE's
 * bytes are what it wrote. Returns 1 if the call succeeded. */
static inline int abt_op_done(abt_oplog *l, uint32_t w, abt_span *s, uint16_t op,
                              uint16_t flags, long ret, int err)
{
    uint64_t t1 = abt_span_end(s, l->dilate);
    abt_wstate *st = &l->ws[w];
    flags |= abt_span_flags(l->dilate) | (ret < 0 ? ABT_F_ERROR : 0);
    uint32_t bytes = ret < 0 ? (uint32_t)err : op == ABT_OP_WRITE ? (uint32_t)ret : 0;
    if (l->recs)
        l->recs[w * l->per + st->n] = (abt_record){st->pid, w, op, flags, bytes, s->t_start_ns, t1};
    st->n++;
    if (ret >= 0) return 1;
    static const char *names[] = {"call", "open", "write", "fsync", "close"};
    fprintf(stderr, "%s: %s %u: %s failed: %s\n", l->prog, l->who, w,
            names[op < 5 ? op : 0], strerror(err));
    st->failed = 1;
    return 0;
}

/* Compact the slots in worker order (in place) and write one trace; 0 or -1 (errno). */
static inline int abt_oplog_save(abt_oplog *l, const char *path, uint64_t *count)
{
    uint64_t k = 0;
    for (long i = 0; i < l->workers; i++) {
        memmove(l->recs + k, l->recs + i * l->per, l->ws[i].n * sizeof(abt_record));
        k += l->ws[i].n;
    }
    *count = k;
    return abt_trace_write(path, ABT_KIND_OPS, l->recs, k);
}

/* ---- files and the result ------------------------------------------------------ */

/* DIR/PROG.w, or DIR/PROG.w.j when a worker makes several files (j >= 0). */
static inline void abt_file_path(char *out, size_t len, const char *dir, const char *prog,
                                 long w, long j)
{
    if (j < 0) snprintf(out, len, "%s/%s.%ld", dir, prog, w);
    else snprintf(out, len, "%s/%s.%ld.%ld", dir, prog, w, j);
}

/* Remove what abt_file_path named: files per worker, 0 = one file without .j. */
static inline void abt_remove_files(const char *dir, const char *prog, long workers, long files)
{
    char path[PATH_MAX];
    for (long w = 0; w < workers; w++)
        for (long j = files ? 0 : -1; j < (files ? files : 0); j++) {
            abt_file_path(path, sizeof path, dir, prog, w, j);
            unlink(path);
        }
}

/* After the run: save the trace, remove the files (unless --keep), print the result as
 * "key: value" lines (elapsed_ns, save_ns, ops, records). Returns the exit code: 1 if
 * the run did not start (elapsed 0), a worker failed or the trace was not written. */
static inline int abt_finish(abt_oplog *l, const abt_common *c, uint64_t elapsed, long files)
{
    int failed = elapsed == 0;
    uint64_t ops = 0, saved = 0;
    for (long i = 0; i < l->workers; i++) { failed |= l->ws[i].failed; ops += l->ws[i].n; }
    uint64_t t_save = abt_now_ns();
    if (c->trace && abt_oplog_save(l, c->trace, &saved) != 0) {
        fprintf(stderr, "%s: cannot write trace %s: %s\n", l->prog, c->trace, strerror(errno));
        failed = 1;
    }
    t_save = abt_now_ns() - t_save;
    if (!c->keep) abt_remove_files(c->dir, l->prog, l->workers, files);
    printf("elapsed_ns: %llu\nsave_ns: %llu\nops: %llu\nrecords: %llu\n",
           (unsigned long long)elapsed, (unsigned long long)t_save,
           (unsigned long long)ops, (unsigned long long)saved);
    return failed ? 1 : 0;
}

#endif
