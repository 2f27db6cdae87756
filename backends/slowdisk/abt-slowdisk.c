/*
 * abt-slowdisk - an emulated slow disk: a FUSE passthrough of one backing
 * directory that makes every read, write and fsync of its files cost what a
 * device model says, so a loop device on an image file in it behaves like a
 * disk with per-request latency (a journal commit then costs milliseconds).
 *
 *   abt-slowdisk [model options] BACKING_DIR MOUNTPOINT [fuse options, e.g. -f]
 *
 * Model (one device, one request at a time; requests that find it busy wait
 * and are served in elevator order, see pick()):
 *   read/write of n bytes at offset o:
 *     o in [head, head + window]  -> (o - head + n) / bw      (no seek, no rotation:
 *                                     a short forward skip passes under the head),
 *                                     + rotation if the device sat idle for more than
 *                                     idle_us first (the platter turned on meanwhile)
 *     otherwise                   -> seek + rotation + n / bw
 *     then head = o + n
 *   fsync (the loop device's cache flush / FUA)  -> flush
 * The queue is a virtual clock: a request starts when the device is free
 * (max(now, busy_until)), busy_until advances by its cost, and the caller
 * sleeps until then with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME).
 * Costs never overlap, and the sleep is outside the mutex so the FUSE threads
 * only queue, as at a real disk. The host file is written at once and never
 * fsynced (the image is scratch): only the model's latency is seen.
 *
 * With --disk NAME the cost is instead the drive model of abt_disk.h (the one the
 * guests' disks and the tests use): seek by distance, rotation from the clock,
 * zoned transfer, a volatile write cache destaged on idle, when full and on fsync
 * (= FLUSH), and the drive's own choice among the oldest --depth waiting requests.
 * Its clock is the same virtual clock: a request reaches the model at
 * max(arrival, when the disk frees), in CLOCK_MONOTONIC ns.
 *
 * Counters (requests, positionings, flushes, modelled busy time) go to stderr
 * as one "slowdisk: key=value ..." line at exit and on SIGUSR1, so a caller can
 * take the difference over one run.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "abt_disk.h"
#include "abt_opts.h"

#define PROG "abt-slowdisk"

typedef struct {
    long seek_us, rotation_us, bw_mbps, flush_us, idle_us;
    uint64_t window;
} model;

static model g_m = {8500, 4167, 125, 4000, 1000, 65536};
static int g_dir = -1;                 /* the backing directory */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_busy_until, g_head;  /* virtual clock (ns), head position (bytes) */
static int g_have_head;
static uint64_t g_reqs, g_positionings, g_idle_rotations, g_flushes, g_busy_ns;
static uint64_t g_queued;     /* requests that found the disk busy and waited */
static struct abt_disk g_disk; /* the drive model, when --disk is given */
static const char *g_disk_name;
static uint64_t g_fixed_ns, g_depth;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Cost (ns) of a transfer of n bytes at off arriving at t; moves the head.
 * Call with g_mu held, before g_busy_until moves. */
static uint64_t transfer_cost(uint64_t off, uint64_t n, uint64_t t)
{
    uint64_t bytes = n, cost = 0;
    if (g_have_head && off >= g_head && off - g_head <= g_m.window) {
        bytes += off - g_head;
        if (t > g_busy_until + (uint64_t)g_m.idle_us * 1000u) {
            cost = (uint64_t)g_m.rotation_us * 1000u;
            g_idle_rotations++;
        }
    } else {
        cost = (uint64_t)(g_m.seek_us + g_m.rotation_us) * 1000u;
        g_positionings++;
    }
    g_head = off + n;
    g_have_head = 1;
    return cost + bytes * 1000u / (uint64_t)g_m.bw_mbps;  /* MB/s = bytes/us */
}

/* A request waiting for the disk. Waiting requests are served in elevator
 * order (C-LOOK: the nearest offset at or past the head, else the lowest), as a
 * disk with a command queue does; a flush waits for every request that arrived
 * before it, and none that arrived after it passes it. */
