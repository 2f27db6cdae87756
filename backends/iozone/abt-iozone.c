/*
 * abt-iozone - IOzone's throughput-mode initial write, the critical path of the
 * IOzone runs in Chang, Li, Grove and Cameron, "How Processor Speedups Can Slow Down
 * I/O Performance" (MASCOTS 2014, Figs. 4/5): N threads each create their own file DIR/abt-iozone.<i>,
 * wait at a barrier until every open is done, write S bytes in records of R
 * bytes, fsync and close. The start is a pthread barrier (--start=barrier), or
 * IOzone's (--start=poll): each child, once its file is open, polls a shared flag with
 * select() and a 1 us timeout, and a parent thread sets the flag once every child is
 * ready, so the release is paced by timers, not by the CPU. One abt_record per open,
 * start wait, write, fsync and close; tid is the thread index 0..N-1, pid its kernel task. The
 * records live in preallocated per-thread slots and are written after all
 * threads have joined, in thread order, so recording costs no I/O in the run.
 * Statistics (eq. 3 throughput, X/Y/Z classes) are computed in Python.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/select.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abt_workload.h"

#define PROG "abt-iozone"
#define MAX_THREADS 4096
#define MAX_RECORDS_PER_THREAD (1u << 24)
#define DIRECT_ALIGN 4096

typedef struct {
    abt_common c;
    long threads;
    uint64_t file_size, record_size;
    int fsync, direct, start_poll;
    const char *go_file;   /* --go-file: "1" written to it at the go (--start=poll) */
} opts;

static opts g_o;
static char **g_bufs;   /* one write buffer per thread, DIRECT_ALIGN aligned */
static abt_oplog g_log;
static pthread_barrier_t g_barrier;
/* --start=poll: children ready, and the parent's go (IOzone's CHILD_STATE_READY/BEGIN) */
static atomic_long g_ready;
static atomic_int g_go;
static int g_go_fd = -1;   /* --go-file, opened before the run */
/* start gate: threads run only once all were created, or leave if one was not */
static abt_gate g_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void usage(FILE *f)
{
    fprintf(f, "usage: %s --dir DIR (--trace PATH | --no-record) [--threads N]\n"
               "  [--file-size SIZE] [--record-size SIZE] [--fsync | --no-fsync]\n"
               "  [--start barrier|poll [--go-file PATH]] [--direct] [--dilate F] [--keep]\n"
               "  [--describe]\n", PROG);
}

static void describe(const opts *o)
{
    abt_describe_head(PROG, "IOzone throughput-mode initial write: open (create), barrier, "
                      "writes, fsync, close per thread");
    printf("pid: the process id (one process)\n");
    printf("tid: thread index 0..threads-1, not the kernel tid\n");
    abt_describe_timing();
    printf("ops_per_thread: open barrier write*(file_size/record_size) [fsync] close\n");
    printf("param.threads: %ld\n", o->threads);
    printf("param.file_size: %llu\n", (unsigned long long)o->file_size);
    printf("param.record_size: %llu\n", (unsigned long long)o->record_size);
    printf("param.fsync: %d\n", o->fsync);
    printf("param.direct: %d\n", o->direct);
    printf("param.start: %s\n", o->start_poll ? "poll" : "barrier");
    printf("param.go_file: %s\n", o->go_file ? o->go_file : "none");
    abt_describe_common(&o->c);
}

