"""What per-op recording costs abt-iozone: the same run with --no-record (ops timed,
nothing stored) and with --trace (records stored in memory, written after the join),
interleaved so drifts in machine load hit both alike.

    .venv/bin/python -m benchmarks.trace_overhead [--reps 21] [--threads 64]
        [--file-size 128k] [--record-size 32k] [--dir DIR] [--no-fsync]

Prints the median process wall time (includes writing the trace file) and the
median in-program elapsed time (gate open .. all threads joined) of each mode, and
the overhead in percent. Target: under 2 % of run time.
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from abtlab.errors import ConfigError, RunError

NATIVE = Path(__file__).resolve().parents[1] / "backends"
PROG = NATIVE / "iozone" / "abt-iozone"


COLUMNS = ("wall", "elapsed", "cpu", "save")


def _once(args: list[str], workdir: Path, trace: Path | None) -> tuple[float, ...]:
    """One run; returns (process wall s, in-program elapsed s, process CPU s, trace
    save s). Files are kept by abt-iozone and removed here, outside the timing:
    unlinking 64 freshly synced files on ext4 takes ~200 ms here and would drown
    what is being measured."""
    mode = ["--trace", str(trace)] if trace else ["--no-record"]
    t0 = time.perf_counter()
    p = subprocess.Popen([str(PROG), *args, "--keep", *mode], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    for f in workdir.glob("abt-iozone.*"):
        f.unlink()
    if trace:
        trace.unlink(missing_ok=True)
    if p.returncode == 2:
        raise ConfigError("abt-iozone arguments", " ".join(args), err.strip())
    if p.returncode != 0:
        raise RunError(f"abt-iozone failed ({p.returncode}): {err.strip()}")
    kv = dict(line.split(": ", 1) for line in out.splitlines())
    return (wall, int(kv["elapsed_ns"]) * 1e-9, _child_cpu_since(), int(kv["save_ns"]) * 1e-9)


_cpu_seen = [0.0]


def _child_cpu_since() -> float:
    """CPU (user + sys) of children reaped since the last call: the run just done."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = ru.ru_utime + ru.ru_stime
    delta, _cpu_seen[0] = total - _cpu_seen[0], total
    return delta


def measure(args: list[str], reps: int, workdir: Path) -> dict[str, np.ndarray]:
    """Interleave the two modes reps times (order alternating); arrays [reps, 4]."""
    res = {"no-record": [], "trace": []}
    trace = workdir / "overhead.trace"
    _once(args, workdir, None)  # warm-up: page cache, directory, allocator
    for i in range(reps):
        order = ("no-record", "trace") if i % 2 == 0 else ("trace", "no-record")
        for mode in order:
            res[mode].append(_once(args, workdir, trace if mode == "trace" else None))
    return {k: np.array(v) for k, v in res.items()}


def ratio_ci(a: np.ndarray, b: np.ndarray, n: int = 4000, seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap interval of median(b) / median(a), each mode resampled alone."""
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(a, (n, a.size)), axis=1)
    mb = np.median(rng.choice(b, (n, b.size)), axis=1)
    return tuple(np.percentile(mb / ma, [2.5, 97.5]))


def report(res: dict[str, np.ndarray]) -> None:
    for col, what in ((0, "process wall time (incl. trace write)"),
                      (1, "in-program elapsed (start gate .. join)"),
                      (2, "process CPU time (user + sys)")):
        a, b = np.median(res["no-record"][:, col]), np.median(res["trace"][:, col])
        q = [np.percentile(res[m][:, col], [25, 75]) * 1e3 for m in ("no-record", "trace")]
        lo, hi = ratio_ci(res["no-record"][:, col], res["trace"][:, col])
        print(f"{what}:")
        print(f"  --no-record median {a * 1e3:9.3f} ms  (IQR {q[0][0]:.3f}..{q[0][1]:.3f})")
        print(f"  --trace     median {b * 1e3:9.3f} ms  (IQR {q[1][0]:.3f}..{q[1][1]:.3f})")
        print(f"  ratio trace/no-record {b / a:.4f}  overhead {100 * (b / a - 1):+.2f} % "
              f"(95 % bootstrap CI {100 * (lo - 1):+.2f} .. {100 * (hi - 1):+.2f} %)")
    save = res["trace"][:, 3]
    frac = save / res["trace"][:, 0]
    print(f"trace write alone (timed inside abt-iozone): median {np.median(save) * 1e3:.3f} ms"
          f" = {100 * np.median(frac):.2f} % of the --trace run's wall time "
          f"(IQR {100 * np.percentile(frac, 25):.2f}..{100 * np.percentile(frac, 75):.2f} %)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--threads", default="64")
    ap.add_argument("--file-size", default="128k")
    ap.add_argument("--record-size", default="32k")
    ap.add_argument("--dir", help="where the files go (default: a new temporary directory)")
    ap.add_argument("--no-fsync", action="store_true")
    a = ap.parse_args(argv)
    if a.reps < 1:
        raise ConfigError("--reps", a.reps, "an integer >= 1")
    subprocess.run(["make", "-s", "-C", str(NATIVE), "iozone/abt-iozone"], check=True)
    with tempfile.TemporaryDirectory(prefix="abt-overhead-", dir=a.dir) as d:
        args = ["--dir", d, "--threads", a.threads, "--file-size", a.file_size,
                "--record-size", a.record_size] + (["--no-fsync"] if a.no_fsync else [])
        print(f"abt-iozone {' '.join(args[2:])} on {d}, {a.reps} interleaved reps per mode")
        report(measure(args, a.reps, Path(d)))


if __name__ == "__main__":
    main()
