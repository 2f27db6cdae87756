"""libabtrace.so: every call of threads and forked children, bounded buffers, errno kept.

The traced programs are small C and Python programs whose I/O counts the tests
control: each uses write sizes no other code in the process uses, so the
assertions count exactly the calls the program made."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from abtlab.trace import readers
from abtlab import trace
from abtlab.errors import ConfigError, TraceError
from abtlab.trace import Flag, Op

NATIVE = Path(__file__).resolve().parents[2] / "backends"
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

THREADS_C = r"""
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *dir;
static void *worker(void *arg) {
    long i = (long)arg; char path[512], buf[8192]; memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/t%ld", dir, i);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int k = 0; k < 100 + (int)i; k++) write(fd, buf, 1000 + i);   /* thread i: 100+i x (1000+i) B */
    fsync(fd); close(fd); return NULL;
}
int main(int argc, char **argv) {
    dir = argv[1]; pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
"""

FORK_C = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[4096] = {0}, path[512];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    int fd = creat(path, 0644);
    for (int k = 0; k < 10; k++) write(fd, buf, 1111);                  /* parent before fork */
    pid_t a = fork();
    if (a == 0) { for (int k = 0; k < 20; k++) write(fd, buf, 2222); exit(0); }
    pid_t b = fork();
    if (b == 0) { for (int k = 0; k < 30; k++) pwrite(fd, buf, 3333, 0); _exit(0); }
    waitpid(a, NULL, 0); waitpid(b, NULL, 0);
    for (int k = 0; k < 5; k++) write(fd, buf, 1111);                   /* parent after */
    if (write(-1, buf, 1) != -1 || errno != EBADF) return 3;            /* errno kept */
    char rb[64];
    if (read(fd, rb, sizeof rb) != -1 || errno != EBADF) return 4;      /* O_WRONLY fd */
    close(fd);
    return 0;
}
"""

FORTIFY_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {   /* size known only at run time: the compiler checks via __read_chk */
    char b[100]; int fd = open(argv[1], O_RDONLY);
    ssize_t n = read(fd, b, (size_t)atoi(argv[2])); close(fd); return n == 77 ? 0 : 1;
}
"""


@pytest.fixture(scope="module")
def lib():
    subprocess.run(["make", "-s", "-C", str(NATIVE), "trace/libabtrace.so"], check=True)
    return NATIVE / "trace" / "libabtrace.so"


def build(tmp_path, name, src, *flags):
    c = tmp_path / f"{name}.c"
    c.write_text(src)
    exe = tmp_path / name
    subprocess.run(["gcc", "-O2", *flags, "-pthread", "-o", str(exe), str(c)], check=True)
    return exe


def traced(lib, tdir, argv, **env):
    tdir.mkdir(exist_ok=True)
    e = dict(os.environ, LD_PRELOAD=str(lib), ABT_TRACE_DIR=str(tdir), **env)
    return subprocess.run([str(a) for a in argv], env=e, capture_output=True, text=True)


def test_threads_each_call_in_its_own_tid(lib, tmp_path):
    exe = build(tmp_path, "threads", THREADS_C)
    p = traced(lib, tmp_path / "tr", [exe, tmp_path])
    assert p.returncode == 0, p.stderr
    r = readers.read_trace_dir(tmp_path / "tr")
    assert np.unique(r["pid"]).size == 1                                 # one process
    w = r[r["op"] == Op.WRITE]
    for i in range(4):
        mine = w[w["bytes"] == 1000 + i]
        assert mine.size == 100 + i
        assert np.unique(mine["tid"]).size == 1                          # one thread wrote them
    assert np.unique(w["tid"]).size == 4
    assert np.count_nonzero(r["op"] == Op.FSYNC) == 4
    opens = r[(r["op"] == Op.OPEN) & (r["flags"] & Flag.CREAT > 0)]
    assert opens.size == 4
    assert np.all(r["t_end_ns"] >= r["t_start_ns"])


def test_fork_children_write_their_own_files(lib, tmp_path):
    exe = build(tmp_path, "forker", FORK_C)
    p = traced(lib, tmp_path / "tr", [exe, tmp_path])
    assert p.returncode == 0, f"rc {p.returncode} (3/4: errno not kept) {p.stderr}"
    files = sorted((tmp_path / "tr").glob("abtrace.*.trace"))
    assert len(files) == 3                                               # parent + 2 children
    by_pid = {int(f.name.split(".")[1]): trace.read(f) for f in files}
    parent = next(pid for pid, r in by_pid.items() if np.any(r["bytes"] == 1111))
    pr = by_pid.pop(parent)
    assert np.count_nonzero(pr["bytes"] == 1111) == 15
    creat = pr[pr["op"] == Op.OPEN]
    assert creat.size == 1 and creat["flags"][0] & Flag.CREAT
    errs = pr[(pr["flags"] & Flag.ERROR) > 0]
    assert sorted(errs["bytes"]) == [9, 9]                                # EBADF, twice
    kids = sorted(by_pid.values(), key=lambda r: int(r["bytes"].max()))
    assert kids[0].size == 20 and set(kids[0]["bytes"]) == {2222}          # exit(): only its own calls
    assert kids[1].size == 30 and set(kids[1]["op"]) == {Op.PWRITE}        # _exit() flushes too
    for pid, r in by_pid.items():
        assert set(r["pid"]) == {pid}


def test_python_threads_and_fork(lib, tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import os, threading
        fd = os.open({str(tmp_path / 'out')!r}, os.O_WRONLY | os.O_CREAT, 0o644)
        def work(n, size):
            for _ in range(n):
                os.write(fd, b"y" * size)
        ts = [threading.Thread(target=work, args=(40, 3001 + i)) for i in range(3)]
        [t.start() for t in ts]; [t.join() for t in ts]
        pid = os.fork()
        if pid == 0:
            work(25, 3999)
            os._exit(0)
        os.waitpid(pid, 0)
    """))
    p = traced(lib, tmp_path / "tr", [sys.executable, script])
    assert p.returncode == 0, p.stderr
    r = readers.read_trace_dir(tmp_path / "tr")
    for i in range(3):
        mine = r[(r["op"] == Op.WRITE) & (r["bytes"] == 3001 + i)]
        assert mine.size == 40 and np.unique(mine["tid"]).size == 1
    child = r[r["bytes"] == 3999]
    assert child.size == 25 and np.unique(child["pid"]).size == 1
    assert child["pid"][0] != r[r["bytes"] == 3001]["pid"][0]


