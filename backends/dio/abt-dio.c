/*
 * abt-dio - buffered vs O_DIRECT file workloads (Petersen, University of Wisconsin-Madison, Listing 1), one per call.
 *
 *   1 sequential appends: COUNT writes of BS bytes (default 256), syncfs, close
 *   2 random reads: COUNT reads of BS bytes at random BS-aligned offsets of a
 *     FILE_SIZE file (default 16 MiB, COUNT = FILE_SIZE/BS); the file's page cache
 *     is dropped first so that both modes start from the device
 *   3 single-block overwrite: COUNT times (default 64) lseek 0, write, syncfs; close
 *   4 single-block write/read: COUNT times lseek 0, write, syncfs, lseek 0, read; close
 * The timed span is the paper's PROFILE START..END; creating the file that 2-4 work
 * on is set-up and not timed. Block i of generation g holds a stamp (i, g) in its
 * first 8 bytes and a g-dependent pattern after it, so --verify can check that each
 * byte landed where it should and that the last overwrite won.
 *
 * Prints one line of key=value. Exit: 0 ok; 1 run failure (incl. --verify
 * mismatch); 2 bad option (incl. a block size misaligned for O_DIRECT);
 * 3 the filesystem does not do O_DIRECT.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/vfs.h>

#include "abt_opts.h"
#include "abt_trace.h"

#define PROG "abt-dio"
#define MAX_BS (16ull << 20)
#define MIN_BS 512ull
#define ALIGN 4096 /* buffer alignment: a page satisfies every device's dio_mem_align */

static struct {
    int workload, direct, verify, keep;
    uint64_t bs, file_size, count, seed;
    const char *dir, *trace;
} opt = {3, 0, 0, 0, 4096, 16ull << 20, 0, 1, NULL, NULL};

static abt_record *recs;
static uint64_t nrec, caprec;
static char path[4096];

/* The data file goes on every exit, including the exit(2) of a late EINVAL. */
static void remove_data(void)
{
    if (path[0] && !opt.keep) unlink(path);
}

static void die(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", PROG, what, strerror(errno));
    exit(1);
}

static void rec(uint16_t op, uint32_t bytes, uint64_t t0)
{
    uint64_t t1 = abt_now_ns();
    if (!opt.trace || nrec == caprec) return;
    recs[nrec++] = (abt_record){(uint32_t)getpid(), (uint32_t)syscall(SYS_gettid), op,
                                opt.direct ? ABT_F_DIRECT : 0, bytes, t0, t1};
}

/* Block content after the 8-byte stamp: a byte pattern of the generation. */
static void fill(unsigned char *b, uint64_t gen)
{
    for (uint64_t k = 8; k < opt.bs; k++) b[k] = (unsigned char)(k * 131 + gen * 7 + 1);
}

static void set_stamp(unsigned char *b, uint64_t index, uint64_t gen)
{
    uint64_t s = index ^ (gen << 40);
    memcpy(b, &s, 8);
}

/* -1 if b is block index of generation gen, else the first differing offset. */
static long check(const unsigned char *b, uint64_t index, uint64_t gen)
{
    uint64_t s = index ^ (gen << 40);
    if (memcmp(b, &s, 8)) return 0;
    for (uint64_t k = 8; k < opt.bs; k++)
        if (b[k] != (unsigned char)(k * 131 + gen * 7 + 1)) return (long)k;
    return -1;
}

static void verify_fail(uint64_t index, long at)
{
    fprintf(stderr, "%s: --verify: block %llu differs at byte %ld\n", PROG,
            (unsigned long long)index, at);
    exit(1);
}

static void io_all(int wr, int fd, unsigned char *b, uint64_t n, const char *what)
{
    for (uint64_t done = 0; done < n;) {
        ssize_t r = wr ? write(fd, b + done, n - done) : read(fd, b + done, n - done);
        if (r < 0 && errno == EINVAL && opt.direct)
            abt_bad_arg(PROG, "--block-size", "given %llu: O_DIRECT %s failed with EINVAL; "
                        "accepted: a multiple of the device's logical block size",
                        (unsigned long long)opt.bs, what);
        if (r < 0) die(what);
        if (r == 0) { errno = EIO; die(wr ? "write returned 0" : "read hit end of file"); }
        done += (uint64_t)r;
    }
}

