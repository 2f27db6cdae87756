/*
 * abt-fsyncers - many threads doing create, write, fsync, close, unlink: the
 * workload that delayJC (libdelayjc.so) groups, and its test driver.
 *
 * Each of N threads, after a start barrier (and, with --stagger-us U, a sleep
 * until start + index*U), makes --files files DIR/fs.<i>.<k> of --size bytes,
 * syncs each (fsync or fdatasync), closes and unlinks it (unless --keep). One
 * abt_record per sync (op FSYNC/FDATASYNC, tid = thread index, bytes = size or
 * errno with ABT_F_ERROR), written after the threads join. stdout gets the result
 * as "key: value" lines: elapsed_ns, syncs, errors, bytes. Test modes: --fork forks a child
 * mid-run that does one sync of its own (exit 1 if the child failed or hung
 * up); --exit-after-ms M calls exit(0) after M ms while workers may be syncing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abt_opts.h"
#include "abt_trace.h"

#define PROG "abt-fsyncers"

typedef struct {
    long threads, files, stagger_us, exit_after_ms;
    uint64_t size;
    const char *dir, *trace;
    int datasync, keep, fork, describe;
} opts;

typedef struct {
    pthread_t th;
    uint32_t idx;
    abt_record *recs;
    long n, errors;
} worker;

static opts g_o;
static pthread_barrier_t g_start;
static uint64_t g_t0;
static char *g_buf;

static void describe(void)
{
    printf("name: %s\nsummary: threads create, write, fsync, close, unlink files\n"
           "record_size: %zu\ntrace_kind: %d\ntid: thread index\n"
           "param.threads: %ld\nparam.files: %ld\nparam.size: %llu\nparam.dir: %s\n"
           "param.sync: %s\nparam.stagger_us: %ld\n", PROG, sizeof(abt_record), ABT_KIND_OPS,
           g_o.threads, g_o.files, (unsigned long long)g_o.size, g_o.dir ? g_o.dir : "",
           g_o.datasync ? "fdatasync" : "fsync", g_o.stagger_us);
}

static void parse_opts(int argc, char **argv)
{
    enum { OPT_THREADS = 256, OPT_FILES, OPT_SIZE, OPT_DIR, OPT_TRACE, OPT_SYNC, OPT_STAGGER, OPT_EXIT };
    static const struct option lo[] = {
        {"threads", 1, 0, OPT_THREADS}, {"files", 1, 0, OPT_FILES}, {"size", 1, 0, OPT_SIZE},
        {"dir", 1, 0, OPT_DIR}, {"trace", 1, 0, OPT_TRACE}, {"sync", 1, 0, OPT_SYNC},
        {"stagger-us", 1, 0, OPT_STAGGER}, {"exit-after-ms", 1, 0, OPT_EXIT},
        {"keep", 0, 0, 'k'}, {"fork", 0, 0, 'f'}, {"describe", 0, 0, 'd'}, {0, 0, 0, 0}};
    g_o = (opts){1, 1, 0, -1, 32 << 10, NULL, NULL, 0, 0, 0, 0};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case OPT_THREADS: g_o.threads = abt_parse_long(PROG, "--threads", optarg, 1, 4096); break;
        case OPT_FILES: g_o.files = abt_parse_long(PROG, "--files", optarg, 1, 1000000); break;
        case OPT_SIZE: g_o.size = abt_parse_size(PROG, "--size", optarg, 0, 1ull << 30); break;
        case OPT_DIR: g_o.dir = optarg; break;
        case OPT_TRACE: g_o.trace = optarg; break;
        case OPT_STAGGER: g_o.stagger_us = abt_parse_long(PROG, "--stagger-us", optarg, 0, 10000000); break;
        case OPT_EXIT: g_o.exit_after_ms = abt_parse_long(PROG, "--exit-after-ms", optarg, 0, 600000); break;
        case OPT_SYNC:
            if (strcmp(optarg, "fsync") && strcmp(optarg, "fdatasync"))
                abt_bad_arg(PROG, "--sync", "given '%s'; accepted: fsync or fdatasync", optarg);
            g_o.datasync = !strcmp(optarg, "fdatasync");
            break;
        case 'k': g_o.keep = 1; break;
        case 'f': g_o.fork = 1; break;
        case 'd': g_o.describe = 1; break;
        default: abt_bad_option(PROG, c, argv, "see the header");
        }
    }
    abt_no_operands(PROG, argc, argv);
}

/* One file: create, write, sync (timed), close, unlink. Returns sync errno or 0. */
static int one_file(uint32_t idx, long k, abt_record *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fs.%u.%ld.%ld", g_o.dir, idx, k, (long)getpid());
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) { perror(path); exit(1); }
    for (uint64_t done = 0; done < g_o.size;) {
        ssize_t w = write(fd, g_buf, g_o.size - done);
        if (w <= 0) { perror("write"); exit(1); }
        done += (uint64_t)w;
    }
    uint64_t t0 = abt_now_ns();
    int rc = g_o.datasync ? fdatasync(fd) : fsync(fd);
    int err = rc ? errno : 0;
    uint64_t t1 = abt_now_ns();
    *r = (abt_record){(uint32_t)getpid(), idx, g_o.datasync ? ABT_OP_FDATASYNC : ABT_OP_FSYNC,
                      err ? ABT_F_ERROR : 0, err ? (uint32_t)err : (uint32_t)g_o.size, t0, t1};
    close(fd);
    if (!g_o.keep) unlink(path);
    return err;
}