typedef struct req {
    uint64_t off, n, seq, arrival, done;
    int is_flush, is_read, started;
    pthread_cond_t cv;
    struct req *next;
} req;

static req *g_queue;          /* waiting requests, any order */
static int g_serving;         /* a request holds the disk */
static uint64_t g_seq;

/* Start r at virtual time t (the disk is free from t): cost, head, counters. */
static void start(req *r, uint64_t t)
{
    uint64_t cost;
    if (g_disk_name) {
        int op = r->is_flush ? ABT_DISK_FLUSH : r->is_read ? ABT_DISK_READ : ABT_DISK_WRITE;
        uint64_t lba = r->off / ABT_DISK_SECTOR;
        uint64_t end = (r->off + r->n + ABT_DISK_SECTOR - 1) / ABT_DISK_SECTOR;
        uint64_t pos = g_disk.positionings;
        cost = abt_disk_serve(&g_disk, op, lba, end - lba, 0, t) - t;
        g_positionings += g_disk.positionings - pos;
    } else {
        cost = r->is_flush ? (uint64_t)g_m.flush_us * 1000u
                           : transfer_cost(r->off, r->n, r->arrival);
    }
    r->done = t + cost;
    r->started = 1;
    g_busy_until = r->done;
    g_busy_ns += cost;
    g_serving = 1;
}

/* The drive model's choice among the oldest waiting requests before the barrier. */
static req **pick_model(uint64_t barrier)
{
    req **cand[ABT_DISK_EXTENTS];
    abt_u64 lbas[ABT_DISK_EXTENTS];
    size_t n = 0;
    for (req **p = &g_queue; *p && n < ABT_DISK_EXTENTS; p = &(*p)->next)
        if (!(*p)->is_flush && (*p)->seq < barrier) {
            size_t i = n++;   /* insertion by arrival: oldest first */
            while (i && (*cand[i - 1])->seq > (*p)->seq) { cand[i] = cand[i - 1]; i--; }
            cand[i] = p;
        }
    if (!n) return NULL;
    for (size_t i = 0; i < n; i++) lbas[i] = (*cand[i])->off / ABT_DISK_SECTOR;
    return cand[abt_disk_pick(&g_disk, lbas, n)];
}

/* Unlink and return the next request to serve, or NULL if none waits. */
static req *pick(void)
{
    uint64_t barrier = UINT64_MAX;      /* the oldest waiting flush */
    for (req *q = g_queue; q; q = q->next)
        if (q->is_flush && q->seq < barrier) barrier = q->seq;
    req **best = NULL, **low = NULL, **flush = NULL;
    if (g_disk_name) {
        best = pick_model(barrier);
        for (req **p = &g_queue; *p && !best; p = &(*p)->next)
            if ((*p)->seq == barrier) flush = p;
        req **take = best ? best : flush;
        if (!take) return NULL;
        req *r = *take;
        *take = r->next;
        return r;
    }
    for (req **p = &g_queue; *p; p = &(*p)->next) {
        req *q = *p;
        if (q->is_flush) {
            if (q->seq == barrier) flush = p;
            continue;
        }
        if (q->seq > barrier) continue;
        if (q->off >= g_head && (!best || q->off < (*best)->off)) best = p;
        if (!low || q->off < (*low)->off) low = p;
    }
    req **take = best ? best : low ? low : flush;
    if (!take) return NULL;
    req *r = *take;
    *take = r->next;
    return r;
}