static void timed_io(int wr, int fd, unsigned char *b)
{
    uint64_t t0 = abt_now_ns();
    io_all(wr, fd, b, opt.bs, wr ? "write" : "read");
    rec(wr ? ABT_OP_WRITE : ABT_OP_READ, (uint32_t)opt.bs, t0);
}

static void timed_syncfs(int fd)
{
    uint64_t t0 = abt_now_ns();
    if (syncfs(fd)) die("syncfs");
    rec(ABT_OP_SYNCFS, 0, t0);
}

static void timed_close(int fd)
{
    uint64_t t0 = abt_now_ns();
    if (close(fd)) die("close");
    rec(ABT_OP_CLOSE, 0, t0);
}

static void seek0(int fd)
{
    if (lseek(fd, 0, SEEK_SET) != 0) die("lseek");
}

static const char *fs_name(const char *dir)
{
    struct statfs s;
    if (statfs(dir, &s)) return "unknown";
    switch ((unsigned long)s.f_type) {
    case 0xEF53: return "ext4";
    case 0x01021994: return "tmpfs";
    case 0x858458f6: return "ramfs";
    case 0x58465342: return "xfs";
    case 0x9123683e: return "btrfs";
    case 0xf2f52010: return "f2fs";
    case 0x794c7630: return "overlayfs";
    case 0x65735546: return "fuse";
    case 0x6969: return "nfs";
    case 0x01021997: return "9p";
    default: return "unknown";
    }
}

/* O_DIRECT offset alignment of files in dir; exits 3 if the filesystem cannot do it. */
static unsigned dio_alignment(const char *fs)
{
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.abt-dio-probe.%ld", opt.dir, (long)getpid());
    int fd = open(probe, O_CREAT | O_EXCL | O_RDWR | O_DIRECT, 0644);
    if (fd < 0 && errno == EINVAL) {
        fprintf(stderr, "%s: --direct: filesystem %s at %s refuses O_DIRECT (open: %s)\n",
                PROG, fs, opt.dir, strerror(EINVAL));
        exit(3);
    }
    if (fd < 0) die("open O_DIRECT probe");
    struct statx sx;
    int ok = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
             (sx.stx_mask & STATX_DIOALIGN);
    close(fd);
    unlink(probe);
    if (ok && sx.stx_dio_offset_align) return sx.stx_dio_offset_align;
    if (ok || !strcmp(fs, "tmpfs") || !strcmp(fs, "ramfs")) {
        /* tmpfs accepts the flag since Linux 6.6, but there is no device to go to */
        fprintf(stderr, "%s: --direct: filesystem %s at %s does not do direct I/O "
                "(statx reports no O_DIRECT alignment; its data lives in the page cache); "
                "use a block-device filesystem such as a scratch ext4\n", PROG, fs, opt.dir);
        exit(3);
    }
    return 0; /* not reported: the first EINVAL from a transfer says misaligned */
}

static void check_space(uint64_t need)
{
    struct statvfs v;
    if (statvfs(opt.dir, &v) == 0 && need + (8u << 20) > (uint64_t)v.f_bavail * v.f_frsize)
        abt_bad_arg(PROG, "--count", "%llu bytes of data do not fit in the %llu bytes free "
                    "at %s; accepted: a smaller --count or --block-size",
                    (unsigned long long)need,
                    (unsigned long long)v.f_bavail * v.f_frsize, opt.dir);
}

