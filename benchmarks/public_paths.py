"""The simulator's public paths beside the kernel they wrap, timed side by side in one run.

    .venv/bin/python -m benchmarks.public_paths [--reps 100] [--repeat 5] [--skip-notebooks]

For each path, the same points and seeds through abtlab.sim's kernel alone (run_raw) and
with traces and the model's measures (run_reps, = 1.00), then the public path and its
ratio to that (simulated data; wall seconds, the median of --repeat, measured in turns):
  `abtlab.run("sim", ...)`: the sweep of the command below, in this process, without --out
  `abtlab run sim ... --out` (256 threads, 128k in 32k records, ext4 and delayJC at 1.6
      and 3.3 GHz, 100 repetitions): its main() in this process, which has run the
      command once on a tiny point (the imports, the compiled kernel's load), with the
      share of the dataset's write; and as a new process each time, less the
      interpreter's start (`python -c pass`: the targets, <= 1 s and <= 2x, are on this
      row), with the kernel compiled ahead of time (abtlab.sim.aot, built first if it is
      not) and with numba's JIT (ABTLAB_SIM_AOT=off) beside it; then what any new process
      that runs the simulator pays before its first repetition (`import abtlab.sim.core`
      and one repetition of one thread: the compiled module's load, or numba's and the
      kernel's from numba's cache) and the command on one tiny point (that, and the
      command's own imports, its dataset and file, its exit); each new process's CPU
      seconds (user + system, less the interpreter's) beside it, against the CPU seconds
      of the kernel + traces + measures path (all its threads); new processes write and
      read their bytecode as a user's do (one has run first), PYTHONDONTWRITEBYTECODE aside;
      and the kernel + traces + measures path itself as a new process (the same points,
      `import abtlab.sim.core` and run_reps), with the CLI's new process over it; and
      a floor: a new process, without abtlab, that imports numpy and h5py and writes
      arrays of the dataset's layout (names, shapes, types) to a new file and fsyncs it,
      which with the kernel + traces + measures path is the least such a command can take
  each lab notebook on the simulator with its default parameters (papermill, a new
      Jupyter kernel each), beside the kernel of its points and its dataset's sweep
      (studies.study_data) in this process (target: under 10 s), after a notebook that
      only imports abtlab, xarray and pyplot and loads the compiled kernel
  `abtlab.sim.explore.sensitivity` over 100 cells (10 x 10 values of two axes, ext4 and
      delayJC at 1.6 and 3.3 GHz each), beside the kernel of the same cells
Host timings are only comparable within one run of this command (shared machine).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import abtlab
from abtlab.studies import notebook_studies as studies
from abtlab.sim import aot
from abtlab.sim import core as simcore
from abtlab.sim import explore
from abtlab.sim.backend import SimBackend
from abtlab.sweep.loop import expand, run_seed
from abtlab.sweep.runner import build_levels

ROOT = Path(__file__).resolve().parents[1]
CLI = [str(Path(sys.executable).with_name("abtlab")), "run", "sim"]
COMMAND = dict(threads="256", file_size="128k", record_size="32k",
               policy="ext4;delayjc:window=16ms", freq="1.6,3.3")
FLAGS = {"threads": "--threads", "file_size": "--file-size", "record_size": "--record",
         "policy": "--policy", "freq": "--freq", "device": "--device"}
# each lab notebook's simulated study: its parameters cell and its studies.study_data call
LABS = {"lab_1_faster_cpu": dict(reps=5, threads=256, policy="ext4,nojc", freq="1.6,3.3",
                                 device="hdd7200"),
        "lab_2_batching": dict(reps=3, threads=256, policy="ext4", freq="1.6,3.3", device="hdd7200"),
        "lab_3_delay": dict(reps=3, threads=256, freq="3.3", device="hdd7200",
                            policy=";".join(studies.delay_policies([1, 4, 16, 64], max_resets=64)))}
EXPLORE_AXES = {"write_fixed_us": [float(v) for v in np.geomspace(20, 500, 10).round()],
                "commit_fixed_us": [float(v) for v in np.geomspace(1000, 40000, 10).round()]}


def median(fn, repeat):
    """(median wall s over `repeat` runs of fn, the last run's result)."""
    times, res = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), res


