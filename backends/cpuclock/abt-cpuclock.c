/*
 * abt-cpuclock - a CPU clock check: does each CPU run at the clock, whatever the others do?
 *
 * --threads N --loops L: N threads each run L iterations of a fixed integer loop (the same
 * instructions every run) and time themselves with CLOCK_MONOTONIC; on a machine whose
 * every core runs at the clock, N up to the core count take the time one thread takes.
 * --sleeps K [--period-us P] [--busy N]: one thread sleeps P us (default 10000) K times
 * with clock_nanosleep, timing each period, while N threads spin until it is done: the
 * period must not depend on N.
 *
 * Prints "key: value" lines (thread_ns and period_ns: values separated by blanks).
 * Exit: 0 ok; 1 run failure; 2 bad option.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

#include "abt_opts.h"
#include "abt_trace.h"

#define PROG "abt-cpuclock"
#define MAX_THREADS 64

static struct {
    long threads, loops, sleeps, period_us, busy;
} opt = {1, 10000000, 0, 10000, 0};

static volatile int stop;
static uint64_t thread_ns[MAX_THREADS];

static uint64_t spin_loop(long loops)
{
    uint64_t x = 1;
    for (long i = 0; i < loops; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

static void *timed(void *arg)
{
    long idx = (long)arg;
    uint64_t t0 = abt_now_ns();
    spin_loop(opt.loops);
    thread_ns[idx] = abt_now_ns() - t0;
    return NULL;
}

static void *busy(void *arg)
{
    (void)arg;
    while (!stop) spin_loop(1000);
    return NULL;
}

static void describe(void)
{
    printf("name: %s\nparameters: --threads 1..%d --loops N | --sleeps K --period-us P "
           "--busy 0..%d\noutput: thread_ns (per thread) | period_ns (per sleep)\n",
           PROG, MAX_THREADS, MAX_THREADS);
}

static void parse(int argc, char **argv)
{
    static const struct option lo[] = {
        {"threads", 1, 0, 'n'}, {"loops", 1, 0, 'l'}, {"sleeps", 1, 0, 's'},
        {"period-us", 1, 0, 'p'}, {"busy", 1, 0, 'b'}, {"describe", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case 'n': opt.threads = abt_parse_long(PROG, "--threads", optarg, 1, MAX_THREADS); break;
        case 'l': opt.loops = abt_parse_long(PROG, "--loops", optarg, 1, 1L << 40); break;
        case 's': opt.sleeps = abt_parse_long(PROG, "--sleeps", optarg, 1, 100000); break;
        case 'p': opt.period_us = abt_parse_long(PROG, "--period-us", optarg, 1, 10000000); break;
        case 'b': opt.busy = abt_parse_long(PROG, "--busy", optarg, 0, MAX_THREADS); break;
        case 'h': describe(); exit(0);
        default: abt_bad_option(PROG, c, argv, "see --describe");
        }
    }
    abt_no_operands(PROG, argc, argv);
}

static int start(pthread_t *th, void *(*fn)(void *), long n)
{
    for (long i = 0; i < n; i++) {
        int e = pthread_create(&th[i], NULL, fn, (void *)i);
        if (e) {
            fprintf(stderr, "%s: pthread_create: %s\n", PROG, strerror(e));
            return 1;
        }
    }
    return 0;
}

static int sleeper(void)
{
    pthread_t th[MAX_THREADS];
    if (start(th, busy, opt.busy)) return 1;
    struct timespec p = {opt.period_us / 1000000, (opt.period_us % 1000000) * 1000};
    printf("busy: %ld\nperiod_ns:", opt.busy);
    for (long k = 0; k < opt.sleeps; k++) {
        uint64_t t0 = abt_now_ns();
        clock_nanosleep(CLOCK_MONOTONIC, 0, &p, NULL);
        printf(" %llu", (unsigned long long)(abt_now_ns() - t0));
    }
    printf("\n");
    stop = 1;
    for (long i = 0; i < opt.busy; i++) pthread_join(th[i], NULL);
    return 0;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    if (opt.sleeps) return sleeper();
    pthread_t th[MAX_THREADS];
    if (start(th, timed, opt.threads)) return 1;
    for (long i = 0; i < opt.threads; i++) pthread_join(th[i], NULL);
    printf("threads: %ld\nloops: %ld\nthread_ns:", opt.threads, opt.loops);
    for (long i = 0; i < opt.threads; i++) printf(" %llu", (unsigned long long)thread_ns[i]);
    printf("\n");
    return 0;
}