static void parse_opts(opts *o, int argc, char **argv)
{
    enum { O_THREADS = 256, O_FSIZE, O_RSIZE, O_START, O_GO };
    static const struct option lo[] = {
        {"threads", 1, 0, O_THREADS}, {"file-size", 1, 0, O_FSIZE},
        {"record-size", 1, 0, O_RSIZE}, {"fsync", 0, 0, 'f'}, {"no-fsync", 0, 0, 'F'},
        {"direct", 0, 0, 'D'}, {"start", 1, 0, O_START}, {"go-file", 1, 0, O_GO}, ABT_COMMON_OPTIONS, {0, 0, 0, 0}};
    *o = (opts){ABT_COMMON_DEFAULTS, 1, 128 << 10, 32 << 10, 1, 0, 0, NULL};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case O_THREADS: o->threads = abt_parse_long(PROG, "--threads", optarg, 1, MAX_THREADS); break;
        case O_FSIZE: o->file_size = abt_parse_size(PROG, "--file-size", optarg, 1, 1ull << 40); break;
        case O_RSIZE: o->record_size = abt_parse_size(PROG, "--record-size", optarg, 1, 1ull << 30); break;
        case 'f': o->fsync = 1; break;
        case 'F': o->fsync = 0; break;
        case 'D': o->direct = 1; break;
        case O_START:
            if (!strcmp(optarg, "poll")) o->start_poll = 1;
            else if (!strcmp(optarg, "barrier")) o->start_poll = 0;
            else abt_bad_arg(PROG, "--start", "'%s'; accepted: barrier | poll", optarg);
            break;
        case O_GO: o->go_file = optarg; break;
        default: abt_common_opt(PROG, &o->c, c, argv, usage);
        }
    }
    abt_no_operands(PROG, argc, argv);
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
    if (o->go_file && !o->start_poll)
        abt_bad_arg(PROG, "--go-file", "without --start poll; accepted: with --start poll only "
                    "(a barrier releases every thread at once, with no one to say go first)");
    abt_common_check(PROG, &o->c, o->direct ? O_DIRECT : 0,
                     o->direct ? "a writable directory on a filesystem with O_DIRECT"
                               : "a writable directory");
}

static void write_file(uint32_t w, int fd, uint16_t dflag)
{
    abt_span s;
    for (uint64_t i = 0; i < g_o.file_size / g_o.record_size; i++) {
        abt_span_begin(&s, g_o.c.dilate);
        ssize_t n = write(fd, g_bufs[w], g_o.record_size);
        if (!abt_op_done(&g_log, w, &s, ABT_OP_WRITE, dflag, n, errno)) return;
        if ((uint64_t)n != g_o.record_size) {
            fprintf(stderr, "%s: thread %u: short write (%zd of %llu bytes)\n", PROG, w,
                    n, (unsigned long long)g_o.record_size);
            g_log.ws[w].failed = 1;
            return;
        }
    }
    if (g_o.fsync) {
        abt_span_begin(&s, g_o.c.dilate);
        int r = fsync(fd);
        abt_op_done(&g_log, w, &s, ABT_OP_FSYNC, dflag, r, errno);
    }
}

/* IOzone's Poll(1): select() with a 1 us timeout, a timer's wait (its slack) per round.
 * Each round's CPU is dilated in place, as a slower clock would slow it then: dilating
 * the whole wait after the release would stack every thread's polling CPU behind the go. */
static void poll_1us(void)
{
    struct timeval tv = {0, 1};
    uint64_t cpu0 = g_o.c.dilate > 1.0 ? abt_thread_cpu_ns() : 0;
    select(0, NULL, NULL, NULL, &tv);
    abt_dilate_since(cpu0, g_o.c.dilate);
}

/* the parent's part of --start=poll: every child ready, then go; ends early when main
 * sets g_ready past the count (a run whose threads could not all start) */
static void *release_children(void *arg)
{
    (void)arg;
    while (atomic_load(&g_ready) < g_o.threads) poll_1us();
    /* e.g. the guest's tracing_on: what is traced starts when IOzone's clock does */
    if (g_go_fd >= 0 && write(g_go_fd, "1\n", 2) != 2)
        fprintf(stderr, "%s: cannot write to --go-file %s\n", PROG, g_o.go_file);
    atomic_store(&g_go, 1);
    return NULL;
}

static void wait_for_start(void)
{
    if (!g_o.start_poll) { pthread_barrier_wait(&g_barrier); return; }
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_go)) poll_1us();
}

