/*
 * libsera.c - SERA-IO frequency scheduling around POSIX I/O calls, by LD_PRELOAD.
 *
 * Before read/write/pread/pwrite/readv/writev/fsync/fdatasync it looks the call up in a
 * target-frequency table (ABT_SERA_TABLE, written by abtlab.sera.preload) and sets the
 * calling CPU's scaling_setspeed; after the call it puts the highest frequency back.
 * Guards against transition overhead (Ge et al., CCGrid 2012, Sec. III.B):
 *   - a call predicted shorter than guard_ns (fixed_ns + bytes / bytes_per_s) never
 *     causes a switch, and a call whose target is the current frequency causes none;
 *   - hysteresis: with hold_ns > 0 the switch back up waits hold_ns after the last call
 *     on that CPU ends, so a dense run of I/O calls pays one switch down and one up.
 * Table lines: "highest KHZ", "guard_ns N", "hold_ns N", "predict FIXED_NS BYTES_PER_S",
 * "rule OP SIZE_MIN SIZE_MAX KHZ" (OP: read write sync any; sizes inclusive), '#' comments.
 * ABT_SERA_CPUFREQ_ROOT (default /sys/devices/system/cpu) is where cpuN/cpufreq lives.
 * When scaling_setspeed cannot be read as a number (no cpufreq, or a governor other than
 * userspace) decisions are only recorded, with ABT_F_ERROR meaning "not applied".
 * ABT_SERA_TRACE: write every decision there at exit (kind ABT_KIND_DECISIONS, op
 * ABT_OP_FREQ, bytes = kHz, t_start..t_end = the sysfs write); "%p" in it becomes the
 * pid (one file per process); without %p a process with no decision writes nothing.
 * Exit restores each touched CPU's setspeed as found: atexit, and SIGTERM/SIGINT/SIGHUP/
 * SIGQUIT/SIGABRT/SIGSEGV/SIGBUS with async-signal-safe writes before the signal is
 * re-raised; a frequency write holds SIGTERM/INT/HUP/QUIT on its thread, and the holder
 * thread never takes them, so a restore cannot miss a write in flight (a program thread
 * taking the signal while another thread writes is the one race left). SIGKILL cannot
 * be caught: the last setting stays (abtlab.system.cpufreq's
 * FrequencyPin in the parent puts back governor and limits). A handler the program
 * installs later replaces ours for that signal. A bad table refuses to run: a message
 * naming ABT_SERA_TABLE and the line, exit status 2.
 */
#define _GNU_SOURCE
#define ABT_PRELOAD_NAME "libsera"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "abt_preload.h"
#include "abt_trace.h"

#define MAX_CPU 1024
#define MAX_RULES 256
#define MAX_RECORDS (1u << 16)
enum { OP_READ = 1, OP_WRITE = 2, OP_SYNC = 3, OP_ANY = 4 };

typedef struct { int op; uint64_t lo, hi; uint32_t khz; } rule;
typedef struct {
    int touched, applied;              /* applied: setspeed is writable as a number */
    uint32_t cur, orig;
    int active;                        /* calls in progress on this CPU */
    uint64_t deadline;                 /* pending restore (hold), 0 = none */
    char path[512];
} cpu_state;

static struct {
    int on;
    uint32_t highest;
    uint64_t guard_ns, hold_ns, fixed_ns;
    double bps;
    rule rules[MAX_RULES];
    int nrules;
    const char *root;
    char trace[4096];                  /* ABT_SERA_TRACE with %p replaced by the pid */
    int trace_per_pid;
    const char *trace_env;
} cfg;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static cpu_state cpus[MAX_CPU];
static abt_record recs[MAX_RECORDS];
static volatile uint32_t nrec, dropped;
static int holder_started;
static ssize_t (*real_write)(int, const void *, size_t);
static __thread int in_sera;           /* our own sysfs writes are not I/O to schedule */

static const char *table_path;

