/*
 * abt_trace.h - the one binary trace format of abtlab.
 *
 * A file is a 32-byte header followed by record_count 32-byte records, all
 * little-endian. Python reads it with a single numpy structured dtype
 * (abtlab/trace.py: HEADER_DTYPE, RECORD_DTYPE); keep the two in step and bump
 * ABT_TRACE_VERSION on any change. Timestamps are CLOCK_MONOTONIC nanoseconds,
 * the clock tracefs calls "mono", so op records and jbd2 events share one axis.
 */
#ifndef ABT_TRACE_H
#define ABT_TRACE_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define ABT_TRACE_MAGIC "ABTTRACE"
#define ABT_TRACE_VERSION 1

/* what a file holds: operations of a workload, or batches of a runtime */
enum abt_kind { ABT_KIND_OPS = 1, ABT_KIND_BATCHES = 2, ABT_KIND_DECISIONS = 3 };

enum abt_op {
    ABT_OP_OPEN = 1, ABT_OP_WRITE = 2, ABT_OP_FSYNC = 3, ABT_OP_CLOSE = 4,
    ABT_OP_READ = 5, ABT_OP_PREAD = 6, ABT_OP_PWRITE = 7, ABT_OP_READV = 8,
    ABT_OP_WRITEV = 9, ABT_OP_FDATASYNC = 10, ABT_OP_SYNCFS = 11,
    ABT_OP_BARRIER = 12,   /* wait at the start barrier */
    ABT_OP_LOCK = 13,      /* lock workload: one critical-section entry */
    ABT_OP_BATCH = 20,     /* delayJC batch: open..close, bytes=members, flags=resets */
    ABT_OP_FLUSH = 21,     /* delayJC flush: start..end, bytes=members */
    ABT_OP_FREQ = 30       /* frequency decision: bytes=kHz */
};

enum abt_flag {
    ABT_F_ERROR = 1u << 0,   /* call failed; bytes holds errno */
    ABT_F_DIRECT = 1u << 1,  /* O_DIRECT */
    ABT_F_CREAT = 1u << 2,   /* open with O_CREAT */
    ABT_F_DILATED = 1u << 3, /* CPU time dilated (emulated frequency) */
    ABT_F_BATCHED = 1u << 4  /* served by a delayJC batch */
};

/* 32 bytes. bytes is 32-bit: Linux moves at most 0x7ffff000 bytes per call. */
typedef struct {
    uint32_t pid;      /* the process; in a workload's op records, the kernel task (tid) of the worker */
    uint32_t tid;      /* kernel tid (libabtrace), or the workload's worker index (op records) */
    uint16_t op;
    uint16_t flags;
    uint32_t bytes;
    uint64_t t_start_ns;
    uint64_t t_end_ns;
} abt_record;

typedef struct {
    char magic[8];        /* "ABTTRACE", no NUL */
    uint16_t version;
    uint16_t record_size; /* sizeof(abt_record) */
    uint16_t clock_id;    /* CLOCK_MONOTONIC */
    uint16_t kind;        /* enum abt_kind */
    uint64_t record_count;
    uint64_t created_ns;  /* CLOCK_MONOTONIC when the file was written */
} abt_header;

_Static_assert(sizeof(abt_record) == 32, "abt_record must be 32 bytes");
_Static_assert(sizeof(abt_header) == 32, "abt_header must be 32 bytes");

static inline uint64_t abt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Write header + records; returns 0 or -1 with errno set. */
static inline int abt_trace_write(const char *path, uint16_t kind,
                                  const abt_record *recs, uint64_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    abt_header h = {{'A', 'B', 'T', 'T', 'R', 'A', 'C', 'E'}, ABT_TRACE_VERSION,
                    (uint16_t)sizeof(abt_record), (uint16_t)CLOCK_MONOTONIC, kind,
                    n, abt_now_ns()};
    int ok = fwrite(&h, sizeof h, 1, f) == 1 &&
             (n == 0 || fwrite(recs, sizeof *recs, n, f) == n);
    if (fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

#endif
