"""The journal-commit labs (labs 1-3, Chang, Li, Grove and Cameron, MASCOTS 2014): the data
a lab runs on, and what it sets beside it where abtlab has the paper's effect:

(a) the SIMULATED paper machine (examples/sim_paper_machine.toml, run at the lab's point);
(b) the guest's paper machine: the stored result `paper_fig7a_342_grid` (Linux 3.4.2 in the
    qemu guest, lock-step VIRTUAL TIME, IOzone's polling start, Fig. 7a's cell), read
    through the results registry at the lab's clocks, never rerun;
(c) the real kernel: this host's, run at the lab's point where root and loop devices are
    available (`real_kernel="auto"`), else the stored host result `host_iozone_32t`.

A lab's `data` may also name a stored result (`abtlab results list`): the lab then reads
it instead of running anything."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import about
from ..data import schema
from ..data.store import load
from ..errors import ConfigError
from ..model.remeasure import upgrade
from ..results import registry
from ..studies import notebook_studies as studies
from ..sweep.reps import Reps

__all__ = ["GUEST_RESULT", "HOST_RESULT", "REAL_KERNEL", "HOST_REPS", "Side", "stored", "lab_data", "at_clocks",
           "host_reps", "sides"]

GUEST_RESULT = "paper_fig7a_342_grid"
# how a stored guest run started its writers (its "start" attr), said in its label
STARTS = {"poll": "IOzone's polling start", "barrier": "abt-iozone's barrier start"}
HOST_RESULT = "host_iozone_32t"
PAPER_MACHINE = (about.EXAMPLES / "sim_paper_machine.toml").name
REAL_KERNEL = ("auto", "stored", None)


@dataclass(frozen=True)
class Side:
    """One run set beside the lab's: what it is (said in the student's page) and its data."""
    label: str
    ds: object          # xarray.Dataset
    this_run: bool = False


def stored(name: str):
    """A stored result's dataset, by its name in data/results/index.toml."""
    return upgrade(load(registry.get(name).path(registry.root())))


def _stored_path(data):
    """The file of a stored result named by `data`, or `data` as it is."""
    results = registry.read() if isinstance(data, str) else {}
    return str(results[data].path(registry.root())) if data in results else data


def at_clocks(ds, freqs):
    """A stored result at the lab's clocks (GHz) where it has every one of them (a sweep over
    more clocks, as Fig. 7a's 1.6-3.3 GHz); else ds as it is, read at its own ends."""
    have = [float(f) for f in np.atleast_1d(ds[schema.FREQ].values)] if schema.FREQ in ds.dims else []
    keep = [h for h in have if np.isclose(h, [float(f) for f in freqs]).any()]
    return ds.sel({schema.FREQ: keep}) if have and len(keep) == len(freqs) else ds


# The host's real kernel counts a few commits per run (2 to 9 at the paper's cell) that vary
# about 40% from run to run: with 3 repetitions lab 2 read "same" then "fewer" in two checks
# in a row. There it takes adaptive repetitions on the ratio of the metric across the clocks
# (until its 95% CI half-width is within 15%, at least 10 and at most 20 per clock; 40 runs
# took 61 s at load 6 to 17 on 2 CPUs, 80 took 208 s at load 3 to 14).
HOST_REPS = dict(min=10, max=20, target=0.15)


def host_reps(data, reps, metric="commits"):
    """The repetitions a lab's run gets: `reps` on the simulator, the guest or stored data;
    on this host's real kernel (data "auto" where it can run) adaptive ones (sweep.Reps on
    `metric`'s ratio across the clocks, HOST_REPS, at least `reps`)."""
    if str(data) != "auto" or not studies.real_available("iozone"):
        return reps
    least = max(int(reps), HOST_REPS["min"])
    return Reps(min=least, max=max(least, HOST_REPS["max"]), target=HOST_REPS["target"], metric=metric,
                on="slowdown")


def lab_data(data, threads=256, file_size="128k", record_size="32k", policy="ext4,nojc",
             freqs=(1.6, 3.3), **kw):
    """abtlab.studies.notebook_studies.lab_data, with `data` also the name of a stored
    result (e.g. "paper_fig7a_342_grid": the guest's paper machine, read, not run), read at
    the lab's clocks `freqs`."""
    ds = studies.lab_data(_stored_path(data), threads, file_size, record_size, policy, freqs, **kw)
    return at_clocks(ds, freqs if isinstance(freqs, (list, tuple)) else [freqs]) \
        if _stored_path(data) != data else ds