/* Untimed set-up: a file of nblk blocks of generation 0, on disk, not in cache. */
static void make_file(unsigned char *b, uint64_t nblk)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) die("open (set-up)");
    fill(b, 0);
    for (uint64_t i = 0; i < nblk; i++) {
        set_stamp(b, i, 0);
        io_all(1, fd, b, opt.bs, "write (set-up)");
    }
    if (fsync(fd)) die("fsync (set-up)");
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static int open_timed(int flags)
{
    uint64_t t0 = abt_now_ns();
    int fd = open(path, flags | (opt.direct ? O_DIRECT : 0), 0644);
    if (fd < 0) die("open");
    rec(ABT_OP_OPEN, 0, t0);
    return fd;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

/* Read the whole file back (buffered) and check block i against stamp (i, gen). */
static void verify_file(unsigned char *b, uint64_t nblk, uint64_t gen)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) die("open (--verify)");
    if ((uint64_t)st.st_size != nblk * opt.bs) {
        fprintf(stderr, "%s: --verify: file is %lld bytes, expected %llu\n", PROG,
                (long long)st.st_size, (unsigned long long)(nblk * opt.bs));
        exit(1);
    }
    for (uint64_t i = 0; i < nblk; i++) {
        io_all(0, fd, b, opt.bs, "read (--verify)");
        long at = check(b, i, gen);
        if (at >= 0) verify_fail(i, at);
    }
    close(fd);
}

/* What a workload did inside its timed span (the paper's PROFILE START..END). */
typedef struct { uint64_t t0, t1, wr, rd; } span;

static void w_appends(unsigned char *b, span *sp)
{
    check_space(opt.count * opt.bs);
    int fd = open_timed(O_CREAT | O_TRUNC | O_WRONLY);
    fill(b, 1);
    sp->t0 = abt_now_ns();
    for (uint64_t i = 0; i < opt.count; i++) {
        set_stamp(b, i, 1);
        timed_io(1, fd, b);
    }
    timed_syncfs(fd);
    timed_close(fd);
    sp->t1 = abt_now_ns();
    sp->wr = opt.count * opt.bs;
    if (opt.verify) verify_file(b, opt.count, 1);
}

static void w_random_reads(unsigned char *b, span *sp)
{
    if (opt.bs > opt.file_size)
        abt_bad_arg(PROG, "--block-size", "given %llu; accepted: at most --file-size (%llu)",
                    (unsigned long long)opt.bs, (unsigned long long)opt.file_size);
    uint64_t nblk = opt.file_size / opt.bs, seed = opt.seed ? opt.seed : 1;
    check_space(nblk * opt.bs);
    make_file(b, nblk);
    int fd = open_timed(O_RDONLY);
    sp->t0 = abt_now_ns();
    for (uint64_t i = 0; i < opt.count; i++) {
        uint64_t blk = xorshift(&seed) % nblk;
        if (lseek(fd, (off_t)(blk * opt.bs), SEEK_SET) < 0) die("lseek");
        timed_io(0, fd, b);
        long at = opt.verify ? check(b, blk, 0) : -1;
        if (at >= 0) verify_fail(blk, at);
    }
    sp->t1 = abt_now_ns();
    sp->rd = opt.count * opt.bs;
    close(fd);
}

static void w_single_block(unsigned char *b, int read_back, span *sp)
{
    unsigned char *r = NULL;
    if (read_back && posix_memalign((void **)&r, ALIGN, opt.bs)) die("posix_memalign");
    make_file(b, 1);
    int fd = open_timed(O_RDWR);
    sp->t0 = abt_now_ns();
    for (uint64_t g = 1; g <= opt.count; g++) {
        fill(b, g);  /* new content each time, so a lost overwrite shows */
        set_stamp(b, 0, g);
        seek0(fd);
        timed_io(1, fd, b);
        timed_syncfs(fd);
        if (!read_back) continue;
        seek0(fd);
        timed_io(0, fd, r);
        long at = opt.verify ? check(r, 0, g) : -1;
        if (at >= 0) verify_fail(0, at);
    }
    timed_close(fd);
    sp->t1 = abt_now_ns();
    sp->wr = opt.count * opt.bs, sp->rd = read_back ? opt.count * opt.bs : 0;
    if (opt.verify) verify_file(b, 1, opt.count);
    free(r);
}

static void describe(void)
{
    printf("name: %s\nrecord_size: %zu\nheader_size: %zu\n"
           "parameters: --workload 1..4 (1 appends+syncfs, 2 random reads of --file-size, "
           "3 single-block overwrite+syncfs, 4 single-block write+syncfs+read), --direct, "
           "--block-size %llu..%llu (k/m/g), --dir DIR, --count N, --file-size SIZE, "
           "--seed N, --trace PATH, --verify, --keep (leave the data file; output names it)\n"
           "output: workload mode block_size count bytes_written bytes_read elapsed_ns "
           "filesystem dio_align verified [file]\n",
           PROG, sizeof(abt_record), sizeof(abt_header), MIN_BS, MAX_BS);
}

