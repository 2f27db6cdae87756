"""A deterministic backend for testing the sweep machinery without root.

$ABTLAB_FAKE_HANG=THREADS:REP:PATH: the run of that many threads at that repetition
creates PATH and then sleeps until the process is killed (a kill at a known point)."""
import os
import time
from pathlib import Path

import numpy as np

from abtlab.backends.base import Backend
from abtlab.data.result import RunResult
from abtlab.errors import RunError
from abtlab.trace import RECORD_DTYPE


class FakeBackend(Backend):
    name = "fake"
    description = "deterministic numbers from the run seed"
    factors = {"policy": "ext4", "threads": 4}
    options = {"delay": "seconds to sleep per run",
               "fail": "THREADS:REP: the runs of that many threads at that repetition fail "
                       "(RunError; * for every run)",
               "rsd": "THREADS:RSD,...: the throughput's relative SD at those thread counts "
                      "(0.05 elsewhere)"}

    def run_point(self, point, ctx):
        time.sleep(float(ctx.options.get("delay", 0)))
        hang = os.environ.get("ABTLAB_FAKE_HANG", "").split(":", 2)
        if hang[:2] == [str(point["threads"]), str(ctx.rep)]:
            Path(hang[2]).touch()
            time.sleep(3600)
        fail = str(ctx.options.get("fail", ""))
        if fail == "*" or fail == f"{point['threads']}:{ctx.rep}":
            raise RunError(f"fake failure at threads={point['threads']} rep {ctx.rep}")
        rng = np.random.default_rng(ctx.seed)
        ops = np.zeros(point["threads"], RECORD_DTYPE)
        ops["tid"] = np.arange(point["threads"])
        ops["t_start_ns"] = rng.integers(0, 1000, point["threads"])
        ops["t_end_ns"] = ops["t_start_ns"] + 10
        commits = {"tid": np.array([1, 2]), "start": np.array([5, 50]), "end": np.array([20, 70])}
        rsd = dict(kv.split(":") for kv in str(ctx.options.get("rsd", "")).split(",") if kv)
        sd = 100 * float(rsd.get(str(point["threads"]), 0.05))
        return RunResult(scalars={"throughput": float(rng.normal(100, sd)) * point["threads"],
                                  "commits": 2.0},
                         ops=ops, commits=commits, attrs={"freq_mode": "simulated",
                                                          "filesystem": "none", "mount_options": ""})
