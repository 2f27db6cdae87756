"""Every bad input is refused before anything touches the machine, naming the option the
user typed and what is accepted."""
from __future__ import annotations

import re

import pytest

from abtlab.sweep import loop as sweep
from abtlab.cli import main
from abtlab.errors import ConfigError
from abtlab.sweep.spec import parse_spec



@pytest.fixture
def nothing_runs(monkeypatch):
    ran = []
    monkeypatch.setattr(sweep, "_sweep", lambda *a, **k: ran.append(a))
    return ran


@pytest.mark.root          # iozone runs here (conftest: root, loop devices; built_native)
@pytest.mark.parametrize("args, message", [
    (["--threads", "5000"], "--threads: got '5000'; accepted: .*<= 4096"),
    (["--threads", "64", "--file-size", "100g"], "--file-size: .*at most 21760 MiB"),
    (["--freq", "real:9.9"], "--freq: got 'real:9.9'"),
    (["--freq", "emulated:1.6,fast"], "--freq: got 'emulated:1.6,fast'"),
    (["-o", "fsync=maybe"], "fsync: got 'maybe'; accepted: true or false"),
    (["--reps", "0"], "--reps: got 0"),
])
def test_run_options_are_refused_naming_the_option(tmp_path, capsys, nothing_runs, built_native,
                                                   args, message):
    out = tmp_path / "r.nc"
    assert main(["run", "iozone", *args, "--out", str(out), "--quiet"]) == 2
    assert nothing_runs == []
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(f"abtlab run: error: {message}", err), err
    assert not out.exists()


@pytest.mark.parametrize("toml, field", [
    ('backend = "sim"\n', "factors"),
    ('backend = "sim"\n[factors]\n', "factors"),
    ('backend = "sim"\n[factors]\nthreads = [4]\n[options]\nfsync = "maybe"\n', "options.fsync"),
    ('backend = "sim"\n[factors]\nthreads = [4]\n[options]\nfsync = "false"\n', "options.fsync"),
])
def test_spec_errors_name_the_toml_key(toml, field):
    import tomllib
    with pytest.raises(ConfigError) as exc:
        parse_spec(tomllib.loads(toml))
    assert exc.value.field == field


def test_a_toml_boolean_is_kept_as_a_boolean():
    import tomllib
    spec = parse_spec(tomllib.loads('backend = "sim"\n[factors]\nthreads = [4]\n'
                                    '[options]\nfsync = false\n'))
    assert spec.options == {"fsync": False}


def test_python_callers_get_the_same_checks(nothing_runs):
    with pytest.raises(ConfigError, match="^fsync: "):
        sweep.run("sim", {"threads": [4]}, options={"fsync": "false"}, quiet=True)
    with pytest.raises(ConfigError, match="^factors: "):
        sweep.run("sim", {}, quiet=True)
    assert nothing_runs == []


def test_a_frequency_mode_error_names_freq(tmp_path, capsys, monkeypatch):
    """The guest refuses an emulated frequency as freq_mode; the user typed --freq."""
    from abtlab.sweep import runner

    def guest_refuses(*a, **k):
        raise ConfigError("freq_mode", "emulated", "native in the guest (TCG has no P-states)")
    monkeypatch.setattr(runner, "run", guest_refuses)
    assert main(["run", "iozone", "--freq", "emulated:1.6", "--out", str(tmp_path / "r.nc")]) == 2
    err = capsys.readouterr().err
    assert "--freq: got 'emulated'" in err and "freq_mode" not in err, err


# -- signals: one line and 128 + the first signal's number, from the first line to exit --
_EARLY = """
import os, signal, sys
import abtlab.cli as cli
real = cli.build_parser
def parser(*command):            # before the command is even parsed
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    return real(*command)
cli.build_parser = parser
sys.exit(cli.main(["run", "sim", "--threads", "4", "--reps", "1", "--out", sys.argv[2]]))
"""

_TWICE = """
import argparse, atexit, builtins, os, signal, sys, time
import abtlab.cli as cli
def probe(args):
    os.kill(os.getpid(), signal.SIGINT)         # Ctrl-C while the command runs
    time.sleep(10)
def parser(*command):
    p = argparse.ArgumentParser(prog="abtlab")
    p.add_subparsers(dest="command").add_parser("probe").set_defaults(func=probe)
    return p
cli.build_parser = parser
real_print = builtins.print
def print_(*a, **k):                            # a second one after the teardown
    os.kill(os.getpid(), signal.SIGTERM)
    real_print(*a, **k)
builtins.print = print_
atexit.register(os.kill, os.getpid(), signal.SIGTERM)    # and one more at exit
sys.exit(cli.main(["probe"]))
"""


