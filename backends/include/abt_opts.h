/*
 * abt_opts.h - argument checks shared by the abtlab workload programs.
 *
 * The programs' one convention: results go to stdout as "key: value" lines; the exit
 * code is 0 (done), 1 (the run failed), 2 (a bad argument: exactly one line on stderr
 * that names the option and what is accepted, so the Python side turns it into a
 * ConfigError without guessing; abtlab/machines/programs.py) or 3 (this filesystem
 * cannot run it).
 */
#ifndef ABT_OPTS_H
#define ABT_OPTS_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define ABT_EXIT_FAILED 1
#define ABT_EXIT_USAGE 2
#define ABT_EXIT_UNAVAILABLE 3

/* "PROG: --opt: given 'X'; accepted: ..." then exit 2. */
_Noreturn static inline void abt_bad_arg(const char *prog, const char *opt, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: %s: ", prog, opt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(ABT_EXIT_USAGE);
}

/* getopt_long with optstring ":" and opterr = 0 returned ':' (missing value) or
 * anything unknown: name the option as given; help says where the options are. */
_Noreturn static inline void abt_bad_option(const char *prog, int c, char **argv,
                                            const char *help)
{
    abt_bad_arg(prog, argv[optind - 1], "%s; accepted: %s",
                c == ':' ? "missing value" : "unknown option", help);
}

/* Operands are refused: every program takes options only. */
static inline void abt_no_operands(const char *prog, int argc, char **argv)
{
    if (optind < argc)
        abt_bad_arg(prog, argv[optind], "unexpected argument; accepted: options only");
}

/* A whole decimal integer in [lo, hi]. */
static inline long abt_parse_long(const char *prog, const char *opt, const char *s,
                                  long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        abt_bad_arg(prog, opt, "given '%s'; accepted: an integer from %ld to %ld", s, lo, hi);
    return v;
}

/* A byte count with an optional k/m/g suffix (powers of 1024), in [lo, hi]. */
static inline uint64_t abt_parse_size(const char *prog, const char *opt, const char *s,
                                      uint64_t lo, uint64_t hi)
{
    char *end;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    int ok = errno == 0 && s[0] >= '0' && s[0] <= '9';
    unsigned shift = 0;
    if (ok && *end) {
        const char *suf = "kmg", *p = strchr(suf, end[0] | 0x20);
        ok = p && end[0] && end[1] == '\0';
        shift = ok ? 10u * (unsigned)(p - suf + 1) : 0;
    }
    if (ok && v > (ULLONG_MAX >> shift)) ok = 0;
    v <<= shift;
    if (!ok || v < lo || v > hi)
        abt_bad_arg(prog, opt, "given '%s'; accepted: %llu to %llu bytes, "
                    "optional suffix k, m or g (powers of 1024)", s,
                    (unsigned long long)lo, (unsigned long long)hi);
    return v;
}

/* The emulated-frequency factor f_ref/f: a finite number in [1, hi]. */
static inline double abt_parse_dilate(const char *prog, const char *opt, const char *s,
                                      double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v) || v < 1.0 || v > hi)
        abt_bad_arg(prog, opt, "given '%s'; accepted: a number from 1.0 to %g "
                    "(f_ref/f, 1.0 = no dilation)", s, hi);
    return v;
}

/* Check up front that files can be created in dir (as root, access() says yes
 * to nearly everything, so create and remove a probe file). extra_flags lets a
 * caller probe O_DIRECT support too. */
static inline void abt_check_dir(const char *prog, const char *opt, const char *dir,
                                 int extra_flags, const char *what)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/.%s-probe.%ld", dir, prog, (long)getpid())
        >= (int)sizeof path)
        abt_bad_arg(prog, opt, "given '%s'; accepted: a path shorter than %d bytes",
                    dir, PATH_MAX - 64);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | extra_flags, 0644);
    if (fd < 0) {
        int e = errno;
        unlink(path);
        abt_bad_arg(prog, opt, "given '%s': cannot create files there (%s); accepted: %s",
                    dir, strerror(e), what);
    }
    close(fd);
    unlink(path);
}

#endif
