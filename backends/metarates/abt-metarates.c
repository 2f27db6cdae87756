/*
 * abt-metarates - Metarates' file-creation-rate (FCR) test, seed 000 Fig. 6:
 * N workers wait at a start barrier, then each creates F files
 * DIR/abt-metarates.<w>.<j> with open(O_CREAT|O_WRONLY), fsync and close;
 * --write-bytes N writes N bytes into each file before its fsync (mdtest -w N;
 * 0, the default, is the paper's test).
 * Workers are threads, or processes with --processes (fork; records and the
 * barrier live in a MAP_SHARED anonymous mapping so the parent writes one
 * trace). One abt_record per barrier wait, open, write, fsync and close; tid is the
 * worker index 0..N-1, pid the process that ran it. FCR (eq. 9) is Python's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abt_dilate.h"
#include "abt_gate.h"
#include "abt_opts.h"
#include "abt_trace.h"

#define PROG "abt-metarates"
#define MAX_WORKERS 4096
#define MAX_FILES 1000000
#define MAX_TOTAL_FILES (1L << 22)
#define MAX_WRITE_BYTES (64L << 20)

typedef struct {
    long workers, files, write_bytes;
    const char *dir, *trace;
    int processes, no_record, keep, describe;
    double dilate;
} opts;

/* cache-line aligned: each worker (thread or process) bumps its own n */
typedef struct {
    _Alignas(64) uint64_t n; /* ops done; records stored when recording */
    uint32_t pid;
    int failed;
} wstate;

/* Everything workers share; one MAP_SHARED mapping, so forked children too. */
typedef struct {
    _Alignas(64) pthread_barrier_t barrier;
    abt_gate gate; /* start only once every worker exists */
    const opts *o;
    uint64_t per; /* record slots per worker */
    wstate *ws;
    abt_record *recs; /* NULL with --no-record */
    const char *data; /* write_bytes of file content */
} shared;

static shared *g_sh;

static void usage(FILE *f)
{
    fprintf(f, "usage: %s --dir DIR (--trace PATH | --no-record) [--workers N]\n"
               "  [--files F] [--write-bytes N] [--processes] [--dilate F] [--keep] [--describe]\n",
            PROG);
}

static void describe(const opts *o)
{
    printf("name: %s\n", PROG);
    printf("summary: Metarates file-creation rate: barrier, then per file open(O_CREAT), "
           "write (with --write-bytes), fsync, close, per worker\n");
    printf("record_size: %zu\n", sizeof(abt_record));
    printf("trace_kind: %d\n", ABT_KIND_OPS);
    printf("pid: the process that ran the worker (one per worker with --processes)\n");
    printf("tid: worker index 0..workers-1, not the kernel tid\n");
    printf("clock: CLOCK_MONOTONIC ns; t_end_ns after the dilation spin\n");
    printf("dilate: each op's thread CPU time is stretched by F (spin after the call); "
           "blocked time is not; records flagged DILATED when F > 1\n");
    printf("ops_per_worker: barrier (open [write] fsync close)*files\n");
    printf("param.workers: %ld\n", o->workers);
    printf("param.files: %ld\n", o->files);
    printf("param.write_bytes: %ld\n", o->write_bytes);
    printf("param.dir: %s\n", o->dir ? o->dir : "");
    printf("param.processes: %d\n", o->processes);
    printf("param.dilate: %g\n", o->dilate);
    printf("param.trace: %s\n", o->trace ? o->trace : "");
    printf("param.no_record: %d\n", o->no_record);
    printf("param.keep: %d\n", o->keep);
}

static void parse_opts(opts *o, int argc, char **argv)
{
    enum { O_WORKERS = 256, O_FILES, O_DIR, O_DILATE, O_TRACE, O_WRITE };
    static const struct option lo[] = {
        {"workers", 1, 0, O_WORKERS}, {"files", 1, 0, O_FILES}, {"dir", 1, 0, O_DIR},
        {"dilate", 1, 0, O_DILATE}, {"trace", 1, 0, O_TRACE}, {"write-bytes", 1, 0, O_WRITE},
        {"processes", 0, 0, 'p'},
        {"no-record", 0, 0, 'n'}, {"keep", 0, 0, 'k'}, {"describe", 0, 0, 'd'},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    *o = (opts){1, 4, 0, NULL, NULL, 0, 0, 0, 0, 1.0};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case O_WORKERS: o->workers = abt_parse_long(PROG, "--workers", optarg, 1, MAX_WORKERS); break;
        case O_FILES: o->files = abt_parse_long(PROG, "--files", optarg, 1, MAX_FILES); break;
        case O_WRITE:
            o->write_bytes = abt_parse_long(PROG, "--write-bytes", optarg, 0, MAX_WRITE_BYTES);
            break;
        case O_DIR: o->dir = optarg; break;
        case O_DILATE: o->dilate = abt_parse_dilate(PROG, "--dilate", optarg, 1000.0); break;
        case O_TRACE: o->trace = optarg; break;
        case 'p': o->processes = 1; break;
        case 'n': o->no_record = 1; break;
        case 'k': o->keep = 1; break;
        case 'd': o->describe = 1; break;
        case 'h': usage(stdout); exit(0);
        case ':': abt_bad_arg(PROG, argv[optind - 1], "missing value; accepted: see --help");
        default: abt_bad_arg(PROG, argv[optind - 1], "unknown option; accepted: see --help");
        }
    }
    if (optind < argc)
        abt_bad_arg(PROG, argv[optind], "unexpected argument; accepted: options only");
}

