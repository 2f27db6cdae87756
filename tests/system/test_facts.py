import psutil

from abtlab.system import facts


def test_cores_and_memory_as_psutil_gives_them():
    """Read from /sys and /proc without psutil, the same numbers as psutil's."""
    got = facts.collect()
    assert got["cpu_physical"] == (psutil.cpu_count(logical=False) or 0)
    assert got["cpu_logical"] == (psutil.cpu_count(logical=True) or 0)
    assert got["memory_bytes"] == psutil.virtual_memory().total


def test_psutil_answers_where_sys_and_proc_do_not(tmp_path, monkeypatch):
    """With /sys and /proc/meminfo gone, the numbers are psutil's: a psutil that answers
    what no machine has (7 cores, 12345 pages) shows it was asked."""
    monkeypatch.setattr(facts, "_CPUS", str(tmp_path / "none"))
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 7)
    assert facts._physical_cores() == 7
    total, real_open = 12345 * 4096, open

    def no_meminfo(path, *a, **k):
        if path == "/proc/meminfo":
            raise FileNotFoundError(path)
        return real_open(path, *a, **k)
    monkeypatch.setattr("builtins.open", no_meminfo)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("vm", (), {"total": total}))
    assert facts._memory_bytes() == total
