/*
 * abt_dilate.h - emulated CPU frequency by CPU-time dilation, and op timing.
 *
 * Where cpufreq is missing, a run at frequency f is emulated against the real
 * clock f_ref with factor F = f_ref / f >= 1: around each op the calling
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID, user + system) is measured, and
 * right after the call the thread spins until it has burnt an extra (F - 1)
 * times that CPU time. CPU phases of the op stretch by F; time the thread spends
 * blocked (device I/O, waiting for a journal commit, a barrier) does not, which
 * is what lowering the clock does to a CPU-bound phase. It does not model memory
 * or cache speed staying the same at a lower clock, kernel threads (jbd2) that
 * run on the thread's behalf, or contention from the spinning itself.
 *
 * Use:  abt_span s; abt_span_begin(&s, F); <call>; t_end = abt_span_end(&s, F);
 * With F == 1 no CPU clock is read, so the undilated path costs two clock reads.
 */
#ifndef ABT_DILATE_H
#define ABT_DILATE_H

#include <stdint.h>
#include <time.h>

#include "abt_trace.h"

typedef struct {
    uint64_t t_start_ns; /* CLOCK_MONOTONIC at the start of the op */
    uint64_t cpu0_ns;    /* thread CPU time at the start (dilated runs only) */
} abt_span;

static inline uint64_t abt_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void abt_span_begin(abt_span *s, double factor)
{
    s->t_start_ns = abt_now_ns();
    s->cpu0_ns = factor > 1.0 ? abt_thread_cpu_ns() : 0;
}

/* Spin until the thread has consumed (factor - 1) x the CPU time used since
 * cpu0_ns; the spin reads the same clock it is meeting, so it needs no
 * calibration and overshoots by at most one clock read. Returns the extra ns. */
static inline uint64_t abt_dilate_since(uint64_t cpu0_ns, double factor)
{
    if (factor <= 1.0) return 0;
    uint64_t now = abt_thread_cpu_ns();
    uint64_t extra = (uint64_t)((factor - 1.0) * (double)(now - cpu0_ns));
    uint64_t target = now + extra;
    while (abt_thread_cpu_ns() < target) {
    }
    return extra;
}

/* End of the op as the workload experiences it: after the dilation spin. */
static inline uint64_t abt_span_end(abt_span *s, double factor)
{
    abt_dilate_since(s->cpu0_ns, factor);
    return abt_now_ns();
}

/* Record flags for a span: ABT_F_DILATED when emulation is on. */
static inline uint16_t abt_span_flags(double factor)
{
    return factor > 1.0 ? (uint16_t)ABT_F_DILATED : 0;
}

#endif