/* Wait for the disk, hold it for the request's cost, hand it to the next one. */
static void serve(int is_flush, int is_read, uint64_t off, uint64_t n)
{
    req r = {.off = off, .n = n, .is_flush = is_flush, .is_read = is_read};
    pthread_cond_init(&r.cv, NULL);
    pthread_mutex_lock(&g_mu);
    r.arrival = now_ns();
    r.seq = g_seq++;
    g_reqs++;
    g_flushes += (uint64_t)is_flush;
    if (!g_serving) {
        start(&r, r.arrival > g_busy_until ? r.arrival : g_busy_until);
    } else {
        g_queued++;
        r.next = g_queue;
        g_queue = &r;
        while (!r.started)
            pthread_cond_wait(&r.cv, &g_mu);
    }
    uint64_t done = r.done;
    pthread_mutex_unlock(&g_mu);
    sleep_until(done);
    pthread_mutex_lock(&g_mu);
    req *next = pick();
    if (next) {
        start(next, next->arrival > done ? next->arrival : done);
        pthread_cond_signal(&next->cv);
    } else {
        g_serving = 0;
    }
    pthread_mutex_unlock(&g_mu);
    pthread_cond_destroy(&r.cv);
}

/* FUSE paths are "/name"; the backing directory's relative path is "name" or ".". */
static const char *rel(const char *path)
{
    return path[1] ? path + 1 : ".";
}

static int sd_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    int r = fi ? fstat((int)fi->fh, st) : fstatat(g_dir, rel(path), st, AT_SYMLINK_NOFOLLOW);
    return r < 0 ? -errno : 0;
}

static int sd_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off; (void)fi; (void)flags;
    int fd = openat(g_dir, rel(path), O_RDONLY | O_DIRECTORY);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        int e = errno;
        if (fd >= 0) close(fd);
        return -e;
    }
    for (struct dirent *e; (e = readdir(d));)
        fill(buf, e->d_name, NULL, 0, 0);
    closedir(d);
    return 0;
}

static int sd_open(const char *path, struct fuse_file_info *fi)
{
    int fd = openat(g_dir, rel(path), fi->flags & ~O_DIRECT);
    if (fd < 0) return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int sd_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int fd = openat(g_dir, rel(path), (fi->flags & ~O_DIRECT) | O_CREAT, mode);
    if (fd < 0) return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int sd_read(const char *path, char *buf, size_t n, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    ssize_t r = pread((int)fi->fh, buf, n, off);
    if (r < 0) return -errno;
    serve(0, 1, (uint64_t)off, n);
    return (int)r;
}

static int sd_write(const char *path, const char *buf, size_t n, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path;
    ssize_t r = pwrite((int)fi->fh, buf, n, off);
    if (r < 0) return -errno;
    serve(0, 0, (uint64_t)off, n);
    return (int)r;
}

static int sd_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path; (void)datasync; (void)fi;
    serve(1, 0, 0, 0);
    return 0;
}

static int sd_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int sd_unlink(const char *path)
{
    return unlinkat(g_dir, rel(path), 0) < 0 ? -errno : 0;
}

static int sd_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    int fd = fi ? (int)fi->fh : openat(g_dir, rel(path), O_WRONLY);
    if (fd < 0) return -errno;
    int r = ftruncate(fd, size) < 0 ? -errno : 0;
    if (!fi) close(fd);
    return r;
}

static int sd_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi)
{
    (void)path;
    return fallocate((int)fi->fh, mode, off, len) < 0 ? -errno : 0;
}

static int sd_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    int r = fi ? futimens((int)fi->fh, tv) : utimensat(g_dir, rel(path), tv, AT_SYMLINK_NOFOLLOW);
    return r < 0 ? -errno : 0;
}

static int sd_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int r = fi ? fchmod((int)fi->fh, mode) : fchmodat(g_dir, rel(path), mode, 0);
    return r < 0 ? -errno : 0;
}

static int sd_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    return fstatvfs(g_dir, sv) < 0 ? -errno : 0;
}

/* The counters line, built with nothing but stores: it is also written from a
 * signal handler, where stdio is not safe. Counters are aligned 64-bit words, so
 * each one reads whole even while a request updates another. */