static void check_opts(const opts *o)
{
    if (o->workers * o->files > MAX_TOTAL_FILES)
        abt_bad_arg(PROG, "--files", "workers x files is %ld; accepted: at most %ld",
                    o->workers * o->files, MAX_TOTAL_FILES);
    if (!o->dir)
        abt_bad_arg(PROG, "--dir", "missing; accepted: a directory where files can be created");
    if (!!o->trace == o->no_record)
        abt_bad_arg(PROG, "--trace", o->trace ? "given together with --no-record; accepted: "
                    "exactly one of --trace PATH or --no-record" : "missing; accepted: "
                    "exactly one of --trace PATH or --no-record");
    abt_check_dir(PROG, "--dir", o->dir, 0, "a writable directory");
    if (o->trace) {
        FILE *f = fopen(o->trace, "wb");
        if (!f)
            abt_bad_arg(PROG, "--trace", "given '%s': %s; accepted: a writable file path",
                        o->trace, strerror(errno));
        fclose(f);
    }
}

static void file_path(char *out, size_t len, const char *dir, long w, long j)
{
    snprintf(out, len, "%s/" PROG ".%ld.%ld", dir, w, j);
}

/* Close the span of one call and record it; ret < 0 is a failure with err. */
static int op_done(uint32_t idx, abt_span *s, uint16_t op, long ret, int err)
{
    const opts *o = g_sh->o;
    uint64_t t1 = abt_span_end(s, o->dilate);
    uint16_t flags = abt_span_flags(o->dilate) | (op == ABT_OP_OPEN ? ABT_F_CREAT : 0);
    if (ret < 0) flags |= ABT_F_ERROR;
    wstate *w = &g_sh->ws[idx];
    if (g_sh->recs)
        g_sh->recs[idx * g_sh->per + w->n] = (abt_record){w->pid, idx, op, flags,
            ret < 0 ? (uint32_t)err : (op == ABT_OP_WRITE ? (uint32_t)ret : 0), s->t_start_ns, t1};
    w->n++;
    if (ret >= 0) return 1;
    static const char *names[] = {"", "open", "write", "fsync", "close"};
    fprintf(stderr, "%s: worker %u: %s failed: %s\n", PROG, idx, names[op], strerror(err));
    w->failed = 1;
    return 0;
}

/* write(2) until n bytes are written; n, or -1 with errno. */
static long write_all(int fd, const char *buf, long n)
{
    long done = 0;
    while (done < n) {
        ssize_t w = write(fd, buf + done, (size_t)(n - done));
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        done += w;
    }
    return done;
}

/* One worker: barrier, then open/fsync/close per file; stops at the first failure. */
static int run_worker(uint32_t idx)
{
    const opts *o = g_sh->o;
    if (!abt_gate_wait(&g_sh->gate)) return 0;
    g_sh->ws[idx].pid = (uint32_t)getpid();
    abt_span s;
    abt_span_begin(&s, o->dilate);
    pthread_barrier_wait(&g_sh->barrier);
    op_done(idx, &s, ABT_OP_BARRIER, 0, 0);
    char path[PATH_MAX];
    for (long j = 0; j < o->files; j++) {
        file_path(path, sizeof path, o->dir, idx, j);
        abt_span_begin(&s, o->dilate);
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (!op_done(idx, &s, ABT_OP_OPEN, fd, errno)) break;
        int ok = 1;
        if (o->write_bytes) {
            abt_span_begin(&s, o->dilate);
            long w = write_all(fd, g_sh->data, o->write_bytes);
            ok = op_done(idx, &s, ABT_OP_WRITE, w, errno);
        }
        abt_span_begin(&s, o->dilate);
        int r = fsync(fd);
        ok = op_done(idx, &s, ABT_OP_FSYNC, r, errno) && ok;
        abt_span_begin(&s, o->dilate);
        r = close(fd);
        if (!op_done(idx, &s, ABT_OP_CLOSE, r, errno) || !ok) break;
    }
    return g_sh->ws[idx].failed;
}

static void *thread_main(void *arg)
{
    run_worker((uint32_t)(uintptr_t)arg);
    return NULL;
}

