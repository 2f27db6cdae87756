/*
 * abt-iozone - IOzone's throughput-mode initial write, the critical path of
 * seed 000 (Fig. 4/5): N threads each create their own file DIR/abt-iozone.<i>,
 * wait at a barrier until every open is done, write S bytes in records of R
 * bytes, fsync (IOzone -e; on by default) and close. One abt_record per open,
 * barrier wait, write, fsync and close; tid is the thread index 0..N-1. The
 * records live in preallocated per-thread arrays and are written after all
 * threads have joined, in thread order, so recording costs no I/O in the run.
 * Statistics (eq. 3 throughput, X/Y/Z classes) are computed in Python.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abt_dilate.h"
#include "abt_gate.h"
#include "abt_opts.h"
#include "abt_trace.h"

#define PROG "abt-iozone"
#define MAX_THREADS 4096
#define MAX_RECORDS_PER_THREAD (1u << 24)
#define DIRECT_ALIGN 4096

typedef struct {
    long threads;
    uint64_t file_size, record_size;
    const char *dir, *trace;
    int fsync, direct, no_record, keep, describe;
    double dilate;
} opts;

/* cache-line aligned so threads bumping n do not share lines */
typedef struct {
    _Alignas(64) pthread_t th;
    uint32_t idx;
    const opts *o;
    char *buf;
    abt_record *recs; /* NULL with --no-record: ops are timed but not stored */
    uint64_t n;       /* ops done (records stored when recs != NULL) */
    int failed;
} worker;

static uint32_t g_pid;
static pthread_barrier_t g_barrier;
/* start gate: threads run only once all were created, or leave if one was not */
static abt_gate g_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void usage(FILE *f)
{
    fprintf(f, "usage: %s --dir DIR (--trace PATH | --no-record) [--threads N]\n"
               "  [--file-size SIZE] [--record-size SIZE] [--fsync | --no-fsync]\n"
               "  [--direct] [--dilate F] [--keep] [--describe]\n", PROG);
}

static void describe(const opts *o)
{
    printf("name: %s\n", PROG);
    printf("summary: IOzone throughput-mode initial write: open (create), barrier, "
           "writes, fsync, close per thread\n");
    printf("record_size: %zu\n", sizeof(abt_record));
    printf("trace_kind: %d\n", ABT_KIND_OPS);
    printf("pid: the process id (one process)\n");
    printf("tid: thread index 0..threads-1, not the kernel tid\n");
    printf("clock: CLOCK_MONOTONIC ns; t_end_ns after the dilation spin\n");
    printf("dilate: each op's thread CPU time is stretched by F (spin after the call); "
           "blocked time is not; records flagged DILATED when F > 1\n");
    printf("ops_per_thread: open barrier write*(file_size/record_size) [fsync] close\n");
    printf("param.threads: %ld\n", o->threads);
    printf("param.file_size: %llu\n", (unsigned long long)o->file_size);
    printf("param.record_size: %llu\n", (unsigned long long)o->record_size);
    printf("param.dir: %s\n", o->dir ? o->dir : "");
    printf("param.fsync: %d\n", o->fsync);
    printf("param.direct: %d\n", o->direct);
    printf("param.dilate: %g\n", o->dilate);
    printf("param.trace: %s\n", o->trace ? o->trace : "");
    printf("param.no_record: %d\n", o->no_record);
    printf("param.keep: %d\n", o->keep);
}

static void parse_opts(opts *o, int argc, char **argv)
{
    enum { O_THREADS = 256, O_FSIZE, O_RSIZE, O_DIR, O_DILATE, O_TRACE };
    static const struct option lo[] = {
        {"threads", 1, 0, O_THREADS}, {"file-size", 1, 0, O_FSIZE},
        {"record-size", 1, 0, O_RSIZE}, {"dir", 1, 0, O_DIR},
        {"dilate", 1, 0, O_DILATE}, {"trace", 1, 0, O_TRACE},
        {"fsync", 0, 0, 'f'}, {"no-fsync", 0, 0, 'F'}, {"direct", 0, 0, 'D'},
        {"no-record", 0, 0, 'n'}, {"keep", 0, 0, 'k'}, {"describe", 0, 0, 'd'},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    *o = (opts){1, 128 << 10, 32 << 10, NULL, NULL, 1, 0, 0, 0, 0, 1.0};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case O_THREADS: o->threads = abt_parse_long(PROG, "--threads", optarg, 1, MAX_THREADS); break;
        case O_FSIZE: o->file_size = abt_parse_size(PROG, "--file-size", optarg, 1, 1ull << 40); break;
        case O_RSIZE: o->record_size = abt_parse_size(PROG, "--record-size", optarg, 1, 1ull << 30); break;
        case O_DIR: o->dir = optarg; break;
        case O_DILATE: o->dilate = abt_parse_dilate(PROG, "--dilate", optarg, 1000.0); break;
        case O_TRACE: o->trace = optarg; break;
        case 'f': o->fsync = 1; break;
        case 'F': o->fsync = 0; break;
        case 'D': o->direct = 1; break;
        case 'n': o->no_record = 1; break;
        case 'k': o->keep = 1; break;
        case 'd': o->describe = 1; break;
        case 'h': usage(stdout); exit(0);
        case ':': abt_bad_arg(PROG, argv[optind - 1], "missing value; accepted: see --help");
        default:
            abt_bad_arg(PROG, argv[optind - 1], "unknown option; accepted: see --help");
        }
    }
    if (optind < argc)
        abt_bad_arg(PROG, argv[optind], "unexpected argument; accepted: options only");
}