static size_t counters_line(char *buf, size_t cap)
{
    const char *keys[] = {"slowdisk: requests=", " positionings=", " idle_rotations=",
                          " flushes=", " busy_ns=", " queued=", " destages="};
    uint64_t vals[] = {g_reqs, g_positionings, g_idle_rotations, g_flushes, g_busy_ns, g_queued,
                       g_disk.destages};
    size_t n = 0;
    for (int k = 0; k < 7; k++) {
        for (const char *c = keys[k]; *c && n < cap - 1; c++) buf[n++] = *c;
        char digits[24];
        int d = 0;
        uint64_t v = vals[k];
        do { digits[d++] = (char)('0' + v % 10); v /= 10; } while (v);
        while (d && n < cap - 1) buf[n++] = digits[--d];
    }
    buf[n++] = '\n';
    return n;
}

static void report(int sig)
{
    (void)sig;
    char buf[256];
    size_t n = counters_line(buf, sizeof buf);
    ssize_t w = write(2, buf, n);
    (void)w;
}

static void *sd_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    /* Writes must reach the model as the loop device issues them, not when the
     * kernel's write-back of this file's page cache gets round to them. */
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    /* A loop device's request reaches the disk whole (up to 1 MiB), not as 128 KiB
     * pieces that each would miss their sector and wait a turn. */
    conn->max_write = 1u << 20;
    cfg->use_ino = 0;
    /* Unlinking a file that is still open (an image a loop device has not let go of
     * yet) removes it, instead of renaming it to .fuse_hidden*: there is no rename. */
    cfg->hard_remove = 1;
    return NULL;
}

static void sd_destroy(void *data)
{
    (void)data;
    report(0);
}

static const struct fuse_operations ops = {
    .getattr = sd_getattr, .readdir = sd_readdir, .open = sd_open, .create = sd_create,
    .read = sd_read, .write = sd_write, .fsync = sd_fsync, .release = sd_release,
    .unlink = sd_unlink, .truncate = sd_truncate, .fallocate = sd_fallocate,
    .utimens = sd_utimens, .chmod = sd_chmod, .statfs = sd_statfs,
    .init = sd_init, .destroy = sd_destroy,
};

static void describe(void)
{
    if (g_disk_name) {
        const struct abt_disk_params *p = &g_disk.p;
        printf("name: %s\nsummary: FUSE passthrough with a disk latency model per request\n"
               "param.disk: %s\nparam.sectors: %llu\nparam.rpm: %llu\nparam.zones: %llu\n"
               "param.outer_Bps: %llu\nparam.inner_Bps: %llu\nparam.iface_Bps: %llu\n"
               "param.seek_t2t_ns: %llu\nparam.seek_avg_ns: %llu\nparam.seek_full_ns: %llu\n"
               "param.overhead_ns: %llu\nparam.cache_bytes: %llu\nparam.idle_ns: %llu\n"
               "param.flush_ns: %llu\nparam.fixed_ns: %llu\nparam.depth: %llu\n"
               "model: abt_disk.h (zoned 7200 rpm drive, write cache, FLUSH on fsync)\n",
               PROG, p->name, p->sectors, p->rpm, p->zones, p->outer_Bps, p->inner_Bps,
               p->iface_Bps, p->seek_t2t_ns, p->seek_avg_ns, p->seek_full_ns, p->overhead_ns,
               p->cache_bytes, p->idle_ns, p->flush_ns, p->fixed_ns, p->depth);
        return;
    }
    printf("name: %s\nsummary: FUSE passthrough with a disk latency model per request\n"
           "param.seek_us: %ld\nparam.rotation_us: %ld\nparam.bw_mbps: %ld\n"
           "param.flush_us: %ld\nparam.idle_us: %ld\nparam.sequential_window: %llu\n"
           "model: read/write = (seek_us + rotation_us unless the offset is within "
           "sequential_window past the previous end; then rotation_us only after an idle "
           "gap over idle_us) + bytes / bw; fsync = flush_us; one request at a time, "
           "waiting ones in C-LOOK order, a flush after all that arrived before it\n",
           PROG, g_m.seek_us, g_m.rotation_us, g_m.bw_mbps, g_m.flush_us, g_m.idle_us,
           (unsigned long long)g_m.window);
}

