/*
 * abt-start - the `abtlab` command: Python with SIGINT and SIGTERM blocked until abtlab's
 * handlers exist.
 *
 * A Ctrl-C during the interpreter's own start-up (site, encodings, importlib) or before
 * abtlab's first statement printed Python's traceback, and no Python code can run that
 * early. So this blocks both signals, then execs `PYTHON -P -m abtlab ARGS...` (a blocked
 * mask survives execve); abtlab/__init__.py installs its handlers and unblocks them, and a
 * signal that came meanwhile is delivered then: one line and 128 + the signal.
 *
 * ABTLAB_START_BLOCKED=PID:SIGNALS says which signals this blocked (those the caller had
 * not blocked already) in which process; abtlab unblocks those only, in that process only,
 * and removes the variable, so the processes it starts begin with the caller's mask.
 * PYTHON: python3 (or python) beside this program's real path, as in a virtual
 * environment's bin/; else ABT_PYTHON, the interpreter it was built for (setup.py).
 * -P: sys.path does not start with the working folder (a console script's does not either).
 *
 * Exit: that of abtlab; 127 when no interpreter could be started (one line says why).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ABT_PYTHON
#define ABT_PYTHON ""
#endif

#define PROG "abtlab"
#define NOTE "ABTLAB_START_BLOCKED"

static const int held[] = {SIGINT, SIGTERM};

/* Block what is not blocked yet; say which in NOTE (unset when none was). */
static void block(void)
{
    sigset_t set, old;
    char note[64];
    int n;

    sigemptyset(&set);
    for (size_t i = 0; i < sizeof held / sizeof *held; i++)
        sigaddset(&set, held[i]);
    sigprocmask(SIG_BLOCK, &set, &old);
    n = snprintf(note, sizeof note, "%ld:", (long)getpid());
    for (size_t i = 0; i < sizeof held / sizeof *held; i++)
        if (!sigismember(&old, held[i]))
            n += snprintf(note + n, sizeof note - n, "%s%d", note[n - 1] == ':' ? "" : ",", held[i]);
    if (note[n - 1] == ':')
        unsetenv(NOTE);
    else
        setenv(NOTE, note, 1);
}

/* python3 or python in the folder of this program's real path, into buf; else ABT_PYTHON. */
static const char *python(char *buf, size_t size)
{
    static const char *names[] = {"python3", "python"};
    ssize_t len = readlink("/proc/self/exe", buf, size - 1);
    char *slash;

    if (len > 0) {
        buf[len] = '\0';
        if ((slash = strrchr(buf, '/')) != NULL) {
            for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
                if ((size_t)(slash + 1 - buf) + strlen(names[i]) >= size)
                    break;
                strcpy(slash + 1, names[i]);
                if (access(buf, X_OK) == 0)
                    return buf;
            }
        }
    }
    return ABT_PYTHON[0] ? ABT_PYTHON : NULL;
}

int main(int argc, char **argv)
{
    char buf[PATH_MAX];
    const char *py;
    char **args;

    block();
    if ((py = python(buf, sizeof buf)) == NULL) {
        fprintf(stderr, "%s: no Python beside %s, and none was named at build time: "
                "reinstall abtlab (pip install .)\n", PROG, argv[0]);
        return 127;
    }
    if ((args = calloc((size_t)argc + 4, sizeof *args)) == NULL) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return 127;
    }
    args[0] = (char *)py;
    args[1] = "-P";
    args[2] = "-m";
    args[3] = "abtlab";
    for (int i = 1; i < argc; i++)
        args[i + 3] = argv[i];
    execv(py, args);
    fprintf(stderr, "%s: cannot start %s: %s\n", PROG, py, strerror(errno));
    return 127;
}