static void *run(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(&g_start);
    if (g_o.stagger_us) {
        uint64_t t = g_t0 + (uint64_t)w->idx * (uint64_t)g_o.stagger_us * 1000u;
        struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
    }
    for (long k = 0; k < g_o.files; k++, w->n++)
        w->errors += one_file(w->idx, k, &w->recs[k]) != 0;
    return NULL;
}

/* A child forked while workers sync: one sync of its own must not hang. */
static pid_t fork_child(void)
{
    usleep(20000);
    pid_t pid = fork();
    if (pid == 0) {
        abt_record r;
        exit(one_file(9999, 0, &r) ? 1 : 0);
    }
    return pid;
}

int main(int argc, char **argv)
{
    parse_opts(argc, argv);
    if (g_o.describe) { describe(); return 0; }
    if (!g_o.dir) abt_bad_arg(PROG, "--dir", "missing; accepted: a writable directory");
    abt_check_dir(PROG, "--dir", g_o.dir, 0, "a writable directory");
    g_buf = malloc(g_o.size + 1);
    worker *ws = calloc((size_t)g_o.threads, sizeof *ws);
    if (!g_buf || !ws) { perror("malloc"); return 1; }
    memset(g_buf, 'a', g_o.size + 1);
    pthread_barrier_init(&g_start, NULL, (unsigned)g_o.threads + 1);
    for (long i = 0; i < g_o.threads; i++) {
        ws[i].idx = (uint32_t)i;
        ws[i].recs = calloc((size_t)g_o.files, sizeof(abt_record));
        if (!ws[i].recs || pthread_create(&ws[i].th, NULL, run, &ws[i])) { perror("thread"); return 1; }
    }
    g_t0 = abt_now_ns();
    pthread_barrier_wait(&g_start);
    if (g_o.exit_after_ms >= 0) { usleep((useconds_t)g_o.exit_after_ms * 1000u); exit(0); }
    pid_t child = g_o.fork ? fork_child() : 0;
    long n = 0, errors = 0;
    for (long i = 0; i < g_o.threads; i++) {
        pthread_join(ws[i].th, NULL);
        n += ws[i].n;
        errors += ws[i].errors;
    }
    uint64_t elapsed = abt_now_ns() - g_t0;
    abt_record *all = malloc((size_t)(n ? n : 1) * sizeof *all);
    for (long i = 0, m = 0; i < g_o.threads; m += ws[i].n, i++)
        memcpy(all + m, ws[i].recs, (size_t)ws[i].n * sizeof *all);
    if (g_o.trace && abt_trace_write(g_o.trace, ABT_KIND_OPS, all, (uint64_t)n)) {
        perror(g_o.trace);
        return 1;
    }
    printf("elapsed_ns: %llu\nsyncs: %ld\nerrors: %ld\nbytes: %llu\n", (unsigned long long)elapsed,
           n, errors, (unsigned long long)((uint64_t)n * g_o.size));
    int st = 0;
    if (child > 0 && (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st)))
        return 1;
    return 0;
}
