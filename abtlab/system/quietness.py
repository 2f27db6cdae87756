"""How quiet this host is before a run on it: CPU load (the load average and the CPUs'
busy share over half a second), the frequency governor, other abtlab processes, swap (in
use, and pages moved during the sample). `abtlab doctor --host` prints it; a host run
prints its warnings as it starts and keeps the line in its dataset (attr `host_quiet`),
so a host result says how quiet the host was.

The thresholds are a judgement, said in each warning: a busy CPU share above BUSY or a
load above LOAD_PER_CPU per CPU takes CPU time from the workload's threads (the
mechanism abtlab measures is a race between CPU work and the journal), and swapping
adds disk I/O of its own."""
from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Quietness", "check", "announce", "other_runs", "parse", "busy_reason", "ATTR"]

ATTR = "host_quiet"          # the dataset attr of a host run
BUSY = 0.20                  # CPUs' busy share above this: warn
LOAD_PER_CPU = 0.5           # 1-minute load per CPU above this: warn
SAMPLE = 0.25                # s over which busy share and swap traffic are measured
_WORDS = ("run", "sweep", "demo", "report", "lab", "bps", "sera", "calibrate")


@dataclass
class Quietness:
    cpus: int
    load1: float
    busy: float                      # share of all CPUs' time busy over the sample
    governor: str
    others: list = field(default_factory=list)      # "pid N: command" of other abtlab runs
    swap_used_mib: float = 0.0
    swap_pages: int = 0              # pages swapped in + out during the sample

    def warnings(self) -> list[str]:
        out = []
        if self.busy > BUSY:
            out.append(f"the CPUs were {self.busy:.0%} busy before the run (above {BUSY:.0%}): "
                       f"other work takes CPU time from the workload's threads")
        if self.load1 > LOAD_PER_CPU * self.cpus:
            out.append(f"load average {self.load1:.2f} on {self.cpus} CPUs (above "
                       f"{LOAD_PER_CPU:g} per CPU)")
        if self.others:
            out.append(f"{len(self.others)} other abtlab process{'es' * (len(self.others) > 1)} "
                       f"running: " + "; ".join(self.others[:3]))
        if self.swap_pages:
            out.append(f"the host is swapping ({self.swap_pages} pages in {SAMPLE:g} s): its disk "
                       f"I/O mixes with the run's")
        return out

    def line(self) -> str:
        """One line for the dataset's attrs and the doctor."""
        return (f"CPUs {self.busy:.0%} busy over {SAMPLE:g} s, load {self.load1:.2f} on "
                f"{self.cpus} CPUs; governor {self.governor}; other abtlab processes "
                f"{len(self.others)}; swap used {self.swap_used_mib:.0f} MiB, "
                f"{self.swap_pages} pages moved in {SAMPLE:g} s")


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)      # idle + iowait
    return sum(fields) - idle, sum(fields)


def _vm(keys) -> dict:
    out = {}
    for line in Path("/proc/vmstat").read_text().splitlines():
        k, _, v = line.partition(" ")
        if k in keys:
            out[k] = int(v)
    return out


def _swap_used_mib() -> float:
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, _, v = line.partition(":")
        info[k] = int(v.split()[0]) if v.split() else 0
    return (info.get("SwapTotal", 0) - info.get("SwapFree", 0)) / 1024


def _governor() -> str:
    p = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    try:
        return p.read_text().strip()
    except OSError:
        return "none (no cpufreq here: abtlab emulates frequencies)"


def _family() -> set[int]:
    """This process and its ancestors (a shell, make, pytest running it)."""
    pids, pid = {os.getpid()}, os.getpid()
    for _ in range(64):
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 1:
            break
        pids.add(pid)
    return pids


def other_runs() -> list[str]:
    """'pid N: command' of abtlab processes running a command (run, sweep, demo, ...)
    outside this process's line of ancestors."""
    mine, found = _family(), []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in mine:
            continue
        try:
            argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        at = next((i for i, a in enumerate(argv) if a.endswith("abtlab") or a == "abtlab"), None)
        if at is not None and len(argv) > at + 1 and argv[at + 1] in _WORDS:
            found.append(f"pid {d.name}: abtlab {' '.join(argv[at + 1:at + 4]).strip()}")
    return sorted(found)


def check(sample: float = SAMPLE) -> Quietness:
    """Measure it now (takes `sample` seconds)."""
    keys = ("pswpin", "pswpout")
    b0, t0, v0 = *_cpu_times(), _vm(keys)
    time.sleep(sample)
    b1, t1, v1 = *_cpu_times(), _vm(keys)
    busy = (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0
    return Quietness(cpus=os.cpu_count() or 1, load1=os.getloadavg()[0], busy=busy,
                     governor=_governor(), others=other_runs(), swap_used_mib=_swap_used_mib(),
                     swap_pages=sum(v1.get(k, 0) - v0.get(k, 0) for k in keys))


def announce(stream=None) -> str:
    """Check as a host run starts: each warning on stderr at once, and the line for the
    dataset's attrs (ATTR)."""
    q = check()
    for w in q.warnings():
        print(f"abtlab: warning: the host is not quiet: {w} (abtlab doctor --host)",
              file=stream or sys.stderr, flush=True)
    return q.line()


_LINE = re.compile(r"CPUs (?P<busy>[\d.]+)% busy over [\d.]+ s, load (?P<load>[\d.]+) on (?P<cpus>\d+) CPUs; "
                   r"governor (?P<gov>.*); other abtlab processes (?P<others>\d+); swap used "
                   r"(?P<swap>[\d.]+) MiB, (?P<pages>\d+) pages moved")


def parse(line) -> Quietness | None:
    """The Quietness a dataset's `host_quiet` attr says (Quietness.line read back; the
    other runs by count only), or None where it has none or another form."""
    m = _LINE.match(str(line)) if line else None
    if not m:
        return None
    return Quietness(cpus=int(m["cpus"]), load1=float(m["load"]), busy=float(m["busy"]) / 100,
                     governor=m["gov"], others=["?"] * int(m["others"]),
                     swap_used_mib=float(m["swap"]), swap_pages=int(m["pages"]))


def busy_reason(attrs) -> str:
    """Why a host run's comparisons name no side: the host was busy as the run started (its
    ATTR line: CPUs busy or load above the thresholds), said in words; "" for a quiet host or
    a dataset without the line (not a host run). On this 2-core host, shared with other
    work, the same run twice in a row named a side in one sitting and none in the next
    (lab 2's counts, study 07's locks and O_DIRECT, study 05's metrics): a CI from one
    sitting does not carry to the next."""
    q = parse(dict(attrs or {}).get(ATTR))
    if q is None or not (q.busy > BUSY or q.load1 > LOAD_PER_CPU * q.cpus):
        return ""
    return (f"the host was busy as the run started (CPUs {q.busy:.0%} busy, load {q.load1:.2f} on "
            f"{q.cpus} CPUs; abtlab doctor --host), and on a busy host the same run names a side in one "
            "sitting and none in the next")
