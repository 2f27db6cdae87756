"""abtlab.sim.aot: the kernel compiled ahead of time gives numba's JIT's results to the bit,
releases the GIL, loads without numba, and falls back to the JIT, saying why, when it
cannot be built."""
import os
import subprocess
import sys
import threading
from functools import partial

import numpy as np
import pytest

from abtlab.sim import aot, core, params

pytest.importorskip("numba")

# the kernel's branches: the barrier and IOzone's polled start, the journal thread on the
# cores, each policy, one core and four
CASES = {"barrier ext4 4 cores": dict(threads=32),
         "poll start": dict(threads=32, start="poll"),
         "journal thread's CPU, 1 core": dict(threads=16, cores=1, commit_cpu_us=40.0),
         "delayjc": dict(threads=32, policy="delayjc:window=16ms"),
         "nojc": dict(threads=32, policy="nojc"),
         "commit data, gamma draws": dict(threads=24, data_flush="commit", cpu_dist="gamma",
                                         dev_dist="gamma"),
         "metarates, 1 core": dict(workload="metarates", threads=8, files=4, cores=1)}


@pytest.fixture(scope="module")
def compiled():
    """The compiled kernel of these sources (built as `make setup` builds it; waits for a
    build another process runs)."""
    try:
        aot.build(if_absent=True)
    except RuntimeError as e:        # no C compiler or cache: the JIT is all there is here
        pytest.skip(f"the ahead-of-time kernel cannot be built here: {e}")
    fn = aot.load(start_build=False)
    assert fn is not None
    return fn


@pytest.mark.parametrize("case", CASES)
def test_compiled_kernel_matches_the_jit_to_the_bit(compiled, monkeypatch, case):
    p = params.make(**CASES[case])
    seeds = np.arange(5) + 11
    monkeypatch.setenv("ABTLAB_SIM_AOT", "off")
    assert core.run_batch() is not None and aot.load() is None
    jit = core.run_raw(p, seeds, jobs=1)
    monkeypatch.delenv("ABTLAB_SIM_AOT")
    assert core.run_batch().func is aot.run_batch        # the compiled module this time
    ahead = core.run_raw(p, seeds, jobs=2)
    assert (jit[0][..., 1] > 0).all()                      # every op ended
    assert (jit[2] > 0).all() == (p.policy != "nojc")      # commits, but for NOJC
    for a, b in zip(jit, ahead):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def _runs_beside(call) -> bool:
    """Whether this thread runs Python while `call` runs in another. With a switch interval
    far longer than the call, the interpreter never takes the GIL from the other thread:
    this one gets it only if `call` gives it up, and then sees `call` still inside."""
    inside = [False]

    def other():
        inside[0] = True
        call()
        inside[0] = False
    interval = sys.getswitchinterval()
    sys.setswitchinterval(600.0)
    try:
        t = threading.Thread(target=other)
        t.start()                  # returns once `other` has started; it keeps the GIL
        seen = inside[0]           # runs only when `other` has let the GIL go
        t.join()
    finally:
        sys.setswitchinterval(interval)
    return seen


def test_compiled_kernel_releases_the_gil(compiled, monkeypatch):
    """While the compiled call runs in one thread, this one runs Python; a call of about
    the same length that holds the GIL (sorted(), the control) keeps it from running.
    Ordering, not speed: no count or time is compared."""
    kernel = core.run_batch()
    assert kernel.func is aot.run_batch
    floats = list(np.random.default_rng(0).random(400_000))
    assert not _runs_beside(lambda: sorted(floats))
    state = []

    def marked(*args):             # after aot.run_batch's array copies: the compiled call alone
        state.append(_runs_beside(lambda: kernel.args[0](*args)))
    monkeypatch.setattr(core, "run_batch", lambda: partial(aot.run_batch, marked))
    core.run_raw(params.make(threads=256), np.arange(200), jobs=1)
    assert state == [True]


