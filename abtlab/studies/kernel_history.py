"""The kernel history study (notebook 08, the demo's opening answer): one IOzone point
at two frequencies on the host (today's kernel), the stock 6.1 guest, the 6.1 guest
with Linux 3.4's journal semantics (`kernel=6.1-legacy`) and the simulator, and the
high/low throughput ratio of each with its CI (docs/journal/kernel-history.md).

`history_data()` runs (or loads) the four rows and says why a row is missing;
abtlab.present.kernel_history_tables' `ratio_table()` / `answer_table()` give the ratios
with abtlab.stats.test_slowdown (the function behind `abtlab stats --slowdown --test`);
the plots are in abtlab.present.kernel_history_plots. Host points are measured with
emulated frequency, guest points run in virtual time (qemu icount) and simulator points
are simulated: every table row and plot says which.

`data`: "auto" runs the host where root and loop devices are here and the guests where
their kernel is built; "guest" the two guests (no root needed: qemu runs unprivileged;
builds the kernel when it is missing); "sim" the simulator only; a path loads a dataset
of `abtlab run`/`abtlab sweep` with a machine dim (e.g. examples/kernel_history.toml's).
The simulator row is always simulated at the same point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..data import schema
from ..errors import ConfigError, UnavailableError
from ..factors.levels import parse_ints, parse_size, parse_words
from ..model.remeasure import upgrade

if TYPE_CHECKING:
    from ..machines.spec import Machine

# The imports inside functions are deferred: `abtlab lab` loads this module at its start
# (classroom -> paper_terms -> kernel_history_tables -> here), where each would add, on
# top of what classroom loads anyway, CPU time: machine specs 13 ms, the dataset store
# 11 ms, policies 5 ms, the drivers' registry 5 ms, the sweep 12 ms, calibration 25 ms.

__all__ = ["ROWS", "DATA_CHOICES", "Point", "History", "make_point", "history_data",
           "guest_machines", "guest_ready", "kernel_key", "add_dataset_rows"]

HOST, STOCK, LEGACY, SIM = "host", "guest 6.1", "guest 6.1-legacy", "simulator"
ROWS = (HOST, STOCK, LEGACY, SIM)
DATA_CHOICES = ("auto", "guest", "sim")


@dataclass(frozen=True)
class Point:
    """The IOzone point every row runs (sizes in bytes, frequencies in GHz)."""
    threads: int
    file_size: int
    record_size: int
    device: str
    depth: int
    policies: tuple
    freqs: tuple
    reps: int
    seed: int = 1


@dataclass
class History:
    point: Point
    runs: dict = field(default_factory=dict)      # row -> Dataset
    missing: dict = field(default_factory=dict)   # row -> why it is not there


def make_point(threads=32, file_size="64k", record_size="32k", device="hdd7200", depth=1,
               policy="ext4,nojc", freqs="1.6,3.3", reps=2, seed=1) -> Point:
    """The point, checked: ConfigError naming the notebook parameter."""
    from ..policies import parse as parse_policy      # deferred: see the note at the top
    if isinstance(threads, bool) or len(parse_ints(threads, "threads")) != 1:
        raise ConfigError("threads", threads, "one thread count, e.g. 64")
    fs, rs = parse_size(file_size, "file_size"), parse_size(record_size, "record_size")
    if rs > fs or fs % rs:
        raise ConfigError("record_size", record_size, f"a size that divides file_size ({fs} bytes)")
    pols = tuple(parse_words(policy, "policy"))
    for p in pols:
        parse_policy(p)
    if "ext4" not in pols:
        raise ConfigError("policy", policy, "a list including ext4 (the table's policy)")
    fq = tuple(sorted({_freq(f) for f in str(freqs).split(",") if f.strip()}))
    if len(fq) < 2:
        raise ConfigError("freqs", freqs, "two or more frequencies in GHz, e.g. 1.6,3.3")
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2:
        raise ConfigError("reps", reps, "an integer >= 2 (a CI needs two repetitions)")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 256:
        raise ConfigError("depth", depth, "the guest disk's queue depth, an integer from 1 to 256")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError("seed", seed, "an integer")
    return Point(parse_ints(threads, "threads")[0], fs, rs, parse_words(device, "device")[0],
                 depth, pols, fq, reps, seed)


def _freq(text) -> float:
    try:
        f = float(text)
    except ValueError:
        f = math.nan
    if not f > 0:
        raise ConfigError("freqs", text, "frequencies in GHz > 0, e.g. 1.6,3.3")
    return f


def guest_machines(depth: int) -> dict:
    """Row -> --machine spec of the two guests (canonical labels)."""
    return {row: m.label for row, m in _guests(depth).items()}


def _guests(depth: int) -> dict[str, Machine]:
    """Row -> the Machine of the two guests, parsed once here."""
    from ..machines.spec import parse_machine         # deferred: see the note at the top
    tail = f",depth={depth}" if depth != 1 else ""
    return {STOCK: parse_machine(f"guest:kernel=6.1{tail}"),
            LEGACY: parse_machine(f"guest:kernel=6.1-legacy{tail}")}


def guest_ready() -> tuple[bool, str]:
    """(ok, reason): the guest can boot here without a kernel build (its image for the
    current patch series and config is in the cache): a build takes tens of minutes."""
    from ..machines.spec import parse_machine         # deferred: see the note at the top
    avail = parse_machine("guest").available()        # can qemu boot a guest here
    if not avail:
        return False, avail.reason
    from ..machines.kernels import KERNELS             # deferred: see the note at the top
    row = KERNELS["6.1"]
    if not (row.cache / row.build_key() / "bzImage").is_file():
        return False, ("the guest kernel is not built yet (make -C backends/kernel, once; "
                       "or data='guest' builds it)")
    return True, ""


def kernel_key() -> str:
    """The cache key build-kernel.sh gives the current patch series and config (the 6.1
    row's own)."""
    from ..machines.kernels import KERNELS             # deferred: see the note at the top
    return KERNELS["6.1"].build_key()


def history_data(data="auto", point: Point | None = None, quiet=False) -> History:
    """The rows of the study at `point` (make_point()); see the module doc for `data`."""
    point = point or make_point()
    data = str(data)
    hist = History(point)
    if data not in DATA_CHOICES and not Path(data).exists():
        raise ConfigError("data", data, " | ".join(DATA_CHOICES) + " | the path of a dataset")
    if data in DATA_CHOICES:
        _host_row(hist, data, quiet)
        _guest_rows(hist, data, quiet)
    else:
        from ..data.store import load as load_dataset   # deferred: see the note at the top
        add_dataset_rows(hist, upgrade(load_dataset(data)), Path(data).name)
    hist.runs[SIM] = _run("sim", point, quiet, freq=",".join(map(str, point.freqs)),
                          params=sim_params(hist))
    hist.runs = {row: hist.runs[row] for row in ROWS if row in hist.runs}   # in ROWS order
    return hist


def sim_params(hist: History) -> dict:
    """The simulator's parameters for the simulator row: calibrated on the legacy guest's
    ext4 runs when there are any (abtlab.sim.calibration: CPU costs, write-back, slices;
    the in-guest disk from its settings), else the presets at the point's queue depth."""
    legacy = hist.runs.get(LEGACY)
    if legacy is None or "op_run" not in legacy:
        return {"queue_depth": hist.point.depth}
    from ..sim.calibration import calibrate           # deferred: see the note at the top
    sel = {"policy": "ext4"} if "policy" in legacy.dims else {}
    params = calibrate(legacy, **sel)
    params.pop("calibration", None)
    return {**params, "queue_depth": hist.point.depth}


def _run(backend, point: Point, quiet, **kw):
    from ..sweep.runner import run as run_sweep       # deferred: see the note at the top
    return run_sweep(backend, threads=point.threads, file_size=point.file_size,
                     record_size=point.record_size, policy=",".join(point.policies),
                     device=point.device, reps=point.reps, seed=point.seed, quiet=quiet, **kw)


def _emulated(point: Point) -> str:
    return "emulated:" + ",".join(map(str, point.freqs))


def _host_row(hist: History, data: str, quiet) -> None:
    if data != "auto":
        hist.missing[HOST] = f"not asked for (data={data!r})"
        return
    from ..backends import get as get_backend        # deferred: see the note at the top
    avail = get_backend("iozone").available()
    if not avail:
        hist.missing[HOST] = f"cannot run here: {avail.reason}"
        return
    hist.runs[HOST] = _run("iozone", hist.point, quiet, machine="host", warmup=1,
                           freq=_emulated(hist.point))


def _guest_rows(hist: History, data: str, quiet) -> None:
    if data == "sim":
        for row in (STOCK, LEGACY):
            hist.missing[row] = "not asked for (data='sim': the simulator only)"
        return
    ok, why = guest_ready() if data == "auto" else (True, "")
    for row, machine in _guests(hist.point.depth).items():
        if not ok:
            hist.missing[row] = f"cannot run here: {why}"
            continue
        try:
            hist.runs[row] = _run("iozone", hist.point, quiet, machine=machine,
                                  freq=_emulated(hist.point))
        except UnavailableError as exc:
            if data != "auto":
                raise
            hist.missing[row] = f"cannot run here: {exc}"


def add_dataset_rows(hist: History, ds, source="the dataset") -> None:
    """The host and guest rows of a run dataset with a machine dim, at the point's
    levels (threads, sizes, device; the guests at the point's depth)."""
    ds = _at_point(ds, hist.point)
    labels = [str(m) for m in ds[schema.MACHINE].values] if schema.MACHINE in ds.dims else []
    for row, label in {HOST: "host", **guest_machines(hist.point.depth)}.items():
        if label in labels:
            hist.runs[row] = ds.sel({schema.MACHINE: [label]})
        else:
            hist.missing[row] = f"not in {source} (machines: {', '.join(labels) or 'none'})"


def _at_point(ds, point: Point):
    """ds narrowed to the point's threads, sizes and device (each kept as a dim of one)."""
    want = {schema.THREADS: point.threads, schema.FILE_SIZE: point.file_size,
            schema.RECORD_SIZE: point.record_size, schema.DEVICE: point.device}
    names = {schema.THREADS: "threads", schema.FILE_SIZE: "file_size",
             schema.RECORD_SIZE: "record_size", schema.DEVICE: "device"}
    for dim, value in want.items():
        if dim not in ds.dims:
            continue
        levels = [v.item() for v in ds[dim].values]
        if value not in levels:
            raise ConfigError(names[dim], value, f"a level of the dataset: {levels}")
        ds = ds.sel({dim: [value]})
    return ds