/* "--opt=V" or "--opt V": the value, advancing *i past it; NULL if argv[*i] is not opt. */
static const char *opt_value(int argc, char **argv, int *i, const char *opt)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n) != 0) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n] != '\0') return NULL;
    if (*i + 1 >= argc) abt_bad_arg(PROG, opt, "missing value");
    return argv[++*i];
}

/* Takes the model options out of argv; returns 1 for --describe. */
static int parse_model(int *argc, char **argv)
{
    int out = 1, want_describe = 0;
    for (int i = 1; i < *argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--describe")) want_describe = 1;
        else if ((v = opt_value(*argc, argv, &i, "--seek-us")))
            g_m.seek_us = abt_parse_long(PROG, "--seek-us", v, 0, 1000000);
        else if ((v = opt_value(*argc, argv, &i, "--rotation-us")))
            g_m.rotation_us = abt_parse_long(PROG, "--rotation-us", v, 0, 1000000);
        else if ((v = opt_value(*argc, argv, &i, "--bw-mbps")))
            g_m.bw_mbps = abt_parse_long(PROG, "--bw-mbps", v, 1, 100000);
        else if ((v = opt_value(*argc, argv, &i, "--flush-us")))
            g_m.flush_us = abt_parse_long(PROG, "--flush-us", v, 0, 1000000);
        else if ((v = opt_value(*argc, argv, &i, "--idle-us")))
            g_m.idle_us = abt_parse_long(PROG, "--idle-us", v, 0, 10000000);
        else if ((v = opt_value(*argc, argv, &i, "--disk"))) {
            if (!abt_disk_profile(v))
                abt_bad_arg(PROG, "--disk", "given '%s': one of hdd7200, hdd7200-nocache, "
                            "ssd-sata, fixed", v);
            g_disk_name = v;
        } else if ((v = opt_value(*argc, argv, &i, "--fixed-ns")))
            g_fixed_ns = (uint64_t)abt_parse_long(PROG, "--fixed-ns", v, 1, 10000000000L);
        else if ((v = opt_value(*argc, argv, &i, "--depth")))
            g_depth = (uint64_t)abt_parse_long(PROG, "--depth", v, 1, 31);
        else if ((v = opt_value(*argc, argv, &i, "--sequential-window")))
            g_m.window = abt_parse_size(PROG, "--sequential-window", v, 0, 1ull << 30);
        else argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    if ((g_fixed_ns || g_depth) && !g_disk_name)
        abt_bad_arg(PROG, g_fixed_ns ? "--fixed-ns" : "--depth", "needs --disk");
    if (g_disk_name) {
        struct abt_disk_params q = *abt_disk_profile(g_disk_name);
        if (g_fixed_ns) q.fixed_ns = g_fixed_ns;
        if (g_depth) q.depth = g_depth;
        if (abt_disk_init(&g_disk, &q) != 0)
            abt_bad_arg(PROG, "--disk", "profile '%s' has inconsistent parameters", g_disk_name);
    }
    return want_describe;
}

int main(int argc, char **argv)
{
    if (parse_model(&argc, argv)) {
        describe();
        return 0;
    }
    if (argc < 3 || argv[1][0] == '-')
        abt_bad_arg(PROG, "BACKING_DIR", "usage: %s [--seek-us N] [--rotation-us N] "
                    "[--bw-mbps N] [--flush-us N] [--idle-us N] [--sequential-window BYTES] "
                    "[--disk NAME [--fixed-ns N] [--depth 1..31]] [--describe] "
                    "BACKING_DIR MOUNTPOINT [fuse options]", PROG);
    g_dir = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (g_dir < 0)
        abt_bad_arg(PROG, "BACKING_DIR", "given '%s': %s", argv[1], strerror(errno));
    /* Before the mount: the mount point appears before FUSE's init runs, and a caller's
     * first SIGUSR1 must not find the default action (terminate). */
    struct sigaction sa = {0};
    sa.sa_handler = report;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    /* fuse_main sees PROG MOUNTPOINT [options]. */
    argv[1] = argv[0];
    return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