/* Relations between options, then the directory and trace path, up front. */
static void check_opts(const opts *o)
{
    if (o->record_size > o->file_size)
        abt_bad_arg(PROG, "--record-size", "%llu is larger than --file-size %llu; accepted: "
                    "1 to file size", (unsigned long long)o->record_size,
                    (unsigned long long)o->file_size);
    if (o->file_size % o->record_size)
        abt_bad_arg(PROG, "--file-size", "%llu is not a multiple of --record-size %llu; "
                    "accepted: a multiple of the record size",
                    (unsigned long long)o->file_size, (unsigned long long)o->record_size);
    if (o->file_size / o->record_size > MAX_RECORDS_PER_THREAD)
        abt_bad_arg(PROG, "--record-size", "file-size/record-size is %llu; accepted: at most %u "
                    "records per thread", (unsigned long long)(o->file_size / o->record_size),
                    MAX_RECORDS_PER_THREAD);
    if (o->direct && o->record_size % DIRECT_ALIGN)
        abt_bad_arg(PROG, "--record-size", "%llu with --direct; accepted: a multiple of %d",
                    (unsigned long long)o->record_size, DIRECT_ALIGN);
    if (!o->dir)
        abt_bad_arg(PROG, "--dir", "missing; accepted: a directory where files can be created");
    if (!!o->trace == o->no_record)
        abt_bad_arg(PROG, "--trace", o->trace ? "given together with --no-record; accepted: "
                    "exactly one of --trace PATH or --no-record" : "missing; accepted: "
                    "exactly one of --trace PATH or --no-record");
    abt_check_dir(PROG, "--dir", o->dir, o->direct ? O_DIRECT : 0,
                  o->direct ? "a writable directory on a filesystem with O_DIRECT"
                            : "a writable directory");
    if (o->trace) {
        FILE *f = fopen(o->trace, "wb");
        if (!f)
            abt_bad_arg(PROG, "--trace", "given '%s': %s; accepted: a writable file path",
                        o->trace, strerror(errno));
        fclose(f);
    }
}

static void file_path(char *out, size_t len, const char *dir, uint32_t idx)
{
    snprintf(out, len, "%s/" PROG ".%u", dir, idx);
}

static void put(worker *w, uint16_t op, uint16_t flags, uint32_t bytes, uint64_t t0, uint64_t t1)
{
    if (w->recs) w->recs[w->n] = (abt_record){g_pid, w->idx, op, flags, bytes, t0, t1};
    w->n++;
}

/* Close the span of one call and record it; ret < 0 is a failure with err. */
static int op_done(worker *w, abt_span *s, uint16_t op, uint16_t flags, long ret, int err)
{
    uint64_t t1 = abt_span_end(s, w->o->dilate);
    flags |= abt_span_flags(w->o->dilate);
    if (ret >= 0) {
        put(w, op, flags, op == ABT_OP_WRITE ? (uint32_t)ret : 0, s->t_start_ns, t1);
        return 1;
    }
    put(w, op, flags | ABT_F_ERROR, (uint32_t)err, s->t_start_ns, t1);
    static const char *names[] = {"", "open", "write", "fsync", "close"};
    fprintf(stderr, "%s: thread %u: %s failed: %s\n", PROG, w->idx, names[op], strerror(err));
    w->failed = 1;
    return 0;
}

static void write_file(worker *w, int fd, uint16_t dflag)
{
    const opts *o = w->o;
    abt_span s;
    for (uint64_t i = 0; i < o->file_size / o->record_size; i++) {
        abt_span_begin(&s, o->dilate);
        ssize_t n = write(fd, w->buf, o->record_size);
        if (!op_done(w, &s, ABT_OP_WRITE, dflag, n, errno)) return;
        if ((uint64_t)n != o->record_size) {
            fprintf(stderr, "%s: thread %u: short write (%zd of %llu bytes)\n", PROG, w->idx,
                    n, (unsigned long long)o->record_size);
            w->failed = 1;
            return;
        }
    }
    if (o->fsync) {
        abt_span_begin(&s, o->dilate);
        int r = fsync(fd);
        op_done(w, &s, ABT_OP_FSYNC, dflag, r, errno);
    }
}