/* One anonymous MAP_SHARED mapping: shared state, worker states, records. */
static shared *make_shared(const opts *o)
{
    uint64_t ops = o->write_bytes ? 4 : 3;
    uint64_t per = (1 + ops * (uint64_t)o->files + 1) & ~(uint64_t)1; /* 64-byte slots */
    size_t recs = o->no_record ? 0 : (size_t)(per * o->workers * sizeof(abt_record));
    size_t len = sizeof(shared) + o->workers * sizeof(wstate) + recs + (size_t)o->write_bytes;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    shared *sh = (shared *)m;
    sh->o = o;
    sh->per = per;
    sh->ws = (wstate *)(m + sizeof(shared));
    sh->recs = recs ? (abt_record *)(sh->ws + o->workers) : NULL;
    char *data = (char *)(sh->ws + o->workers) + recs;
    memset(data, 'a', (size_t)o->write_bytes); /* not zeros: nothing may skip writing it */
    sh->data = data;
    int pshared = o->processes ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, pshared);
    pthread_barrier_init(&sh->barrier, &ba, (unsigned)o->workers);
    abt_gate_init(&sh->gate, pshared);
    return sh;
}

/* Start every worker behind the gate, open it, wait. Returns elapsed ns, 0 if
 * a worker could not be started (the others are released and leave). */
static uint64_t run_threads(long n)
{
    pthread_t *th = calloc((size_t)n, sizeof *th);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    for (long i = 0; th && i < n; i++) {
        int e = pthread_create(&th[i], &attr, thread_main, (void *)(uintptr_t)i);
        if (e) {
            fprintf(stderr, "%s: cannot start thread %ld: %s\n", PROG, i, strerror(e));
            abt_gate_open(&g_sh->gate, -1);
            for (long j = 0; j < i; j++) pthread_join(th[j], NULL);
            free(th);
            return 0;
        }
    }
    pthread_attr_destroy(&attr);
    if (!th) return 0;
    uint64_t t0 = abt_now_ns();
    abt_gate_open(&g_sh->gate, 1);
    for (long i = 0; i < n; i++) pthread_join(th[i], NULL);
    free(th);
    return abt_now_ns() - t0;
}

static uint64_t run_processes(long n)
{
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    for (long i = 0; pids && i < n; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(run_worker((uint32_t)i) ? 1 : 0);
        if (pids[i] < 0) {
            fprintf(stderr, "%s: cannot start process %ld: %s\n", PROG, i, strerror(errno));
            abt_gate_open(&g_sh->gate, -1);
            for (long j = 0; j < i; j++) waitpid(pids[j], NULL, 0);
            free(pids);
            return 0;
        }
    }
    if (!pids) return 0;
    uint64_t t0 = abt_now_ns();
    abt_gate_open(&g_sh->gate, 1);
    for (long i = 0; i < n; i++) {
        int st;
        /* a child that died without reporting counts as failed */
        if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            g_sh->ws[i].failed = 1;
    }
    free(pids);
    return abt_now_ns() - t0;
}

/* Compact the per-worker slots in worker order and write one trace. */
static int save_trace(const opts *o, uint64_t *count)
{
    uint64_t k = 0;
    for (long i = 0; i < o->workers; i++) {
        memmove(g_sh->recs + k, g_sh->recs + i * g_sh->per, g_sh->ws[i].n * sizeof(abt_record));
        k += g_sh->ws[i].n;
    }
    *count = k;
    return abt_trace_write(o->trace, ABT_KIND_OPS, g_sh->recs, k);
}

static void remove_files(const opts *o)
{
    char path[PATH_MAX];
    for (long i = 0; i < o->workers; i++)
        for (long j = 0; j < o->files; j++) {
            file_path(path, sizeof path, o->dir, i, j);
            unlink(path);
        }
}

int main(int argc, char **argv)
{
    opts o;
    parse_opts(&o, argc, argv);
    if (o.describe) { describe(&o); return 0; }
    check_opts(&o);
    if (!(g_sh = make_shared(&o))) {
        fprintf(stderr, "%s: cannot map shared memory for records: %s\n", PROG, strerror(errno));
        return 1;
    }
    fflush(NULL); /* nothing buffered may be written twice by forked children */
    uint64_t elapsed = o.processes ? run_processes(o.workers) : run_threads(o.workers);
    int failed = elapsed == 0;
    uint64_t ops = 0, saved = 0;
    for (long i = 0; i < o.workers; i++) { failed |= g_sh->ws[i].failed; ops += g_sh->ws[i].n; }
    if (o.trace && save_trace(&o, &saved) != 0) {
        fprintf(stderr, "%s: cannot write trace %s: %s\n", PROG, o.trace, strerror(errno));
        failed = 1;
    }
    if (!o.keep) remove_files(&o);
    printf("elapsed_ns: %llu\nops: %llu\nrecords: %llu\n", (unsigned long long)elapsed,
           (unsigned long long)ops, (unsigned long long)saved);
    return failed ? 1 : 0;
}