def sweep_params(reps, seed=0, **factors):
    """(SimParams, seeds) of every point of an abtlab.run("sim", ...) sweep, as it runs them."""
    levels, options = build_levels("sim", **factors)
    options.pop("freq_mode", None)
    be = SimBackend()
    return [(be._params(point, options), [run_seed(seed, i, r) for r in range(reps)])
            for i, point in enumerate(expand(levels))]


def explore_params(reps, axes=EXPLORE_AXES, seed=0):
    """(SimParams, seeds) of every run of explore.sensitivity(axes), as it runs them."""
    base = {**explore.PAPER_POINT, "write_us_per_kib": 0.0}
    combos = expand(axes)
    return [(explore._params(base, c, pol, f), seed + np.arange(reps)) for c in combos
            for pol in ("ext4", "delayjc:window=16ms") for f in (1.6, 3.3)]


def kernel_rows(runs, repeat):
    """Median wall of the kernel alone and of the kernel with traces and measures."""
    raw = median(lambda: [simcore.run_raw(p, s) for p, s in runs], repeat)[0]
    full = median(lambda: [simcore.run_reps(p, s) for p, s in runs], repeat)[0]
    return raw, full


def cli_args(reps, out, **factors):
    args = [a for k, v in factors.items() for a in (FLAGS[k], str(v))]
    return CLI + args + ["--reps", str(reps), "--out", str(out), "--quiet", "--force"]


def run_process(argv, cpu=None, env=None):
    """Wall s of a new process; its CPU s (user + system) appended to `cpu` when given."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env or USER)
    t = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return t


def row(label, t, ref=None, note=""):
    ratio = f" = {t / ref:5.2f}x" if ref else ""
    print(f"  {label:46s} {t:7.3f} s{ratio} {note}".rstrip())


# what a new process pays before the simulator's first repetition: the compiled module's
# load (or, with JIT, numba's import and the kernel's load from numba's cache)
# New processes keep their bytecode (__pycache__) as a user's do, whatever this one's
# PYTHONDONTWRITEBYTECODE: else each would compile abtlab's modules from source again.
USER = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
JIT = {**USER, "ABTLAB_SIM_AOT": "off"}
KERNEL_LOAD = ("from abtlab.sim import core, params; "
               "core.run_raw(params.make(threads=1), [0])")
# the least any command that runs these points and writes their dataset pays beyond the
# kernel path: a new process that imports numpy and h5py and writes arrays of the
# dataset's names, shapes and types (from a JSON list) to a new HDF5 file, then fsyncs it
FLOOR = ("import json, os, sys, numpy as np, h5py\n"
         "with h5py.File(sys.argv[2], 'w') as f:\n"
         "    for k, shape, dtype in json.load(open(sys.argv[1])):\n"
         "        a = np.empty(shape, dtype); a.fill(1); f.create_dataset(k, data=a)\n"
         "fd = os.open(sys.argv[2], os.O_RDONLY); os.fsync(fd); os.close(fd)")


def floor_layout(path, out):
    """The dataset's numeric variables as (name, shape, dtype) in a JSON file at out."""
    import h5py
    import json
    rows = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, o: rows.append((k, o.shape, o.dtype.str))
                     if isinstance(o, h5py.Dataset) and o.dtype.kind in "iuf" else None)
    out.write_text(json.dumps(rows))
    return out


# the kernel + traces + measures path as a new process: the points (pickled), imports and
# all, as a user's own script calling the public kernel would run them
KERNEL_PROCESS = ("import pickle, sys; from abtlab.sim import core\n"
                  "for p, s in pickle.load(open(sys.argv[1], 'rb')): core.run_reps(p, s)")


def aot_status() -> str:
    """Builds the ahead-of-time kernel when it is absent (before any timing); says which."""
    try:
        return f"ahead-of-time kernel: {aot.build(if_absent=True)}"
    except RuntimeError as e:
        return f"ahead-of-time kernel NOT built ({e}): its rows run numba's JIT"


def jit_raw(runs):
    """The kernel alone with numba's JIT in this process (ABTLAB_SIM_AOT=off)."""
    os.environ["ABTLAB_SIM_AOT"] = "off"
    try:
        return median(lambda: [simcore.run_raw(p, s) for p, s in runs], 1)[0]
    finally:
        del os.environ["ABTLAB_SIM_AOT"]


