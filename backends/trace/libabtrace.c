/*
 * libabtrace.c - LD_PRELOAD recorder of the POSIX I/O calls of any program.
 *
 * One 32-byte abt_record per call (pid, kernel tid, op, flags, bytes = result,
 * or errno with ABT_F_ERROR; start/end on CLOCK_MONOTONIC), appended without
 * locks to a buffer of the calling thread. Buffers join a lock-free registry
 * and are written at exit (or _exit) to <ABT_TRACE_DIR>/abtrace.<pid>.trace,
 * one file per process. After fork the child drops the parent's buffers and
 * writes its own file. Each thread keeps at most ABT_TRACE_MAX_RECORDS
 * records (default 1M, i.e. 32 MiB of address space reserved, touched only as
 * used); further calls are counted and the counts go to a sidecar
 * abtrace.<pid>.dropped ("tid=T recorded=N dropped=D" per thread). Any other value
 * of ABT_TRACE_MAX_RECORDS than an integer 1..2^32 refuses to run (exit status 2).
 *
 * Not seen: calls glibc makes internally (stdio's own write), processes that
 * die by a signal, and a forked child's calls before it execs (the new image
 * records its own). A vfork child shares its parent's memory, so its few calls
 * before exec land in the parent's buffer under the parent's pid; it never
 * writes a file (the flush checks the pid).
 */
#define _GNU_SOURCE
#define ABT_PRELOAD_NAME "libabtrace"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "abt_preload.h"
#include "abt_trace.h"

#define TLS __thread __attribute__((tls_model("initial-exec")))
#define DEFAULT_MAX_RECORDS (1u << 20)

/* A thread's buffer: this header, then cap records, in one anonymous mapping. */
struct tbuf {
    abt_record *recs;
    _Atomic uint64_t n;        /* records published (release by the owner) */
    uint64_t cap;
    _Atomic uint64_t dropped;
    size_t map_len;
    struct tbuf *next;         /* registry link, set before publication */
    uint64_t snap;             /* n as seen by the flush */
    uint32_t tid;
};
#define TBUF_HDR 64
_Static_assert(sizeof(struct tbuf) <= TBUF_HDR, "tbuf header must fit its slot");

static _Atomic(struct tbuf *) registry;
static TLS struct tbuf *my_buf;
static TLS int in_hook;           /* recursion guard: our own calls pass through */
static TLS int no_buf;            /* this thread could not get a buffer */
static uint32_t cur_pid;
static uint64_t max_records = DEFAULT_MAX_RECORDS;
static char trace_dir[PATH_MAX] = ".";
static atomic_int flushed;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ---- set-up, fork, registry */
static void atfork_child(void)
{
    struct tbuf *old = atomic_exchange(&registry, NULL);
    cur_pid = (uint32_t)getpid();
    my_buf = NULL;
    no_buf = 0;
    atomic_store(&flushed, 0);
    while (old) {                /* the parent's records are the parent's to write */
        struct tbuf *next = old->next;
        munmap(old, old->map_len);
        old = next;
    }
}

static void init(void)
{
    cur_pid = (uint32_t)getpid();
    const char *dir = getenv("ABT_TRACE_DIR");
    if (dir && *dir == '/') snprintf(trace_dir, sizeof trace_dir, "%s", dir);
    else if (!getcwd(trace_dir, sizeof trace_dir - 1)) strcpy(trace_dir, ".");
    else if (dir && *dir)  /* relative: fixed now, so a later chdir does not move the files */
        snprintf(trace_dir + strlen(trace_dir), sizeof trace_dir - strlen(trace_dir), "/%s", dir);
    max_records = (uint64_t)abt_env_int_or("ABT_TRACE_MAX_RECORDS", DEFAULT_MAX_RECORDS, 1,
                                           1ll << 32, "an integer from 1 to 4294967296 "
                                           "(records per thread; unset: 1048576)");
    abt_on_fork(NULL, atfork_child);
}

__attribute__((constructor)) static void abtrace_ctor(void) { pthread_once(&once, init); }

static struct tbuf *buf_new(void)
{
    pthread_once(&once, init);
    size_t len = TBUF_HDR + (size_t)max_records * sizeof(abt_record);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        abt_say(ABT_PRELOAD_NAME ": pid %u: cannot reserve %zu bytes for a buffer; "
                "thread not traced\n", cur_pid, len);
        no_buf = 1;
        return NULL;
    }
    struct tbuf *b = p;
    b->recs = (abt_record *)((char *)p + TBUF_HDR);
    b->cap = max_records;
    b->map_len = len;
    b->tid = (uint32_t)syscall(SYS_gettid);
    struct tbuf *head = atomic_load(&registry);
    do b->next = head; while (!atomic_compare_exchange_weak(&registry, &head, b));
    return my_buf = b;
}

