"""Parsers of the real tools' outputs: pure functions from text to numbers.

IOzone prints kB as 1024 bytes; mdtest prints rates in operations per second; fio's
JSON gives bytes/s per job computed over a runtime in whole milliseconds. Each parser
raises RunError naming the tool and what was missing, never returns a guess.
"""
from __future__ import annotations

import json
import re

from ..errors import RunError

__all__ = ["parse_iozone", "parse_mdtest", "parse_fio"]

_IOZ_VERSION = re.compile(r"Version \$Revision: ([\d.]+) \$")
_IOZ_CHILDREN = re.compile(r"Children see throughput for\s+(\d+) initial writers\s*=\s*([\d.]+) kB/sec")
_IOZ_PARENT = re.compile(r"Parent sees throughput for\s+(\d+) initial writers\s*=\s*([\d.]+) kB/sec")
_IOZ_CHILD = re.compile(r"Child\[(\d+)\] xfer count =\s*([\d.]+) kB, Throughput =\s*([\d.]+) kB/sec")
_MD_VERSION = re.compile(r"^(mdtest-\S+) was launched with (\d+) total task", re.M)
_MD_CREATE = re.compile(r"SUMMARY rate.*?\n(?:.*\n)*?\s*File creation\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")
_MD_FILES = re.compile(r"^(\d+) tasks, (\d+) files", re.M)


def _need(match, tool, what):
    if match is None:
        raise RunError(f"{tool} output has no {what}")
    return match


def parse_iozone(text: str) -> dict:
    """IOzone throughput-mode initial write (`-i 0 -t N ... -C`): version, the children's
    sum (bytes/s, IOzone's headline and eq. 3's sum of per-thread rates), the parent's
    figure, and each child's rate (bytes/s) in child order."""
    version = _need(_IOZ_VERSION.search(text), "iozone", "'Version $Revision' line").group(1)
    children = _need(_IOZ_CHILDREN.search(text), "iozone", "'Children see throughput' line")
    parent = _need(_IOZ_PARENT.search(text), "iozone", "'Parent sees throughput' line")
    per_child = sorted((int(i), float(kb) * 1024, float(rate) * 1024)
                       for i, kb, rate in _IOZ_CHILD.findall(text))
    threads = int(children.group(1))
    if per_child and len(per_child) != threads:
        raise RunError(f"iozone output lists {len(per_child)} children of {threads}")
    return {"version": version, "threads": threads,
            "children_bytes_per_s": float(children.group(2)) * 1024,
            "parent_bytes_per_s": float(parent.group(2)) * 1024,
            "child_bytes": [b for _, b, _ in per_child],
            "child_bytes_per_s": [r for _, _, r in per_child]}


def parse_mdtest(text: str) -> dict:
    """mdtest summary: version, tasks, files, and the File creation rate (max, min, mean
    over iterations, files/s: all ranks' files / the phase time between barriers)."""
    head = _need(_MD_VERSION.search(text), "mdtest", "'mdtest-... was launched with' line")
    create = _need(_MD_CREATE.search(text), "mdtest", "'File creation' rate in its SUMMARY rate")
    files = _MD_FILES.search(text)
    return {"version": head.group(1), "tasks": int(head.group(2)),
            "files": int(files.group(2)) if files else None,
            "create_rate_max": float(create.group(1)), "create_rate_min": float(create.group(2)),
            "create_rate_mean": float(create.group(3))}


def parse_fio(text: str) -> dict:
    """fio --output-format=json: version and, per job, bytes written, write bw (bytes/s
    over fio's runtime, whole ms) and that runtime (s)."""
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise RunError(f"fio output is not JSON: {exc}") from exc
    if not isinstance(data, dict) or not data.get("jobs"):
        raise RunError("fio output has no jobs (run with --output-format=json)")
    jobs = []
    for job in data["jobs"]:
        w = job.get("write") or {}
        if job.get("error"):
            raise RunError(f"fio job {job.get('jobname')!r} failed: error {job['error']}")
        jobs.append({"name": job.get("jobname", ""), "bytes": float(w.get("io_bytes", 0)),
                     "bytes_per_s": float(w.get("bw_bytes", 0)),
                     "runtime_s": float(w.get("runtime", 0)) / 1e3})
    return {"version": str(data.get("fio version", "")), "jobs": jobs}