def _child(code, *args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_the_command_line_does_not_load_numpy_before_its_signal_handlers():
    """`import abtlab.cli` stays light: a signal in the first ~0.3 s (numpy's import)
    would otherwise meet Python's own handling (a traceback, or a silent SIGTERM)."""
    cp = _child("import sys, abtlab.cli; print([m for m in ('numpy', 'xarray') if m in sys.modules])")
    assert cp.stdout.strip() == "[]", cp.stderr


_BLAS = """
import os, sys
import abtlab.cli as cli
seen = {}
def probe(args):
    import numpy   # loaded by main already: what OpenBLAS read at its load is gone again
    seen["env"] = os.environ.get("OPENBLAS_NUM_THREADS")
    seen["numpy"] = "numpy" in sys.modules
    try:                       # what OpenBLAS itself runs with, where threadpoolctl is
        import threadpoolctl
        seen["blas"] = [i["num_threads"] for i in threadpoolctl.threadpool_info()
                        if i["internal_api"] == "openblas"][:1]
    except ImportError:
        seen["blas"] = []
def parser(*command):
    import argparse
    seen["early"] = "numpy" in sys.modules
    p = argparse.ArgumentParser(prog="abtlab")
    p.add_subparsers(dest="command").add_parser("probe").set_defaults(func=probe)
    return p
cli.build_parser = parser
sys.argv = ["abtlab", "probe"]
code = cli.main()
print(seen["early"], seen["env"], seen["numpy"], *seen["blas"])
sys.exit(code)
"""


@pytest.mark.parametrize("user", [None, "3"])
def test_the_command_line_loads_numpy_with_one_blas_thread_and_leaves_the_rest(monkeypatch, user):
    """A command's process loads numpy with OPENBLAS_NUM_THREADS=1 and removes it again
    (children get BLAS's default); a user's own setting is left as it is."""
    if user is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", user)
    for k in ("MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(k, raising=False)
    cp = _child(_BLAS)
    assert cp.returncode == 0, cp.stderr
    early = "True" if user is None else "False"       # a user's setting: numpy left to the command
    words = cp.stdout.split()
    assert words[:3] == [early, str(user), "True"]
    # OpenBLAS caps a user's count at the cores; [] without threadpoolctl
    import os
    assert words[3:] in ([], ["1" if user is None else str(min(int(user), os.cpu_count()))])


@pytest.mark.parametrize("sig, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_before_the_command_starts_gives_one_line(tmp_path, sig, code):
    cp = _child(_EARLY, sig, tmp_path / "r.nc")
    assert cp.returncode == code and cp.stderr == f"abtlab: interrupted by {sig}\n"
    assert list(tmp_path.iterdir()) == []


def test_signals_after_the_teardown_keep_the_first_ones_exit_code():
    cp = _child(_TWICE)
    assert cp.returncode == 130, cp.stderr
    assert cp.stderr == "abtlab probe: interrupted by SIGINT\n"


_LATE = """
import atexit, os, signal, sys, time
import abtlab.cli as cli
def late():                                     # the outcome decided, the process ending
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)
atexit.register(late)
sys.argv = ["abtlab", "--version"]
sys.exit(cli.main())
"""


def test_a_signal_during_shutdown_keeps_the_commands_exit_code():
    """The process's own command line (main() on sys.argv) ignores signals once its
    outcome is decided: a slow shutdown is not ended by SIGTERM; called with argv (from
    Python) it puts the caller's handlers back."""
    import signal
    cp = _child(_LATE)
    assert cp.returncode == 0 and cp.stdout.startswith("abtlab "), cp
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    assert main(["--version"]) == 0
    assert {s: signal.getsignal(s) for s in before} == before


_FINAL_WRITE = """
import sys, time
from abtlab.cli import main
from abtlab.data import netcdf
def slowed(real):
    def final(ds, path, *a, **k):
        done = real(ds, path, *a, **k)
        if ".tmp-" in str(path) and ".parts" not in str(path):     # the dataset, not a part
            print("writing", flush=True)
            time.sleep(60)
        return done
    return final
netcdf.write, netcdf.write_arrays = slowed(netcdf.write), slowed(netcdf.write_arrays)
sys.exit(main(sys.argv[1:]))
"""
# the same, for a sweep that keeps its parts from its first group (one past its first second)
_FINAL_WRITE_KEEPING = _FINAL_WRITE.replace("sys.exit(", "from abtlab.sweep import parts\n"
                                            "parts.KEEP_AFTER_S = 0.0\nsys.exit(")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_signal_during_the_final_write_leaves_no_torn_file(tmp_path, sig):
    """SIGTERM while the dataset is written beside --out: exit 143 and no `.x.nc.tmp-PID`,
    the finished runs kept as parts; after SIGKILL (to a sweep that kept its parts) the torn
    file stays until --resume, which writes each repetition once."""
    import signal
    import subprocess
    import sys

    from abtlab.data import store
    from abtlab.system.runlock import OutputLock
    out = tmp_path / "d" / "x.nc"
    out.parent.mkdir()
    cmd = ["run", "sim", "--threads", "4", "--freq", "1.6,3.3", "--reps", "2", "--quiet",
           "--out", str(out)]
    script = _FINAL_WRITE if sig == "SIGTERM" else _FINAL_WRITE_KEEPING
    p = subprocess.Popen([sys.executable, "-c", script, *cmd], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "writing"
    p.send_signal(getattr(signal, sig))
    err = p.communicate(timeout=60)[1]
    names = sorted(f.name for f in out.parent.iterdir())
    if sig == "SIGTERM":
        assert p.returncode == 143 and err == "abtlab run: interrupted by SIGTERM\n"
        assert names == ["x.nc.parts"]
    else:
        assert names == [store.temp_path(out, p.pid).name, "x.nc.parts"]
    assert main([*cmd, "--resume"]) == 0
    assert sorted(f.name for f in out.parent.iterdir()) == ["x.nc"]
    ds = store.load(out)
    assert ds.sizes["rep"] == 2 and len(set(ds.run_id.values.ravel())) == ds.run_id.size
    assert not OutputLock(out).path.exists()


def test_a_simulated_run_writes_and_summarises_without_xarray(tmp_path):
    """`abtlab run sim --out` never imports xarray, pandas, dask or scipy.special (about a
    second of a new process's start); the file it writes is the run dataset, and its
    summary the one of that dataset."""
    import subprocess
    import sys
    out = tmp_path / "s.nc"
    code = ("import sys; from abtlab.cli import main; "
            f"code = main(['run', 'sim', '--threads', '8', '--freq', '1.6,3.3', '--reps', '3', "
            f"'--quiet', '--out', {str(out)!r}]); "
            "print(sorted(m for m in ('xarray', 'pandas', 'dask', 'scipy.special') if m in sys.modules)); "
            "sys.exit(code)")
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.strip().splitlines()
    assert lines[-1] == "[]" and lines[-2] == f"wrote {out}: 2 points x 3 repetitions"
    assert "ratio [95% CI]" in cp.stdout
    from abtlab.data import store
    from abtlab.present.summary import summary_text
    ds = store.load(out)
    assert ds.attrs["freq_mode"] == "simulated" and ds.sizes["rep"] == 3
    assert cp.stdout.startswith(summary_text(ds) + "\n")     # from arrays as from the Dataset


def test_a_subcommands_parser_alone_parses_as_the_whole_one():
    """main() builds only the named subcommand's parser: same arguments, same defaults."""
    from abtlab.cli import build_parser
    argv = ["run", "sim", "--threads", "8,16", "--reps", "2", "--out", "x.nc"]
    one, whole = build_parser("run"), build_parser()
    assert vars(one.parse_args(argv)) == vars(whole.parse_args(argv))
    assert list(one._subparsers._group_actions[0].choices) == ["run"]
    assert "doctor" in whole._subparsers._group_actions[0].choices
    assert "doctor" in build_parser("no_such_command")._subparsers._group_actions[0].choices


# -- two signals: the exit code is the first one's, whatever Python runs first ----------
# a child's main: runs `probe` (defined above it) as the one subcommand of abtlab's cli
_PROBE_MAIN = """
def parser(*command):
    p = argparse.ArgumentParser(prog="abtlab")
    p.add_subparsers(dest="command").add_parser("probe").set_defaults(func=probe)
    return p
cli.build_parser = parser
sys.exit(cli.main(["probe"]))
"""

_ORDER = """
import argparse, os, signal, sys, threading, time
import abtlab.cli as cli
first, second = getattr(signal, sys.argv[1]), getattr(signal, sys.argv[2])
def probe(args):
    import numpy as np
    def send():             # both land while the main thread is inside one C call
        time.sleep(0.3)
        os.kill(os.getpid(), first)
        time.sleep(0.02)
        os.kill(os.getpid(), second)
    threading.Thread(target=send).start()
    a = np.random.default_rng(0).random((2500, 2500))
    t = time.monotonic()
    while time.monotonic() - t < 20:
        a @ a
""" + _PROBE_MAIN


@pytest.mark.parametrize("first, second, code", [("SIGTERM", "SIGINT", 143), ("SIGINT", "SIGTERM", 130)])
def test_the_first_of_two_signals_sets_the_exit_code(first, second, code):
    """Python runs the handlers of signals pending together by number (SIGINT first);
    the wakeup pipe keeps the order they came in. Nothing changed the machine: no
    "machine changes undone"."""
    cp = _child(_ORDER, first, second)
    assert cp.returncode == code and cp.stderr == f"abtlab probe: interrupted by {first}\n", cp.stderr


def test_a_signal_in_a_finalizer_is_not_printed_and_still_ends_the_command():
    code = """
import argparse, os, signal, sys, time, weakref
import abtlab.cli as cli
class Obj: pass
def probe(args):
    o = Obj()
    weakref.finalize(o, lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.1)))
    del o
    time.sleep(5)
""" + _PROBE_MAIN
    cp = _child(code)
    assert cp.returncode == 130 and cp.stderr == "abtlab probe: interrupted by SIGINT\n", cp.stderr