static void *run_thread(void *arg)
{
    uint32_t w = (uint32_t)(uintptr_t)arg;
    if (!abt_gate_wait(&g_gate)) return NULL;
    abt_worker_start(&g_log, w);
    char path[PATH_MAX];
    abt_file_path(path, sizeof path, g_o.c.dir, PROG, w, -1);
    uint16_t dflag = g_o.direct ? ABT_F_DIRECT : 0;
    abt_span s;
    abt_span_begin(&s, g_o.c.dilate);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | (g_o.direct ? O_DIRECT : 0), 0644);
    abt_op_done(&g_log, w, &s, ABT_OP_OPEN, ABT_F_CREAT | dflag, fd, errno);
    /* every thread reaches the start, even after a failed open, or the rest hang */
    abt_span_begin(&s, g_o.c.dilate);
    wait_for_start();
    if (g_o.start_poll && g_o.c.dilate > 1.0)
        s.cpu0_ns = abt_thread_cpu_ns();   /* the polls were dilated as they ran */
    abt_op_done(&g_log, w, &s, ABT_OP_BARRIER, 0, 0, 0);
    if (fd < 0) return NULL;
    write_file(w, fd, dflag);
    abt_span_begin(&s, g_o.c.dilate);
    int r = close(fd);
    abt_op_done(&g_log, w, &s, ABT_OP_CLOSE, dflag, r, errno);
    return NULL;
}

/* Write buffers, then the op log with a cache-line aligned slice per thread (count
 * known up front), zeroed so no page is first touched in the run. 0 = out of memory. */
static int make_workers(const opts *o)
{
    uint64_t per = abt_oplog_slots(3 + o->file_size / o->record_size + (o->fsync ? 1 : 0));
    if (!(g_bufs = calloc((size_t)o->threads, sizeof *g_bufs))) return 0;
    for (long i = 0; i < o->threads; i++) {
        if (posix_memalign((void **)&g_bufs[i], DIRECT_ALIGN, o->record_size)) return 0;
        memset(g_bufs[i], 0xA5, o->record_size);
    }
    size_t bytes = abt_oplog_bytes(o->threads, per, o->c.no_record);
    void *mem = aligned_alloc(64, bytes);
    if (!mem) return 0;
    memset(mem, 0, bytes);
    g_log = (abt_oplog){.prog = PROG, .who = "thread", .dilate = o->c.dilate};
    abt_oplog_place(&g_log, mem, o->threads, per, o->c.no_record);
    return 1;
}

int main(int argc, char **argv)
{
    parse_opts(&g_o, argc, argv);
    if (g_o.c.describe) { describe(&g_o); return 0; }
    check_opts(&g_o);
    if (!make_workers(&g_o)) {
        fprintf(stderr, "%s: out of memory for records or buffers\n", PROG);
        return 1;
    }
    if (g_o.go_file && (g_go_fd = open(g_o.go_file, O_WRONLY)) < 0) {
        fprintf(stderr, "%s: cannot open --go-file %s\n", PROG, g_o.go_file);
        return 2;
    }
    pthread_barrier_init(&g_barrier, NULL, (unsigned)g_o.threads);
    pthread_t parent;
    if (g_o.start_poll && pthread_create(&parent, NULL, release_children, NULL)) {
        fprintf(stderr, "%s: cannot start the parent thread of --start=poll\n", PROG);
        return 1;
    }
    uint64_t elapsed = abt_run_threads(PROG, &g_gate, g_o.threads, run_thread);
    if (g_o.start_poll) {
        atomic_store(&g_ready, g_o.threads);   /* lets the parent go if threads failed to start */
        pthread_join(parent, NULL);
    }
    int rc = abt_finish(&g_log, &g_o.c, elapsed, 0);
    free(g_log.ws);
    for (long i = 0; i < g_o.threads; i++) free(g_bufs[i]);
    free(g_bufs);
    return rc;
}