static void record(uint16_t op, uint16_t flags, long res, int err, uint64_t t0, uint64_t t1)
{
    struct tbuf *b = my_buf;
    if (!b && (no_buf || !(b = buf_new()))) return;
    uint64_t i = atomic_load_explicit(&b->n, memory_order_relaxed);
    if (i >= b->cap) {
        if (atomic_fetch_add_explicit(&b->dropped, 1, memory_order_relaxed) == 0)
            abt_say(ABT_PRELOAD_NAME ": pid %u tid %u: buffer full at ABT_TRACE_MAX_RECORDS=%llu; "
                    "further calls are counted in abtrace.%u.dropped, not recorded\n",
                    cur_pid, b->tid, (unsigned long long)b->cap, cur_pid);
        return;
    }
    abt_record *r = &b->recs[i];
    r->pid = cur_pid;
    r->tid = b->tid;
    r->op = op;
    r->flags = (uint16_t)(flags | (res < 0 ? ABT_F_ERROR : 0));
    r->bytes = res < 0 ? (uint32_t)err : (uint32_t)res;
    r->t_start_ns = t0;
    r->t_end_ns = t1;
    atomic_store_explicit(&b->n, i + 1, memory_order_release);
}

/* ---- flush: one file per process, written under a temporary name then renamed */
static int write_all(int fd, const void *p, size_t len)
{
    while (len) {
        ssize_t w = syscall(SYS_write, fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p = (const char *)p + w;
        len -= (size_t)w;
    }
    return 0;
}

static void write_dropped(void)
{
    char path[PATH_MAX + 64], line[96];
    int fd = -1;
    for (struct tbuf *b = atomic_load(&registry); b; b = b->next) {
        uint64_t d = atomic_load(&b->dropped);
        if (!d) continue;
        if (fd < 0) {
            snprintf(path, sizeof path, "%s/abtrace.%u.dropped", trace_dir, cur_pid);
            fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0) return;
        }
        int n = snprintf(line, sizeof line, "tid=%u recorded=%llu dropped=%llu\n", b->tid,
                         (unsigned long long)b->snap, (unsigned long long)d);
        write_all(fd, line, (size_t)n);
    }
    if (fd >= 0) close(fd);
}

static void flush(void)
{
    if (atomic_exchange(&flushed, 1) || (uint32_t)getpid() != cur_pid) return; /* vfork child */
    in_hook = 1;
    uint64_t total = 0;
    for (struct tbuf *b = atomic_load(&registry); b; b = b->next)
        total += b->snap = atomic_load_explicit(&b->n, memory_order_acquire);
    char tmp[PATH_MAX + 64], path[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s/.abtrace.%u.tmp", trace_dir, cur_pid);
    snprintf(path, sizeof path, "%s/abtrace.%u.trace", trace_dir, cur_pid);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    abt_header h = {{'A', 'B', 'T', 'T', 'R', 'A', 'C', 'E'}, ABT_TRACE_VERSION,
                    (uint16_t)sizeof(abt_record), (uint16_t)CLOCK_MONOTONIC, ABT_KIND_OPS,
                    total, abt_now_ns()};
    int ok = fd >= 0 && write_all(fd, &h, sizeof h) == 0;
    for (struct tbuf *b = atomic_load(&registry); ok && b; b = b->next)
        ok = write_all(fd, b->recs, b->snap * sizeof(abt_record)) == 0;
    if (fd >= 0 && syscall(SYS_close, fd) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) write_dropped();
    else abt_say(ABT_PRELOAD_NAME ": pid %u: cannot write %s: %s\n", cur_pid, path, strerror(errno));
    in_hook = 0;
}

__attribute__((destructor)) static void abtrace_dtor(void) { flush(); }

void _exit(int status)
{
    ABT_REAL(void (*)(int), _exit);
    flush();
    real__exit(status);
    __builtin_unreachable();
}

void _Exit(int status)
{
    ABT_REAL(void (*)(int), _Exit);
    flush();
    real__Exit(status);
    __builtin_unreachable();
}

/* ---- the hooks: time the real call, record it, keep errno as the caller sees it */
#define TIMED(op, flags, call) do { \
        if (in_hook) return call; \
        in_hook = 1; \
        uint64_t t0_ = abt_now_ns(); \
        __typeof__(call) r_ = call; \
        uint64_t t1_ = abt_now_ns(); \
        int e_ = errno; \
        record(op, flags, (long)r_, e_, t0_, t1_); \
        errno = e_; \
        in_hook = 0; \
        return r_; \
    } while (0)