static void *run_thread(void *arg)
{
    worker *w = arg;
    const opts *o = w->o;
    if (!abt_gate_wait(&g_gate)) return NULL;
    char path[PATH_MAX];
    file_path(path, sizeof path, o->dir, w->idx);
    uint16_t dflag = o->direct ? ABT_F_DIRECT : 0;
    abt_span s;
    abt_span_begin(&s, o->dilate);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | (o->direct ? O_DIRECT : 0), 0644);
    op_done(w, &s, ABT_OP_OPEN, ABT_F_CREAT | dflag, fd, errno);
    /* every thread reaches the barrier, even after a failed open, or the rest hang */
    abt_span_begin(&s, o->dilate);
    pthread_barrier_wait(&g_barrier);
    op_done(w, &s, ABT_OP_BARRIER, 0, 0, 0);
    if (fd < 0) return NULL;
    write_file(w, fd, dflag);
    abt_span_begin(&s, o->dilate);
    int r = close(fd);
    op_done(w, &s, ABT_OP_CLOSE, dflag, r, errno);
    return NULL;
}

/* Write buffers, then one record block with a cache-line aligned slice per
 * thread (count known up front), zeroed so no page is first touched in the run. */
static worker *make_workers(const opts *o)
{
    uint64_t per = 3 + o->file_size / o->record_size + (o->fsync ? 1 : 0);
    size_t slice = (size_t)((per + 1) & ~1ull); /* records; 2 records = 64 bytes */
    worker *ws = aligned_alloc(64, (size_t)o->threads * sizeof *ws);
    if (!ws) return NULL;
    for (long i = 0; i < o->threads; i++) {
        worker *w = &ws[i];
        *w = (worker){.idx = (uint32_t)i, .o = o};
        if (posix_memalign((void **)&w->buf, DIRECT_ALIGN, o->record_size)) return NULL;
        memset(w->buf, 0xA5, o->record_size);
    }
    if (o->no_record) return ws;
    size_t bytes = slice * sizeof(abt_record) * (size_t)o->threads;
    abt_record *block = aligned_alloc(64, bytes);
    if (!block) return NULL;
    memset(block, 0, bytes);
    for (long i = 0; i < o->threads; i++) ws[i].recs = block + slice * (size_t)i;
    return ws;
}

/* Start all threads behind the gate; open it; join. Returns elapsed ns or 0. */
static uint64_t run_all(worker *ws, long n)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    for (long i = 0; i < n; i++) {
        int e = pthread_create(&ws[i].th, &attr, run_thread, &ws[i]);
        if (e) {
            fprintf(stderr, "%s: cannot start thread %ld: %s\n", PROG, i, strerror(e));
            abt_gate_open(&g_gate, -1);
            for (long j = 0; j < i; j++) pthread_join(ws[j].th, NULL);
            return 0;
        }
    }
    pthread_attr_destroy(&attr);
    uint64_t t0 = abt_now_ns();
    abt_gate_open(&g_gate, 1);
    for (long i = 0; i < n; i++) pthread_join(ws[i].th, NULL);
    return abt_now_ns() - t0;
}

/* Compact the per-thread slices in thread order (in place) and write one trace. */
static int save_trace(const opts *o, worker *ws, uint64_t *count)
{
    abt_record *all = ws[0].recs;
    uint64_t k = 0;
    for (long i = 0; i < o->threads; i++) {
        memmove(all + k, ws[i].recs, ws[i].n * sizeof *all);
        k += ws[i].n;
    }
    *count = k;
    return abt_trace_write(o->trace, ABT_KIND_OPS, all, k);
}

static void free_workers(worker *ws, long n)
{
    free(ws[0].recs); /* the record block (NULL with --no-record) */
    for (long i = 0; i < n; i++) free(ws[i].buf);
    free(ws);
}

static void remove_files(const opts *o)
{
    char path[PATH_MAX];
    for (long i = 0; i < o->threads; i++) {
        file_path(path, sizeof path, o->dir, (uint32_t)i);
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    opts o;
    parse_opts(&o, argc, argv);
    if (o.describe) { describe(&o); return 0; }
    check_opts(&o);
    g_pid = (uint32_t)getpid();
    worker *ws = make_workers(&o);
    if (!ws) { fprintf(stderr, "%s: out of memory for records or buffers\n", PROG); return 1; }
    pthread_barrier_init(&g_barrier, NULL, (unsigned)o.threads);
    uint64_t elapsed = run_all(ws, o.threads);
    int failed = elapsed == 0;
    uint64_t ops = 0, saved = 0;
    for (long i = 0; i < o.threads; i++) { failed |= ws[i].failed; ops += ws[i].n; }
    uint64_t t_save = abt_now_ns();
    if (o.trace && save_trace(&o, ws, &saved) != 0) {
        fprintf(stderr, "%s: cannot write trace %s: %s\n", PROG, o.trace, strerror(errno));
        failed = 1;
    }
    t_save = abt_now_ns() - t_save;
    free_workers(ws, o.threads);
    if (!o.keep) remove_files(&o);
    printf("elapsed_ns: %llu\nsave_ns: %llu\nops: %llu\nrecords: %llu\n",
           (unsigned long long)elapsed, (unsigned long long)t_save,
           (unsigned long long)ops, (unsigned long long)saved);
    return failed ? 1 : 0;
}
