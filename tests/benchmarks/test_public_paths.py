"""benchmarks.public_paths times the kernel on the very runs each public path makes: the
same points, parameters and seeds, so the ratios compare like with like."""
import numpy as np

import abtlab
from abtlab.sim import core, explore
from benchmarks import public_paths


def test_kernel_rows_run_the_sweeps_points_and_seeds():
    kw = dict(threads="8", policy="ext4;delayjc:window=16ms", freq="1.6,3.3", device="hdd7200")
    ds = abtlab.run("sim", reps=2, seed=0, quiet=True, **kw)
    runs = public_paths.sweep_params(2, **kw)
    assert len(runs) == 4
    got = [[r.scalars["throughput"] for r in core.run_reps(p, s)] for p, s in runs]
    want = ds.throughput.transpose("policy", "freq_ghz", ...).values.reshape(4, 2)
    np.testing.assert_array_equal(got, want)


def test_explore_rows_run_explores_cells():
    axes = {"write_fixed_us": [30.0], "commit_fixed_us": [2000.0, 10000.0]}
    ds = explore.sensitivity(axes=axes, reps=2)
    runs = public_paths.explore_params(2, axes)
    means = [np.mean([r.scalars["commits"] for r in core.run_reps(p, s)]) for p, s in runs]
    want = ds.commits.transpose("write_fixed_us", "commit_fixed_us", "policy", "freq_ghz").values
    np.testing.assert_array_equal(means, want.ravel())


def test_jit_rows_run_numbas_jit_and_leave_the_compiled_kernel_on(monkeypatch):
    monkeypatch.delenv("ABTLAB_SIM_AOT", raising=False)
    seen = []
    monkeypatch.setattr(core, "run_raw", lambda p, s: seen.append(core.aot.load()))
    public_paths.jit_raw(public_paths.sweep_params(1, threads="8"))
    assert seen == [None] and "ABTLAB_SIM_AOT" not in public_paths.os.environ
    assert public_paths.JIT["ABTLAB_SIM_AOT"] == "off"
    assert "PYTHONDONTWRITEBYTECODE" not in public_paths.USER


def test_the_kernel_process_row_runs_the_sweeps_points_in_a_new_process(tmp_path):
    """The new-process reference runs the pickled points (the sweep's own, as they come
    back from the pickle) with abtlab.sim.core.run_reps, and nothing else."""
    import pickle
    import subprocess
    import sys
    runs = public_paths.sweep_params(2, threads="8", freq="1.6,3.3")
    path = tmp_path / "points.pickle"
    path.write_bytes(pickle.dumps(runs))
    back = pickle.loads(path.read_bytes())
    assert [(p, list(s)) for p, s in back] == [(p, list(s)) for p, s in runs]
    code = public_paths.KERNEL_PROCESS + "\nimport sys; print(sorted(m for m in ('xarray', 'h5py') if m in sys.modules))"
    cp = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                        timeout=300, cwd=public_paths.ROOT)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == "[]"      # the kernel's path: no dataset, no file


def test_the_floor_writes_the_datasets_layout_without_abtlab(tmp_path):
    """The floor row's process writes every numeric variable of the command's dataset,
    same names, shapes and types, and never imports abtlab."""
    import subprocess
    import sys
    import h5py
    out = tmp_path / "s.nc"
    abtlab.run("sim", reps=2, threads="8", freq="1.6,3.3", quiet=True, out=out)
    layout = public_paths.floor_layout(out, tmp_path / "layout.json")
    floor = tmp_path / "floor.h5"
    code = public_paths.FLOOR + "\nprint('abtlab' in sys.modules)"
    cp = subprocess.run([sys.executable, "-c", code, str(layout), str(floor)], capture_output=True,
                        text=True, timeout=300, cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == "False"

    def numeric(path):
        rows = {}
        with h5py.File(path, "r") as f:
            f.visititems(lambda k, o: rows.update({k: (o.shape, o.dtype)})
                         if isinstance(o, h5py.Dataset) and o.dtype.kind in "iuf" else None)
        return rows
    want = numeric(out)
    assert "op_t_start" in want and want["op_t_start"][0][0] > 0
    assert numeric(floor) == want
