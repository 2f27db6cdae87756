/*
 * abt_preload.h - what the LD_PRELOAD libraries (libdelayjc, libabtrace, libsera)
 * share: the real functions behind their hooks, fork handling, and reading their
 * environment. Define ABT_PRELOAD_NAME (e.g. "libdelayjc") before including it.
 *
 * One rule for bad input: a variable set to something not accepted refuses to run,
 * with one line on stderr naming the variable, what was given and what is accepted,
 * and exit status 2, so no run is measured with a setting other than the one asked
 * for. Messages and the exit go straight to the kernel: they happen in constructors
 * and hooks, where stdio or the library's own hooked write/_exit would re-enter it.
 */
#ifndef ABT_PRELOAD_H
#define ABT_PRELOAD_H

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef ABT_PRELOAD_NAME
#error "define ABT_PRELOAD_NAME before including abt_preload.h"
#endif

#define ABT_EXIT_REFUSED 2

/* One line to stderr with the raw write syscall (safe in hooks and signal handlers
 * as far as vsnprintf is). */
__attribute__((format(printf, 1, 2))) static inline void abt_say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    if (n > 0) syscall(SYS_write, 2, line, (size_t)n);
}

/* "NAME: VAR: given 'X'; accepted: ... Refusing to run." then exit 2, no atexit. */
_Noreturn static inline void abt_refuse(const char *var, const char *given, const char *accepted)
{
    abt_say("%s: %s: given '%s'; accepted: %s. Refusing to run.\n", ABT_PRELOAD_NAME, var,
            given ? given : "(unset)", accepted);
    syscall(SYS_exit_group, ABT_EXIT_REFUSED);
    __builtin_unreachable();
}

/* ---- the real functions ---------------------------------------------------- */

/* The next definition of name after this library (dlsym RTLD_NEXT); none aborts. */
static inline void *abt_real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        abt_say("%s: cannot resolve %s in the libraries after it; aborting\n",
                ABT_PRELOAD_NAME, name);
        abort();
    }
    return f;
}

/* In a hook: declare real_NAME of type TYPE, resolved on first use (a hook can run
 * before the library's constructor, from another library's). */
#define ABT_REAL(type, name) \
    static __typeof__(type) real_##name; \
    if (!__atomic_load_n(&real_##name, __ATOMIC_RELAXED)) \
        __atomic_store_n(&real_##name, (type)abt_real(#name), __ATOMIC_RELAXED)

/* ---- fork -------------------------------------------------------------------- */

static pthread_mutex_t *abt_fork_mu;
static void (*abt_fork_reset)(void);

static inline void abt_fork_prepare(void) { if (abt_fork_mu) pthread_mutex_lock(abt_fork_mu); }
static inline void abt_fork_parent(void) { if (abt_fork_mu) pthread_mutex_unlock(abt_fork_mu); }

static inline void abt_fork_child(void)
{
    if (abt_fork_mu) pthread_mutex_init(abt_fork_mu, NULL);
    if (abt_fork_reset) abt_fork_reset();
}

/* Around fork: the library's lock mu (NULL: its state is lock-free) is held across
 * fork, so the child copies whole state, and made new in the child (the one thread
 * there owns nothing); then child_reset drops what belongs to the parent (its
 * records, its batches) and restarts what did not survive (threads). */
static inline void abt_on_fork(pthread_mutex_t *mu, void (*child_reset)(void))
{
    abt_fork_mu = mu;
    abt_fork_reset = child_reset;
    pthread_atfork(abt_fork_prepare, abt_fork_parent, abt_fork_child);
}

/* ---- the environment ---------------------------------------------------------- */

/* s (the value of var) as a whole decimal integer in [lo, hi]; anything else refuses. */
static inline long long abt_env_parse_int(const char *var, const char *s, long long lo,
                                          long long hi, const char *accepted)
{
    char *end = NULL;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || errno || *end || v < lo || v > hi) abt_refuse(var, s, accepted);
    return v;
}

/* A required integer variable. */
static inline long long abt_env_int(const char *var, long long lo, long long hi,
                                    const char *accepted)
{
    return abt_env_parse_int(var, getenv(var), lo, hi, accepted);
}

/* An optional integer variable: unset gives dflt; set, it must be good. */
static inline long long abt_env_int_or(const char *var, long long dflt, long long lo,
                                       long long hi, const char *accepted)
{
    const char *s = getenv(var);
    return s ? abt_env_parse_int(var, s, lo, hi, accepted) : dflt;
}

/* The index of var's value in choices (NULL-terminated); unset gives dflt, or
 * refuses when dflt < 0 (required). */
static inline int abt_env_choice(const char *var, const char *const *choices, int dflt,
                                 const char *accepted)
{
    const char *s = getenv(var);
    if (!s && dflt >= 0) return dflt;
    for (int i = 0; s && choices[i]; i++)
        if (!strcmp(s, choices[i])) return i;
    abt_refuse(var, s, accepted);
}

#endif
