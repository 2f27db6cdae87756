/*
 * abt-metarates - Metarates' file-creation-rate (FCR) test, Chang et al. (MASCOTS 2014) Fig. 6:
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

#include "abt_workload.h"

#define PROG "abt-metarates"
#define MAX_WORKERS 4096
#define MAX_FILES 1000000
#define MAX_TOTAL_FILES (1L << 22)
#define MAX_WRITE_BYTES (64L << 20)

typedef struct {
    abt_common c;
    long workers, files, write_bytes;
    int processes;
} opts;

/* Everything workers share; one MAP_SHARED mapping, so forked children too. */
typedef struct {
    _Alignas(64) pthread_barrier_t barrier;
    abt_gate gate; /* start only once every worker exists */
    const opts *o;
    abt_oplog log;
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
    abt_describe_head(PROG, "Metarates file-creation rate: barrier, then per file "
                      "open(O_CREAT), write (with --write-bytes), fsync, close, per worker");
    printf("pid: the process that ran the worker (one per worker with --processes)\n");
    printf("tid: worker index 0..workers-1, not the kernel tid\n");
    abt_describe_timing();
    printf("ops_per_worker: barrier (open [write] fsync close)*files\n");
    printf("param.workers: %ld\n", o->workers);
    printf("param.files: %ld\n", o->files);
    printf("param.write_bytes: %ld\n", o->write_bytes);
    printf("param.processes: %d\n", o->processes);
    abt_describe_common(&o->c);
}

static void parse_opts(opts *o, int argc, char **argv)
{
    enum { O_WORKERS = 256, O_FILES, O_WRITE };
    static const struct option lo[] = {
        {"workers", 1, 0, O_WORKERS}, {"files", 1, 0, O_FILES}, {"write-bytes", 1, 0, O_WRITE},
        {"processes", 0, 0, 'p'}, ABT_COMMON_OPTIONS, {0, 0, 0, 0}};
    *o = (opts){ABT_COMMON_DEFAULTS, 1, 4, 0, 0};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case O_WORKERS: o->workers = abt_parse_long(PROG, "--workers", optarg, 1, MAX_WORKERS); break;
        case O_FILES: o->files = abt_parse_long(PROG, "--files", optarg, 1, MAX_FILES); break;
        case O_WRITE:
            o->write_bytes = abt_parse_long(PROG, "--write-bytes", optarg, 0, MAX_WRITE_BYTES);
            break;
        case 'p': o->processes = 1; break;
        default: abt_common_opt(PROG, &o->c, c, argv, usage);
        }
    }
    abt_no_operands(PROG, argc, argv);
}

static void check_opts(const opts *o)
{
    if (o->workers * o->files > MAX_TOTAL_FILES)
        abt_bad_arg(PROG, "--files", "workers x files is %ld; accepted: at most %ld",
                    o->workers * o->files, MAX_TOTAL_FILES);
    abt_common_check(PROG, &o->c, 0, "a writable directory");
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
    abt_oplog *l = &g_sh->log;
    if (!abt_gate_wait(&g_sh->gate)) return 0;
    abt_worker_start(l, idx);
    abt_span s;
    abt_span_begin(&s, o->c.dilate);
    pthread_barrier_wait(&g_sh->barrier);
    abt_op_done(l, idx, &s, ABT_OP_BARRIER, 0, 0, 0);
    char path[PATH_MAX];
    for (long j = 0; j < o->files; j++) {
        abt_file_path(path, sizeof path, o->c.dir, PROG, idx, j);
        abt_span_begin(&s, o->c.dilate);
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (!abt_op_done(l, idx, &s, ABT_OP_OPEN, ABT_F_CREAT, fd, errno)) break;
        int ok = 1;
        if (o->write_bytes) {
            abt_span_begin(&s, o->c.dilate);
            long w = write_all(fd, g_sh->data, o->write_bytes);
            ok = abt_op_done(l, idx, &s, ABT_OP_WRITE, 0, w, errno);
        }
        abt_span_begin(&s, o->c.dilate);
        int r = fsync(fd);
        ok = abt_op_done(l, idx, &s, ABT_OP_FSYNC, 0, r, errno) && ok;
        abt_span_begin(&s, o->c.dilate);
        r = close(fd);
        if (!abt_op_done(l, idx, &s, ABT_OP_CLOSE, 0, r, errno) || !ok) break;
    }
    return l->ws[idx].failed;
}

static void *thread_main(void *arg)
{
    run_worker((uint32_t)(uintptr_t)arg);
    return NULL;
}

/* One anonymous MAP_SHARED mapping: shared state, the op log, the file content. */
static shared *make_shared(const opts *o)
{
    uint64_t per = abt_oplog_slots(1 + (o->write_bytes ? 4 : 3) * (uint64_t)o->files);
    size_t log = abt_oplog_bytes(o->workers, per, o->c.no_record);
    size_t len = sizeof(shared) + log + (size_t)o->write_bytes;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    shared *sh = (shared *)m;
    sh->o = o;
    sh->log = (abt_oplog){.prog = PROG, .who = "worker", .dilate = o->c.dilate};
    abt_oplog_place(&sh->log, m + sizeof(shared), o->workers, per, o->c.no_record);
    char *data = m + sizeof(shared) + log;
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

/* Fork every worker behind the gate, open it, wait. Returns elapsed ns, 0 if a worker
 * could not be started (the others are released and leave). */
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
            g_sh->log.ws[i].failed = 1;
    }
    free(pids);
    return abt_now_ns() - t0;
}

int main(int argc, char **argv)
{
    opts o;
    parse_opts(&o, argc, argv);
    if (o.c.describe) { describe(&o); return 0; }
    check_opts(&o);
    if (!(g_sh = make_shared(&o))) {
        fprintf(stderr, "%s: cannot map shared memory for records: %s\n", PROG, strerror(errno));
        return 1;
    }
    fflush(NULL); /* nothing buffered may be written twice by forked children */
    uint64_t elapsed = o.processes ? run_processes(o.workers)
                                   : abt_run_threads(PROG, &g_sh->gate, o.workers, thread_main);
    return abt_finish(&g_sh->log, &o.c, elapsed, o.files);
}