def cli_section(a, work):
    from abtlab.cli import main as cli_main
    from abtlab.data import store
    from abtlab.data.arrays import RunArrays
    points = sweep_params(a.reps, **COMMAND)
    print(f"abtlab run sim {' '.join(f'{FLAGS[k]} {v!r}' for k, v in COMMAND.items())} "
          f"--reps {a.reps} --out s.nc  ({len(points)} points x {a.reps} repetitions)")
    out, tiny = work / "s.nc", work / "tiny.nc"
    big = cli_args(a.reps, out, **COMMAND)
    small = cli_args(1, tiny, threads="8", freq="1.6")
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet:
        cli_main(small[1:])     # this process has paid the CLI's fixed start: imports, first file
    run_process(small)          # and the new processes' bytecode is written
    pickled = work / "points.pickle"
    pickled.write_bytes(pickle.dumps(points))
    kernel_process = [sys.executable, "-c", KERNEL_PROCESS, str(pickled)]
    run_process(kernel_process)
    with quiet:
        cli_main(big[1:])       # the dataset whose layout the floor writes
    floor = [sys.executable, "-c", FLOOR, str(floor_layout(out, work / "layout.json")),
             str(work / "floor.h5")]
    times = {k: [] for k in ("raw", "raw_jit", "full", "api", "main", "save", "cli", "cli_jit",
                             "python", "load", "load_jit", "start", "full_process", "floor")}
    cpu = {k: [] for k in ("full", "cli", "cli_jit", "python", "load", "load_jit", "start",
                           "full_process", "floor")}
    for _ in range(a.repeat):      # in turns, so load on the machine falls on every path alike
        raw, full = kernel_rows(points, 1)
        times["raw"].append(raw)
        times["raw_jit"].append(jit_raw(points))
        times["full"].append(full)
        t0 = time.process_time()
        [simcore.run_reps(p, s) for p, s in points]
        cpu["full"].append(time.process_time() - t0)
        times["api"].append(median(lambda: abtlab.run("sim", reps=a.reps, quiet=True, **COMMAND), 1)[0])
        with quiet:
            times["main"].append(median(lambda: cli_main(big[1:]), 1)[0])
        run = RunArrays.of(abtlab.load(out))
        times["save"].append(median(lambda: store.save(run, work / "copy.nc"), 1)[0])
        times["python"].append(run_process([sys.executable, "-c", "pass"], cpu["python"]))
        times["cli"].append(run_process(big, cpu["cli"]))
        times["cli_jit"].append(run_process(big, cpu["cli_jit"], JIT))
        times["load"].append(run_process([sys.executable, "-c", KERNEL_LOAD], cpu["load"]))
        times["load_jit"].append(run_process([sys.executable, "-c", KERNEL_LOAD], cpu["load_jit"],
                                             JIT))
        times["start"].append(run_process(small, cpu["start"]))
        times["full_process"].append(run_process(kernel_process, cpu["full_process"]))
        times["floor"].append(run_process(floor, cpu["floor"]))
    t = {k: float(np.median(v)) for k, v in times.items()}
    c = {k: float(np.median(v)) for k, v in cpu.items()}

    def cpu_note(k):
        return f"(CPU {c[k] - c['python']:.2f} s = {(c[k] - c['python']) / c['full']:.2f}x)"
    row("kernel (run_raw), compiled ahead of time", t["raw"])
    row("kernel (run_raw), numba's JIT", t["raw_jit"], t["raw"], "(ratio to the line above)")
    row("kernel + traces + measures (run_reps)", t["full"], t["full"], f"(CPU {c['full']:.2f} s)")
    row('abtlab.run("sim"), without --out', t["api"], t["full"])
    row("the CLI with --out, its main() in this process", t["main"], t["full"])
    row("  of which the dataset's write (store.save)", t["save"], t["full"])
    row("a bare interpreter (python -c pass)", t["python"])
    row("the CLI with --out as a new process", t["cli"])
    row("  less the interpreter's start", t["cli"] - t["python"], t["full"],
        f"{cpu_note('cli')} (target: <= 1 s and <= 2x)")
    row("  the same with numba's JIT, less that start", t["cli_jit"] - t["python"], t["full"],
        cpu_note("cli_jit"))
    row("  a new process's kernel load, less that start", t["load"] - t["python"], t["full"],
        f"{cpu_note('load')} (the compiled module)")
    row("  the same with numba's JIT", t["load_jit"] - t["python"], t["full"],
        f"{cpu_note('load_jit')} (numba, its cached kernel)")
    row("  the CLI on one tiny point, less that start", t["start"] - t["python"], t["full"],
        cpu_note("start"))
    row("  kernel + traces + measures as a new process", t["full_process"] - t["python"], t["full"],
        f"{cpu_note('full_process')} (its imports and the kernel's load; less that start)")
    row("  the CLI as a new process over that", t["cli"] - t["python"],
        t["full_process"] - t["python"], "(both less the interpreter's start)")
    row("  floor: numpy, h5py, the dataset's arrays written", t["floor"] - t["python"], t["full"],
        f"{cpu_note('floor')} (a new process, no abtlab; less that start)")
    row("  the floor + kernel + traces + measures", t["floor"] - t["python"] + t["full"], t["full"],
        "(the least such a command can take)")
    print(f"  the dataset: {dict(RunArrays.of(abtlab.load(out)).sizes)}")
    return t