#define HOOK(ret, name, op, params, args) \
    ret name params { ABT_REAL(ret (*) params, name); TIMED(op, 0, real_##name args); }

HOOK(ssize_t, read, ABT_OP_READ, (int fd, void *b, size_t n), (fd, b, n))
HOOK(ssize_t, write, ABT_OP_WRITE, (int fd, const void *b, size_t n), (fd, b, n))
HOOK(ssize_t, pread, ABT_OP_PREAD, (int fd, void *b, size_t n, off_t o), (fd, b, n, o))
HOOK(ssize_t, pread64, ABT_OP_PREAD, (int fd, void *b, size_t n, off64_t o), (fd, b, n, o))
HOOK(ssize_t, pwrite, ABT_OP_PWRITE, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o))
HOOK(ssize_t, pwrite64, ABT_OP_PWRITE, (int fd, const void *b, size_t n, off64_t o), (fd, b, n, o))
HOOK(ssize_t, readv, ABT_OP_READV, (int fd, const struct iovec *v, int c), (fd, v, c))
HOOK(ssize_t, writev, ABT_OP_WRITEV, (int fd, const struct iovec *v, int c), (fd, v, c))
HOOK(int, fsync, ABT_OP_FSYNC, (int fd), (fd))
HOOK(int, fdatasync, ABT_OP_FDATASYNC, (int fd), (fd))
HOOK(int, close, ABT_OP_CLOSE, (int fd), (fd))
/* fortified variants (-D_FORTIFY_SOURCE) that programs call instead of read/pread */
HOOK(ssize_t, __read_chk, ABT_OP_READ, (int fd, void *b, size_t n, size_t bl), (fd, b, n, bl))
HOOK(ssize_t, __pread_chk, ABT_OP_PREAD, (int fd, void *b, size_t n, off_t o, size_t bl), (fd, b, n, o, bl))
HOOK(ssize_t, __pread64_chk, ABT_OP_PREAD, (int fd, void *b, size_t n, off64_t o, size_t bl),
     (fd, b, n, o, bl))

static uint16_t open_flags(int flags)
{
    return (uint16_t)((flags & O_CREAT ? ABT_F_CREAT : 0) | (flags & O_DIRECT ? ABT_F_DIRECT : 0));
}

/* open's mode is variadic: read it only when the flags say it is there */
#define MODE_ARG(flags) \
    mode_t mode = 0; \
    if ((flags) & O_CREAT || ((flags) & O_TMPFILE) == O_TMPFILE) { \
        va_list ap; va_start(ap, flags); mode = (mode_t)va_arg(ap, int); va_end(ap); }

#define OPEN_HOOK(name) int name(const char *p, int flags, ...) { \
        MODE_ARG(flags); ABT_REAL(int (*)(const char *, int, ...), name); \
        TIMED(ABT_OP_OPEN, open_flags(flags), real_##name(p, flags, mode)); }
#define OPENAT_HOOK(name) int name(int d, const char *p, int flags, ...) { \
        MODE_ARG(flags); ABT_REAL(int (*)(int, const char *, int, ...), name); \
        TIMED(ABT_OP_OPEN, open_flags(flags), real_##name(d, p, flags, mode)); }

OPEN_HOOK(open)
OPEN_HOOK(open64)
OPENAT_HOOK(openat)
OPENAT_HOOK(openat64)
HOOK(int, __open_2, ABT_OP_OPEN, (const char *p, int f), (p, f))
HOOK(int, __open64_2, ABT_OP_OPEN, (const char *p, int f), (p, f))
HOOK(int, __openat_2, ABT_OP_OPEN, (int d, const char *p, int f), (d, p, f))
HOOK(int, __openat64_2, ABT_OP_OPEN, (int d, const char *p, int f), (d, p, f))

int creat(const char *p, mode_t m)
{
    ABT_REAL(int (*)(const char *, mode_t), creat);
    TIMED(ABT_OP_OPEN, ABT_F_CREAT, real_creat(p, m));
}

int creat64(const char *p, mode_t m)
{
    ABT_REAL(int (*)(const char *, mode_t), creat64);
    TIMED(ABT_OP_OPEN, ABT_F_CREAT, real_creat64(p, m));
}
