"""A guest point stopped at its deadline (the run option guest_deadline): what its CPUs,
interrupts and threads were doing, read from the snapshots /init took just before the
workload and at the deadline (before.*, stall.*: /proc/stat, /proc/interrupts, every
task's /proc stat line). A point that never ends is then a measurement, not a timeout."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

__all__ = ["is_stalled", "cpu_split", "interrupt_counts", "task_table", "summary", "keep"]

_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def is_stalled(files: dict) -> bool:
    return "stalled" in files


def _text(files: dict, name: str) -> str:
    return files.get(name, b"").decode(errors="replace")


def _cpu_line(text: str) -> list:
    for line in text.splitlines():
        if line.startswith("cpu "):
            return [int(v) for v in line.split()[1:1 + len(_CPU_FIELDS)]]
    return []


def cpu_split(files: dict) -> dict:
    """Share of all vCPUs' time from the workload's start to the deadline, per /proc/stat
    field (user, system, irq, softirq, idle...), in [0, 1]."""
    before, after = _cpu_line(_text(files, "before.stat")), _cpu_line(_text(files, "stall.stat"))
    if not before or len(before) != len(after):
        return {}
    delta = [a - b for a, b in zip(after, before)]
    total = sum(delta) or 1
    return {name: d / total for name, d in zip(_CPU_FIELDS, delta)}


def _interrupts(text: str) -> dict:
    out = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(":")
        counts = [int(v) for v in rest.split() if v.isdigit()]
        if counts:
            out[name.strip()] = sum(counts)
    return out


def interrupt_counts(files: dict) -> dict:
    """Interrupts per kind (LOC timer, RES reschedule IPI, ...) from the start to the deadline."""
    before, after = _interrupts(_text(files, "before.interrupts")), _interrupts(_text(files, "stall.interrupts"))
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}


def task_table(files: dict) -> list:
    """(tid, comm, state, CPU ticks) of every task at the deadline, from its
    /proc/PID/task/TID/stat line: fields 1, 2, 3 and utime + stime."""
    rows = []
    for line in _text(files, "stall.tasks").splitlines():
        head, _, rest = line.partition(") ")
        if not rest:
            continue
        pid, _, comm = head.partition(" (")
        f = rest.split()
        rows.append((int(pid), comm, f[0], int(f[11]) + int(f[12])))
    return rows


def summary(files: dict, comm: str) -> str:
    """One paragraph: the CPU split, the busiest interrupts, the workload's threads by state."""
    split = cpu_split(files)
    cpu = ", ".join(f"{k} {v:.0%}" for k, v in sorted(split.items(), key=lambda kv: -kv[1]) if v >= 0.01)
    irqs = sorted(interrupt_counts(files).items(), key=lambda kv: -kv[1])[:3]
    rows = [r for r in task_table(files) if r[1] == comm]
    states = Counter(r[2] for r in rows)
    busiest = sorted(task_table(files), key=lambda r: -r[3])[:3]
    return (f"CPU time since the start: {cpu or 'not read'}; interrupts: "
            f"{', '.join(f'{k} {v}' for k, v in irqs) or 'not read'}; {len(rows)} {comm} threads "
            f"by state: {', '.join(f'{s} {n}' for s, n in states.most_common()) or 'none'}; "
            f"busiest tasks (CPU ticks): {', '.join(f'{c}[{p}] {t}' for p, c, _, t in busiest)}")


def keep(files: dict, directory, label: str) -> Path:
    """Write every file of the stalled point under directory/label; returns that folder."""
    folder = Path(directory) / label
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name.replace("/", "_")).write_bytes(data)
    return folder