def _cell(ds) -> str:
    size = {d: int(ds[d].values.max()) for d in (schema.THREADS, schema.FILE_SIZE, schema.RECORD_SIZE)
            if d in ds.coords}
    if len(size) < 3:
        return "its own cell"
    return (f"{size[schema.THREADS]} writers x {size[schema.FILE_SIZE] // 1024} KiB in "
            f"{size[schema.RECORD_SIZE] // 1024} KiB records")


def _guest_label(ds) -> str:
    a = ds.attrs
    return (f"the guest's paper machine (stored result {GUEST_RESULT}, measured {a.get('date', '?')}: "
            f"Linux {a.get('guest_kernel_name', '?')} in the qemu guest, {a.get('guest_cpus', '?')} vCPUs "
            f"each at the clock on a lock-step virtual clock, I/O scheduler {a.get('kernel_iosched', '?')}, "
            f"the {_device(ds)} drive model{_start(ds)}; VIRTUAL TIME; {_cell(ds)})")


def _start(ds) -> str:
    start = STARTS.get(str(ds.attrs.get("start", "")))
    return f", {start}" if start else ""


def _device(ds) -> str:
    return ", ".join(map(str, ds[schema.DEVICE].values)) if schema.DEVICE in ds.coords else "?"


def _host_label(ds, name=None) -> str:
    a = ds.attrs
    where = (f"stored result {name}, measured {a.get('date', '?')} on a {a.get('cpu_logical', '?')}-CPU "
             "machine" if name else "run now on this machine")
    return (f"the real kernel (Linux {a.get('kernel', '?')}, {where}: a fresh ext4 on a "
            f"loop device, the clock emulated by CPU-time dilation, no disk model; {_cell(ds)})")


def _sim_label(ds) -> str:
    return (f"the SIMULATED paper machine ({PAPER_MACHINE}: {ds.attrs.get('sim_cores', '?')} cores, IOzone's polling start, a journal CPU "
            f"of {ds.attrs.get('sim_commit_cpu_us', float('nan')):g} us to start a commit at "
            f"{ds.attrs.get('sim_f_ref_ghz', float('nan')):g} GHz, "
            f"chosen where the paper's effect appears, not measured; {_cell(ds)})")


def _is_host(ds) -> bool:
    return ds.attrs.get("backend") != "sim" and str(ds.attrs.get(schema.MACHINE, "host")) == "host" \
        and ds.attrs.get("freq_mode") in ("real", "emulated")


def _real_side(ds, real_kernel, point) -> Side:
    if _is_host(ds):
        return Side(_host_label(ds), ds, this_run=True)
    if real_kernel == "auto" and studies.real_available("iozone"):
        # ext4 alone, whatever the lab runs: its windows would cost the class minutes
        run = studies.lab_data("auto", quiet=True, **{**point, "policy": "ext4"})
        return Side(_host_label(run), run)
    host = stored(HOST_RESULT)
    return Side(_host_label(host, HOST_RESULT), host)


def sides(ds, data, sim_params, threads=256, file_size="128k", record_size="32k", freqs=(1.6, 3.3),
          reps=3, real_kernel="auto", policy="ext4") -> list[Side]:
    """(a) the SIMULATED paper machine, (b) the guest's paper machine (stored), (c) the real
    kernel, for a lab's run `ds` made from `data`; a side the lab's run is already is that
    run (this_run=True). real_kernel: "auto" (this host's kernel run at the lab's point where
    root is available, else the stored host result), "stored" (the stored one), None (left out).
    `policy` is what the sides run: ext4 (labs 1, 2), ext4 and its windows (lab 3)."""
    if real_kernel not in REAL_KERNEL:
        raise ConfigError("real_kernel", real_kernel, '"auto" | "stored" | None')
    point = dict(threads=threads, file_size=file_size, record_size=record_size, policy=policy,
                 freqs=freqs, reps=reps)
    if data == "sim" and sim_params == "paper_machine":
        out = [Side(_sim_label(ds), ds, this_run=True)]
    else:
        sim = studies.lab_data("sim", quiet=True, sim_params="paper_machine", **point)
        out = [Side(_sim_label(sim), sim)]
    guest = ds if data == GUEST_RESULT else at_clocks(stored(GUEST_RESULT), freqs)
    out.append(Side(_guest_label(guest), guest, this_run=data == GUEST_RESULT))
    if real_kernel is not None:
        out.append(_real_side(ds, real_kernel, point))
    return out