static void parse(int argc, char **argv)
{
    static const struct option lo[] = {
        {"workload", 1, 0, 'w'}, {"direct", 0, 0, 'D'}, {"block-size", 1, 0, 'b'},
        {"dir", 1, 0, 'd'}, {"count", 1, 0, 'c'}, {"file-size", 1, 0, 'f'},
        {"seed", 1, 0, 's'}, {"trace", 1, 0, 't'}, {"verify", 0, 0, 'V'},
        {"keep", 0, 0, 'k'}, {"describe", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        switch (c) {
        case 'w': opt.workload = (int)abt_parse_long(PROG, "--workload", optarg, 1, 4); break;
        case 'D': opt.direct = 1; break;
        case 'b': opt.bs = abt_parse_size(PROG, "--block-size", optarg, MIN_BS, MAX_BS); break;
        case 'd': opt.dir = optarg; break;
        case 'c': opt.count = (uint64_t)abt_parse_long(PROG, "--count", optarg, 1, 1L << 24); break;
        case 'f': opt.file_size = abt_parse_size(PROG, "--file-size", optarg, MIN_BS, 1ull << 34); break;
        case 's': opt.seed = (uint64_t)abt_parse_long(PROG, "--seed", optarg, 0, LONG_MAX); break;
        case 't': opt.trace = optarg; break;
        case 'V': opt.verify = 1; break;
        case 'k': opt.keep = 1; break;
        case 'h': describe(); exit(0);
        default: abt_bad_option(PROG, c, argv, "see --describe");
        }
    }
    abt_no_operands(PROG, argc, argv);
    if (!opt.dir) abt_bad_arg(PROG, "--dir", "missing; accepted: a directory on the filesystem to test");
    if (!opt.count) opt.count = opt.workload == 1 ? 256 : opt.workload == 2
        ? (opt.bs <= opt.file_size ? opt.file_size / opt.bs : 1) : 64;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    const char *fs = fs_name(opt.dir);
    abt_check_dir(PROG, "--dir", opt.dir, 0, "a writable directory");
    unsigned align = opt.direct ? dio_alignment(fs) : 0;
    if (align && opt.bs % align)
        abt_bad_arg(PROG, "--block-size", "given %llu; accepted with --direct on %s at %s: "
                    "a multiple of %u bytes (statx O_DIRECT alignment)",
                    (unsigned long long)opt.bs, fs, opt.dir, align);
    caprec = opt.trace ? 4 * opt.count + 8 : 1;
    recs = calloc(caprec, sizeof *recs);
    unsigned char *b;
    if (!recs || posix_memalign((void **)&b, ALIGN, opt.bs)) die("allocate buffers");
    snprintf(path, sizeof path, "%s/abt-dio.w%d.%ld.dat", opt.dir, opt.workload, (long)getpid());
    atexit(remove_data);
    span sp = {0, 0, 0, 0};
    switch (opt.workload) {
    case 1: w_appends(b, &sp); break;
    case 2: w_random_reads(b, &sp); break;
    default: w_single_block(b, opt.workload == 4, &sp);
    }
    if (opt.trace && abt_trace_write(opt.trace, ABT_KIND_OPS, recs, nrec)) die("write --trace");
    printf("workload: %d\nmode: %s\nblock_size: %llu\ncount: %llu\nbytes_written: %llu\n"
           "bytes_read: %llu\nelapsed_ns: %llu\nfilesystem: %s\ndio_align: %u\nverified: %s\n%s%s%s",
           opt.workload,
           opt.direct ? "direct" : "buffered", (unsigned long long)opt.bs,
           (unsigned long long)opt.count, (unsigned long long)sp.wr, (unsigned long long)sp.rd,
           (unsigned long long)(sp.t1 - sp.t0), fs, align, opt.verify ? "yes" : "no",
           opt.keep ? "file: " : "", opt.keep ? path : "", opt.keep ? "\n" : "");
    return 0;
}
