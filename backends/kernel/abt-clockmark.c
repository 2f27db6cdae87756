/* abt-clockmark N [GAP_US]: write N tracefs markers, each between two CLOCK_MONOTONIC
 * reads, GAP_US apart (default 0), and print "abtlab-clock-<pid>-<i> <before_ns> <after_ns>"
 * per marker. The host checks that each marker's trace time falls between them: op records
 * and tracefs share one clock. With a gap, markers cross the trace's buffer pages after an
 * idle CPU (python -m benchmarks.trace_pages). The marker file is tracefs's, or debugfs's on
 * kernels before tracefs (Linux 3.4.2). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    long gap_us = argc > 2 ? atol(argv[2]) : 0;
    int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
    if (fd < 0)
        fd = open("/sys/kernel/debug/tracing/trace_marker", O_WRONLY);
    if (fd < 0) {
        perror("trace_marker");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        char msg[64];
        int len = snprintf(msg, sizeof msg, "abtlab-clock-%d-%d", (int)getpid(), i);
        long long before = now_ns();
        if (write(fd, msg, len) != len) {
            perror("write trace_marker");
            return 1;
        }
        long long after = now_ns();
        printf("%s %lld %lld\n", msg, before, after);
        if (gap_us > 0) {
            struct timespec gap = {gap_us / 1000000, gap_us % 1000000 * 1000};
            nanosleep(&gap, NULL);
        }
    }
    close(fd);
    return 0;
}