def test_a_new_process_runs_the_compiled_kernel_without_numba(compiled):
    code = ("import sys; from abtlab.sim import core, params; "
            "core.run_reps(params.make(threads=8), [0, 1]); "
            "print(sorted(m for m in ('numba', 'llvmlite', 'scipy') if m in sys.modules))")
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == "[]"


def test_key_follows_the_sources(tmp_path, monkeypatch):
    for name in aot.SOURCES + ("aot.py",):
        (tmp_path / name).write_bytes((aot.HERE / name).read_bytes())
    aot.key.cache_clear()
    monkeypatch.setattr(aot, "HERE", tmp_path)
    before = aot.key()
    (tmp_path / "journal.py").write_text((tmp_path / "journal.py").read_text() + "\n# changed\n")
    aot.key.cache_clear()
    after = aot.key()
    monkeypatch.undo()
    aot.key.cache_clear()
    assert before != after and len(after) == 20
    assert aot.module_path(after).name.startswith(f"abtlab_sim_kernel_{after}.")


def test_a_failed_build_says_why_and_the_jit_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(aot, "folder", lambda: tmp_path)
    monkeypatch.setattr(aot, "_loaded", {})
    monkeypatch.setattr(aot, "_warned", set())

    def no_compiler(k, dest):
        raise FileNotFoundError("[Errno 2] No such file or directory: 'gcc'")
    monkeypatch.setattr(aot, "_compile", no_compiler)
    with pytest.raises(RuntimeError, match="failed: FileNotFoundError.*gcc"):
        aot.build()
    assert aot.status().startswith("failed: FileNotFoundError")
    assert aot.load() is None and aot.load() is None
    err = capsys.readouterr().err
    assert err.count("could not be built") == 1 and "gcc" in err and "numba's JIT" in err
    monkeypatch.setattr(aot, "_loaded", {})                   # as a later process: told once
    monkeypatch.setattr(aot, "_warned", set())
    assert aot.load() is None and capsys.readouterr().err == ""
    assert not list(tmp_path.glob("*.lock"))                    # no build started or left
    out = core.run_raw(params.make(threads=4), [0])
    assert out[2][0] > 0


def test_the_build_command_refuses_unknown_arguments(capsys):
    assert aot.main(["bild"]) == 2
    assert "build [--if-absent] | status" in capsys.readouterr().err


def test_a_damaged_module_says_so_and_the_jit_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(aot, "folder", lambda: tmp_path)
    monkeypatch.setattr(aot, "_loaded", {})
    monkeypatch.setattr(aot, "_warned", set())
    aot.module_path().write_bytes(b"not an ELF file")
    assert aot.load() is None
    assert "does not load" in capsys.readouterr().err
    assert core.run_raw(params.make(threads=4), [0])[2][0] > 0


def test_numba_disable_jit_runs_plain_python(monkeypatch, tmp_path):
    """NUMBA_DISABLE_JIT (as the wheel's test sets) neither loads nor builds a module."""
    monkeypatch.setattr(aot, "folder", lambda: tmp_path)
    monkeypatch.setattr(aot, "_loaded", {})
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    assert aot.load() is None and not list(tmp_path.iterdir())


def test_a_build_keeps_the_newest_modules_only(tmp_path, monkeypatch):
    monkeypatch.setattr(aot, "folder", lambda: tmp_path)
    monkeypatch.setattr(aot, "_compile", lambda k, dest: dest.write_bytes(b"built"))
    for i in range(6):                                  # older builds, oldest first
        f = aot.module_path(f"{i:020d}")
        f.write_bytes(b"old")
        os.utime(f, (1000 + i, 1000 + i))
    dest = aot.build()
    left = sorted(f.name for f in tmp_path.glob("abtlab_sim_kernel_*"))
    assert dest.name in left and len(left) == aot.KEEP
    newest, older = aot.module_path(f"{5:020d}").name, aot.module_path(f"{2:020d}").name
    assert newest in left and older not in left