def notebook_section(a, work):
    import papermill as pm
    from abtlab.present.report import NOTEBOOK_DIR
    import nbformat
    print("lab notebooks on the simulator, default parameters (a new Jupyter kernel each; "
          "target: under 10 s)")
    floor = work / "floor.ipynb"     # what every notebook pays: the kernel's start, abtlab's
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import abtlab, xarray, matplotlib.pyplot\n" + KERNEL_LOAD)]), floor)
    t = median(lambda: pm.execute_notebook(str(floor), str(floor), kernel_name="python3",
                                           progress_bar=False), a.repeat)[0]
    row("a notebook that imports abtlab, xarray, pyplot, loads the kernel", t)
    for name, study in LABS.items():
        study = dict(study)
        reps = study.pop("reps")
        full = kernel_rows(sweep_params(reps, **study), a.repeat)[1]
        data = median(lambda: studies.study_data("sim", reps=reps, sim=study), a.repeat)[0]

        def execute():
            pm.execute_notebook(str(NOTEBOOK_DIR / f"{name}.ipynb"), str(work / f"{name}.ipynb"),
                                kernel_name="python3", cwd=str(work), progress_bar=False)
        nb = median(execute, a.repeat)[0]
        row(f"{name}: kernel + traces + measures", full, full)
        row(f"{name}: its study_data, in this process", data, full)
        row(f"{name}: the notebook", nb, full, "(target: < 10 s)")


def explore_section(a):
    runs = explore_params(a.explore_reps)
    cells = len(expand(EXPLORE_AXES))
    print(f"abtlab.sim.explore.sensitivity over {cells} cells x 2 policies x 2 frequencies x "
          f"{a.explore_reps} repetitions, 256 threads")
    raw, full = kernel_rows(runs, a.repeat)
    t = median(lambda: explore.sensitivity(axes=EXPLORE_AXES, reps=a.explore_reps), a.repeat)[0]
    row("kernel (run_raw)", raw)
    row("kernel + traces + measures (run_reps)", full, full)
    row("explore.sensitivity", t, full)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=100, help="repetitions of the CLI command")
    ap.add_argument("--repeat", type=int, default=5, help="runs per path; the median is shown")
    ap.add_argument("--explore-reps", type=int, default=10, help="repetitions per explore cell")
    ap.add_argument("--skip-notebooks", action="store_true")
    ap.add_argument("--skip-explore", action="store_true")
    a = ap.parse_args(argv)
    print(f"simulated data; wall time, median of {a.repeat}; {os.cpu_count()} CPUs, load average "
          f"{_load()} (compare within this run only)")
    print(aot_status())     # built before the first run, so this process loads it
    # what the CLI's fixed start pays, paid here before any timing: the compiled kernel's
    # load, xarray's first dataset; and numba's JIT's load for its rows
    abtlab.run("sim", reps=1, threads=8, quiet=True)
    jit_raw(sweep_params(1, threads="8"))
    with tempfile.TemporaryDirectory(prefix="abtlab-bench-") as tmp:
        cli_section(a, Path(tmp))
        print(f"  load average after: {_load()}")
        if not a.skip_notebooks:
            notebook_section(a, Path(tmp))
    if not a.skip_explore:
        explore_section(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