/* A bad table refuses to run, naming ABT_SERA_TABLE and the line. */
static void die(const char *what, int line)
{
    char where[32] = "", acc[320];
    if (line) snprintf(where, sizeof where, "table line %d: ", line);
    snprintf(acc, sizeof acc, "a readable table of 'highest KHZ', 'guard_ns N', 'hold_ns N', "
             "'predict FIXED_NS BYTES_PER_S' and 'rule OP SIZE_MIN SIZE_MAX KHZ' lines "
             "(%s%s)", where, what);
    abt_refuse("ABT_SERA_TABLE", table_path, acc);
}

static int op_code(const char *s)
{
    if (!strcmp(s, "read")) return OP_READ;
    if (!strcmp(s, "write")) return OP_WRITE;
    if (!strcmp(s, "sync")) return OP_SYNC;
    if (!strcmp(s, "any")) return OP_ANY;
    return 0;
}

static void parse_line(char *ln, int n)
{
    char op[16];
    unsigned long long a, b;
    unsigned k;
    if (ln[0] == '#' || ln[strspn(ln, " \t\r\n")] == 0) return;
    if (sscanf(ln, "highest %u", &k) == 1) cfg.highest = k;
    else if (sscanf(ln, "guard_ns %llu", &a) == 1) cfg.guard_ns = a;
    else if (sscanf(ln, "hold_ns %llu", &a) == 1) cfg.hold_ns = a;
    else if (sscanf(ln, "predict %llu %llu", &a, &b) == 2 && b > 0) {
        cfg.fixed_ns = a;
        cfg.bps = (double)b;
    } else if (sscanf(ln, "rule %15s %llu %llu %u", op, &a, &b, &k) == 4) {
        if (!op_code(op)) die("rule op must be read, write, sync or any", n);
        if (a > b) die("rule size_min > size_max", n);
        if (cfg.nrules == MAX_RULES) die("too many rules", n);
        cfg.rules[cfg.nrules++] = (rule){op_code(op), a, b, k};
    } else die("unknown line", n);
}

static void load_table(const char *path)
{
    table_path = path;
    FILE *f = fopen(path, "r");
    char ln[256];
    int n = 0;
    if (!f) die("cannot open it", 0);
    cfg.bps = 1e9;
    while (fgets(ln, sizeof ln, f)) parse_line(ln, ++n);
    fclose(f);
    if (!cfg.highest) die("no 'highest KHZ' line", n);
}

static uint32_t lookup(int op, uint64_t bytes)
{
    for (int i = 0; i < cfg.nrules; i++) {
        const rule *r = &cfg.rules[i];
        if ((r->op == op || r->op == OP_ANY) && bytes >= r->lo && bytes <= r->hi) return r->khz;
    }
    return cfg.highest;   /* not in the table: the highest frequency */
}

