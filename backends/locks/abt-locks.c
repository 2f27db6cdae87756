/*
 * abt-locks - spinlock vs mutex (Petersen, University of Wisconsin-Madison, Listing 2).
 *
 * THREADS threads each enter one critical section ENTRIES times (default 100, as in
 * the paper); inside it, a loop of WORK asm volatile("nop"). The lock is a pthread
 * spinlock or a default (non-adaptive) pthread mutex. The timed span is creating and
 * joining all threads, the paper's PROFILE START..END. --trace writes one ABT_OP_LOCK
 * record per entry spanning the hold (lock acquired .. unlocked, bytes = WORK), so
 * holds never overlap if the lock excludes; without it the threads read no clock.
 *
 * Prints one line of key=value. Exit: 0 ok; 1 run failure; 2 bad option.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <sys/syscall.h>

#include "abt_opts.h"
#include "abt_trace.h"

#define PROG "abt-locks"
#define MAX_THREADS 100
#define MAX_WORK 1000000L

static struct {
    int spin;
    long threads, work, entries;
    const char *trace;
} opt = {1, 1, 1, 100, NULL};

static pthread_spinlock_t spin;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static abt_record *recs;

static inline void lock(void)
{
    if (opt.spin) pthread_spin_lock(&spin);
    else pthread_mutex_lock(&mutex);
}

static inline void unlock(void)
{
    if (opt.spin) pthread_spin_unlock(&spin);
    else pthread_mutex_unlock(&mutex);
}

static void *worker(void *arg)
{
    long idx = (long)arg;
    abt_record *r = recs ? recs + idx * opt.entries : NULL;
    uint32_t pid = (uint32_t)getpid(), tid = (uint32_t)syscall(SYS_gettid);
    for (long e = 0; e < opt.entries; e++) {
        lock();
        uint64_t t0 = r ? abt_now_ns() : 0;
        for (long i = 0; i < opt.work; i++) __asm__ volatile("nop");
        uint64_t t1 = r ? abt_now_ns() : 0;
        unlock();
        if (r) r[e] = (abt_record){pid, tid, ABT_OP_LOCK, 0, (uint32_t)opt.work, t0, t1};
    }
    return NULL;
}

static void describe(void)
{
    printf("name: %s\nrecord_size: %zu\nheader_size: %zu\n"
           "parameters: --lock spin|mutex, --threads 1..%d, --work 1..%ld (nop instructions "
           "per critical section), --entries N (default 100), --trace PATH\n"
           "output: lock threads work entries elapsed_ns\n",
           PROG, sizeof(abt_record), sizeof(abt_header), MAX_THREADS, MAX_WORK);
}

static void parse(int argc, char **argv)
{
    static const struct option lo[] = {
        {"lock", 1, 0, 'l'}, {"threads", 1, 0, 'n'}, {"work", 1, 0, 'w'},
        {"entries", 1, 0, 'e'}, {"trace", 1, 0, 't'}, {"describe", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (strcmp(optarg, "spin") && strcmp(optarg, "mutex"))
                abt_bad_arg(PROG, "--lock", "given '%s'; accepted: spin, mutex", optarg);
            opt.spin = !strcmp(optarg, "spin");
            break;
        case 'n': opt.threads = abt_parse_long(PROG, "--threads", optarg, 1, MAX_THREADS); break;
        case 'w': opt.work = abt_parse_long(PROG, "--work", optarg, 1, MAX_WORK); break;
        case 'e': opt.entries = abt_parse_long(PROG, "--entries", optarg, 1, 1000000); break;
        case 't': opt.trace = optarg; break;
        case 'h': describe(); exit(0);
        default: abt_bad_option(PROG, c, argv, "see --describe");
        }
    }
    abt_no_operands(PROG, argc, argv);
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    pthread_t th[MAX_THREADS];
    uint64_t n = (uint64_t)opt.threads * (uint64_t)opt.entries;
    if (opt.trace && !(recs = calloc(n, sizeof *recs))) {
        perror(PROG ": allocate trace");
        return 1;
    }
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    uint64_t t0 = abt_now_ns();
    for (long i = 0; i < opt.threads; i++) {
        int e = pthread_create(&th[i], NULL, worker, (void *)i);
        if (e) {
            fprintf(stderr, "%s: pthread_create: %s\n", PROG, strerror(e));
            return 1;
        }
    }
    for (long i = 0; i < opt.threads; i++) pthread_join(th[i], NULL);
    uint64_t t1 = abt_now_ns();
    if (opt.trace && abt_trace_write(opt.trace, ABT_KIND_OPS, recs, n)) {
        fprintf(stderr, "%s: --trace %s: %s\n", PROG, opt.trace, strerror(errno));
        return 1;
    }
    printf("lock: %s\nthreads: %ld\nwork: %ld\nentries: %ld\nelapsed_ns: %llu\n",
           opt.spin ? "spin" : "mutex",
           opt.threads, opt.work, opt.entries, (unsigned long long)(t1 - t0));
    return 0;
}