def test_buffer_limit_counts_drops_and_says_so_once(lib, tmp_path):
    exe = build(tmp_path, "forker", FORK_C)
    p = traced(lib, tmp_path / "tr", [exe, tmp_path], ABT_TRACE_MAX_RECORDS="8")
    assert p.returncode == 0
    assert p.stderr.count("buffer full at ABT_TRACE_MAX_RECORDS=8") == 3   # one per process
    dropped = readers.dropped_counts(tmp_path / "tr")
    r = readers.read_trace_dir(tmp_path / "tr")
    per = {pid: int(np.count_nonzero(r["pid"] == pid)) for pid in np.unique(r["pid"])}
    assert all(n == 8 for n in per.values())
    # parent: creat + 15 writes + 2 failed calls + close = 19 calls; children 20 and 30
    assert sorted(dropped.values()) == sorted([19 - 8, 20 - 8, 30 - 8])


@pytest.mark.parametrize("value", ["lots", "", "0", "4294967297", "8k"])
def test_bad_max_records_refuses_to_run_naming_the_variable(lib, tmp_path, value):
    exe = build(tmp_path, "forker", FORK_C)
    p = traced(lib, tmp_path / "tr", [exe, tmp_path], ABT_TRACE_MAX_RECORDS=value)
    assert p.returncode == 2
    assert p.stderr.startswith(f"libabtrace: ABT_TRACE_MAX_RECORDS: given '{value}'; accepted: ")
    assert p.stderr.count("\n") == 1
    assert not (tmp_path / "f").exists(), "the program ran"
    assert not list((tmp_path / "tr").iterdir()), "a trace was written"


def test_max_records_at_its_bounds_is_accepted(lib, tmp_path):
    exe = build(tmp_path, "forker", FORK_C)
    for value, size in (("1", 3), ("20", 19 + 20 + 20)):
        shutil.rmtree(tmp_path / "tr", ignore_errors=True)
        p = traced(lib, tmp_path / "tr", [exe, tmp_path], ABT_TRACE_MAX_RECORDS=value)
        assert p.returncode == 0, p.stderr
        assert readers.read_trace_dir(tmp_path / "tr").size == size


def test_fortified_read_is_recorded(lib, tmp_path):
    exe = build(tmp_path, "fort", FORTIFY_C, "-D_FORTIFY_SOURCE=2")
    assert "__read_chk" in subprocess.run(["nm", "-D", str(exe)], capture_output=True, text=True).stdout
    data = tmp_path / "data"
    data.write_bytes(b"z" * 100)
    p = traced(lib, tmp_path / "tr", [exe, data, 77])
    assert p.returncode == 0
    r = readers.read_trace_dir(tmp_path / "tr")
    assert np.count_nonzero((r["op"] == Op.READ) & (r["bytes"] == 77)) == 1


def test_record_api_and_cli(lib, tmp_path):
    from abtlab.cli import main
    from abtlab.trace.recorder import record
    exe = build(tmp_path, "forker", FORK_C)
    rec = record([exe, tmp_path], out=tmp_path)
    assert rec.returncode == 0 and rec.processes == 3 and rec.records.size == 69
    assert trace.read(tmp_path / "abtrace.trace").size == 69
    assert main(["trace", "--out", str(tmp_path / "c.trace"), "--", "sh", "-c", "exit 3"]) == 3
    trace.read(tmp_path / "c.trace")                                         # a valid trace
    with pytest.raises(ConfigError):
        record(["/nonexistent/program"])
    with pytest.raises(ConfigError):
        record([exe, tmp_path], max_records=0)


def test_static_program_gives_clear_error(lib, tmp_path):
    exe = tmp_path / "static"
    c = tmp_path / "static.c"
    c.write_text("int main(void){return 0;}\n")
    if subprocess.run(["gcc", "-static", "-o", str(exe), str(c)], capture_output=True).returncode:
        pytest.skip("no static libc to link a static program")
    from abtlab.trace.recorder import record
    with pytest.raises(TraceError, match="statically linked"):
        record([exe])