static void record(uint32_t khz, int flags, uint64_t t0, uint64_t t1)
{
    uint32_t i = __atomic_fetch_add(&nrec, 1, __ATOMIC_RELAXED);
    if (i >= MAX_RECORDS) {
        __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    recs[i] = (abt_record){(uint32_t)getpid(), (uint32_t)syscall(SYS_gettid), ABT_OP_FREQ,
                           (uint16_t)flags, khz, t0, t1};
}

static int put_khz(const char *path, uint32_t khz)
{
    char buf[24];
    int len = 0, fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char tmp[16];
    int n = 0;
    do tmp[n++] = (char)('0' + khz % 10); while ((khz /= 10) && n < 15);
    while (n) buf[len++] = tmp[--n];
    buf[len++] = '\n';
    ssize_t w = real_write(fd, buf, (size_t)len);   /* async-signal-safe path */
    close(fd);
    return w == len ? 0 : -1;
}

/* First touch of a CPU: remember what setspeed holds, to put it back at exit. */
static void touch(int c)
{
    cpu_state *s = &cpus[c];
    char buf[64] = {0};
    s->touched = 1;
    snprintf(s->path, sizeof s->path, "%s/cpu%d/cpufreq/scaling_setspeed", cfg.root, c);
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : syscall(SYS_read, fd, buf, sizeof buf - 1);  /* not our read() */
    if (fd >= 0) close(fd);
    char *end;
    unsigned long v = n > 0 ? strtoul(buf, &end, 10) : 0;
    s->applied = n > 0 && end != buf && v > 0;
    s->orig = s->applied ? (uint32_t)v : cfg.highest;
    s->cur = s->orig;
}

/* The signals whose handler restores the CPUs (SEGV/BUS/ABRT come from the thread
 * itself and cannot wait). */
static sigset_t deferred_sigs(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    return set;
}

static void set_freq(int c, uint32_t khz)   /* with mu held */
{
    cpu_state *s = &cpus[c];
    /* A terminating signal must not run restore_all between the write and `cur`
     * catching up (it would skip this CPU and leave it low): hold those signals on this
     * thread for the write, and update `cur` first. */
    sigset_t block = deferred_sigs(), old;
    pthread_sigmask(SIG_BLOCK, &block, &old);
    uint64_t t0 = abt_now_ns();
    s->cur = khz;
    int ok = s->applied && put_khz(s->path, khz) == 0;
    record(khz, ok ? 0 : ABT_F_ERROR, t0, abt_now_ns());
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Hysteresis: one thread puts CPUs back up once their hold has run out. */
static void *holder(void *arg)
{
    (void)arg;
    /* process-directed signals go to the program's threads, never to this one while
     * they might be mid-write */
    sigset_t block = deferred_sigs();
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    pthread_mutex_lock(&mu);
    for (;;) {
        uint64_t now = abt_now_ns(), next = 0;
        for (int c = 0; c < MAX_CPU; c++) {
            cpu_state *s = &cpus[c];
            if (!s->deadline) continue;
            if (s->deadline <= now && !s->active) {
                s->deadline = 0;
                if (s->cur != cfg.highest) set_freq(c, cfg.highest);
            } else if (!next || s->deadline < next) next = s->deadline;
        }
        if (!next) pthread_cond_wait(&cv, &mu);
        else {
            struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
            pthread_cond_timedwait(&cv, &mu, &ts);
        }
    }
    return NULL;
}

static int begin(int op, uint64_t bytes)
{
    if (!cfg.on || in_sera) return -1;
    int c = sched_getcpu();
    if (c < 0 || c >= MAX_CPU) return -1;
    uint32_t target = lookup(op, bytes);
    uint64_t predicted = cfg.fixed_ns + (uint64_t)((double)bytes * 1e9 / cfg.bps);
    pthread_mutex_lock(&mu);
    if (!cpus[c].touched) touch(c);
    cpus[c].active++;
    cpus[c].deadline = 0;
    if (target != cpus[c].cur && predicted >= cfg.guard_ns) set_freq(c, target);
    pthread_mutex_unlock(&mu);
    return c;
}

static void end(int c)
{
    if (c < 0) return;
    pthread_mutex_lock(&mu);
    cpu_state *s = &cpus[c];
    if (--s->active == 0 && s->cur != cfg.highest) {
        if (!cfg.hold_ns) set_freq(c, cfg.highest);
        else {
            s->deadline = abt_now_ns() + cfg.hold_ns;
            if (!holder_started) {
                pthread_t t;
                pthread_attr_t at;
                pthread_attr_init(&at);
                pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
                holder_started = pthread_create(&t, &at, holder, NULL) == 0;
            }
            pthread_cond_signal(&cv);
        }
    }
    pthread_mutex_unlock(&mu);
}

/* Async-signal-safe: plain open/write/close, no locks, no stdio. */
static void restore_all(void)
{
    for (int c = 0; c < MAX_CPU; c++) {
        cpu_state *s = &cpus[c];
        if (!s->touched || s->cur == s->orig) continue;
        uint64_t t0 = abt_now_ns();
        int ok = s->applied && put_khz(s->path, s->orig) == 0;
        record(s->orig, ok ? 0 : ABT_F_ERROR, t0, abt_now_ns());
        s->cur = s->orig;
    }
}

static void write_trace(void)
{
    uint32_t n = nrec < MAX_RECORDS ? nrec : MAX_RECORDS;
    if (!cfg.trace[0] || (!n && !cfg.trace_per_pid)) return;   /* don't clobber a sibling's */
    abt_header h = {{'A', 'B', 'T', 'T', 'R', 'A', 'C', 'E'}, ABT_TRACE_VERSION,
                    (uint16_t)sizeof(abt_record), (uint16_t)CLOCK_MONOTONIC,
                    ABT_KIND_DECISIONS, n, abt_now_ns()};
    int fd = open(cfg.trace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    real_write(fd, &h, sizeof h);
    if (n) real_write(fd, recs, (size_t)n * sizeof *recs);
    close(fd);
}

static void at_exit(void)
{
    pthread_mutex_lock(&mu);
    in_sera = 1;
    restore_all();
    write_trace();
    if (dropped) fprintf(stderr, "libsera: %u decisions not recorded (buffer full)\n", dropped);
    cfg.on = 0;
    pthread_mutex_unlock(&mu);
}

static void on_signal(int sig)
{
    in_sera = 1;
    cfg.on = 0;
    restore_all();
    write_trace();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void set_trace_path(const char *t);

/* A forked child has no holder thread: let it start its own. */
static void child_reset(void)
{
    holder_started = 0;
    nrec = dropped = 0;                /* the parent's decisions stay in its file */
    if (cfg.trace_per_pid) set_trace_path(cfg.trace_env);
}

/* "%p" in ABT_SERA_TRACE becomes the pid, so every process of a tree keeps its own file. */
static void set_trace_path(const char *t)
{
    const char *p = t ? strstr(t, "%p") : NULL;
    if (!t) return;
    cfg.trace_env = t;
    if (!p) {
        snprintf(cfg.trace, sizeof cfg.trace, "%s", t);
        return;
    }
    snprintf(cfg.trace, sizeof cfg.trace, "%.*s%d%s", (int)(p - t), t, (int)getpid(), p + 2);
    cfg.trace_per_pid = 1;
}

__attribute__((constructor)) static void init(void)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS};
    real_write = (ssize_t (*)(int, const void *, size_t))abt_real("write");
    const char *table = getenv("ABT_SERA_TABLE");
    if (!table || !*table) return;   /* no table: every call passes through untouched */
    cfg.root = getenv("ABT_SERA_CPUFREQ_ROOT");
    if (!cfg.root || !*cfg.root) cfg.root = "/sys/devices/system/cpu";
    set_trace_path(getenv("ABT_SERA_TRACE"));
    pthread_condattr_t ca;             /* the holder's deadlines are CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    load_table(table);
    atexit(at_exit);
    abt_on_fork(&mu, child_reset);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old, sa = {0};
        sigaction(sigs[i], NULL, &old);
        if (old.sa_handler == SIG_IGN) continue;   /* keep what the parent asked to ignore */
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
    cfg.on = 1;
}

#define REAL(name) ABT_REAL(__typeof__(&name), name)

#define AROUND(op, bytes, call) \
    do { int c_ = begin(op, bytes); int e_; __typeof__(call) r_ = call; e_ = errno; \
         end(c_); errno = e_; return r_; } while (0)

static uint64_t iov_bytes(const struct iovec *iov, int n)
{
    uint64_t b = 0;
    for (int i = 0; i < n; i++) b += iov[i].iov_len;
    return b;
}

ssize_t read(int fd, void *buf, size_t n)
{
    REAL(read);
    AROUND(OP_READ, n, real_read(fd, buf, n));
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (!real_write) real_write = (ssize_t (*)(int, const void *, size_t))abt_real("write");
    AROUND(OP_WRITE, n, real_write(fd, buf, n));
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    REAL(pread);
    AROUND(OP_READ, n, real_pread(fd, buf, n, off));
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    REAL(pread64);
    AROUND(OP_READ, n, real_pread64(fd, buf, n, off));
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite);
    AROUND(OP_WRITE, n, real_pwrite(fd, buf, n, off));
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite64);
    AROUND(OP_WRITE, n, real_pwrite64(fd, buf, n, off));
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
    REAL(readv);
    AROUND(OP_READ, iov_bytes(iov, n), real_readv(fd, iov, n));
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    REAL(writev);
    AROUND(OP_WRITE, iov_bytes(iov, n), real_writev(fd, iov, n));
}

int fsync(int fd)
{
    REAL(fsync);
    AROUND(OP_SYNC, 0, real_fsync(fd));
}

int fdatasync(int fd)
{
    REAL(fdatasync);
    AROUND(OP_SYNC, 0, real_fdatasync(fd));
}
