"""abtlab.trace.readers: abtlab traces, fio latency logs, Darshan DXT; clear errors on bad files."""
import shutil
import subprocess

import numpy as np
import pytest

from abtlab.trace import readers
from abtlab import trace
from abtlab.errors import ConfigError, TraceError, UnavailableError
from abtlab.trace import RECORD_DTYPE, Op


def recs(n, pid=1, t0=0):
    r = np.zeros(n, RECORD_DTYPE)
    r["pid"], r["tid"], r["op"], r["bytes"] = pid, pid, Op.WRITE, 4096
    r["t_start_ns"] = t0 + 10 * np.arange(n)
    r["t_end_ns"] = r["t_start_ns"] + 5
    return r


# ---- abtlab traces

def test_trace_dir_merges_processes_by_start(tmp_path):
    trace.write(tmp_path / "abtrace.1.trace", recs(3, pid=1, t0=0))
    trace.write(tmp_path / "abtrace.2.trace", recs(2, pid=2, t0=5))
    merged = readers.read(tmp_path)
    assert merged.size == 5
    assert list(merged["pid"]) == [1, 2, 1, 2, 1]
    assert np.all(np.diff(merged["t_start_ns"].astype(np.int64)) >= 0)


def test_trace_dir_without_traces(tmp_path):
    with pytest.raises(TraceError, match="no abtrace"):
        readers.read_abtlab(tmp_path)


def test_truncated_trace_names_file_and_sizes(tmp_path):
    p = tmp_path / "abtrace.7.trace"
    trace.write(p, recs(4))
    p.write_bytes(p.read_bytes()[:-10])
    with pytest.raises(TraceError, match=r"abtrace\.7\.trace.*truncated.*4 records"):
        readers.read(p)
    p.write_bytes(b"ABTT")
    with pytest.raises(TraceError, match="shorter than the 32-byte header"):
        readers.read(p)


def test_not_a_trace(tmp_path):
    p = tmp_path / "x.trace"
    p.write_bytes(b"NOTATRACE" + bytes(40))
    with pytest.raises(TraceError, match="not an abtlab trace"):
        readers.read(p)


def test_dropped_sidecar(tmp_path):
    (tmp_path / "abtrace.42.dropped").write_text("tid=43 recorded=10 dropped=7\ntid=44 recorded=10 dropped=1\n")
    assert readers.dropped_counts(tmp_path) == {(42, 43): 7, (42, 44): 1}
    (tmp_path / "abtrace.42.dropped").write_text("tid=43 recorded=10 dro")
    with pytest.raises(TraceError, match=r"abtrace\.42\.dropped.*line 1"):
        readers.dropped_counts(tmp_path)


def test_unknown_format():
    with pytest.raises(ConfigError) as exc:
        readers.read("x", fmt="strace")
    assert exc.value.field == "fmt"


# ---- fio latency logs

def test_fio_log_exact_records(tmp_path):
    p = tmp_path / "j_lat.1.log"
    # time ms (completion), latency ns, direction, bs, offset, prio
    p.write_text("2, 500000, 0, 4096, 0, 0\n3, 1500000, 1, 8192, 4096, 0\n3, 10, 2, 4096, 0, 0\n")
    r = readers.read(p)                       # auto-detected as fio; the trim is left out
    assert r.size == 2
    assert list(r["op"]) == [Op.READ, Op.WRITE]
    assert list(r["bytes"]) == [4096, 8192]
    assert list(r["t_end_ns"]) == [2_000_000, 3_000_000]
    assert list(r["t_start_ns"]) == [1_500_000, 1_500_000]


def test_fio_log_in_microseconds(tmp_path):
    p = tmp_path / "old_lat.log"
    p.write_text("5, 2000, 1, 4096, 0\n")                 # fio 2: 2000 us
    r = readers.read_fio_log(p, lat_unit="us")
    assert int(r["t_end_ns"][0] - r["t_start_ns"][0]) == 2_000_000
    p.write_text("1, 5000, 1, 4096, 0\n")                 # 5 ms of latency ending at 1 ms
    with pytest.raises(TraceError, match="wrong lat_unit"):
        readers.read_fio_log(p, lat_unit="us")
    with pytest.raises(ConfigError):
        readers.read_fio_log(p, lat_unit="ms")


def test_fio_log_issue_time_column_is_used(tmp_path):
    p = tmp_path / "new_lat.log"
    p.write_text("1, 300, 1, 4096, 0, 0, 700000\n")
    r = readers.read_fio_log(p)
    assert (int(r["t_start_ns"][0]), int(r["t_end_ns"][0])) == (700_000, 700_300)


@pytest.mark.parametrize("text, what", [
    ("1, 5, 1, 4096, 0, 0\n2, 6, 1, 40", "line 2: 4 fields"),        # truncated last line
    ("1, 5, 1\n", "line 1: 3 fields"),                                 # no log_offset
    ("1, x, 1, 4096, 0\n", "non-numeric"),
    ("", "empty"),
    ("1, 5, 7, 4096, 0\n", "direction 7"),
    ("1, 5, 1, 0, 0\n2, 5, 1, 0, 0\n", "averaged log"),
])
def test_bad_fio_logs_name_the_file(tmp_path, text, what):
    p = tmp_path / "bad_lat.1.log"
    p.write_text(text)
    with pytest.raises(TraceError, match=what) as exc:
        readers.read_fio_log(p)
    assert "bad_lat.1.log" in str(exc.value)


def test_fio_log_binary_file(tmp_path):
    p = tmp_path / "bin.log"
    p.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(TraceError, match="bin.log"):
        readers.read(p)


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (make installs it)")
def test_fio_log_from_real_fio(tmp_path):
    subprocess.run(["fio", "--name=j", f"--directory={tmp_path}", "--rw=write", "--bs=8k",
                    "--size=256k", "--numjobs=2", f"--write_lat_log={tmp_path}/lg", "--log_offset=1",
                    "--output=/dev/null"], check=True)
    r = readers.read(f"{tmp_path}/lg_lat.*.log")
    assert r.size == 2 * 32
    assert set(r["bytes"]) == {8192} and set(r["op"]) == {Op.WRITE}
    assert sorted(np.unique(r["tid"])) == [0, 1]
    assert np.all(r["t_end_ns"] >= r["t_start_ns"])


# ---- Darshan DXT

def test_dxt_conversion_of_pydarshan_records():
    import pandas as pd
    dxt = [{"rank": 3, "hostname": "n1",
            "read_segments": pd.DataFrame({"offset": [0, 4096], "length": [4096, 4096],
                                           "start_time": [0.5, 0.1], "end_time": [0.75, 0.2]}),
            "write_segments": pd.DataFrame({"offset": [], "length": [], "start_time": [], "end_time": []})}]
    r = readers.dxt_to_records(dxt)
    assert list(r["t_start_ns"]) == [100_000_000, 500_000_000]
    assert list(r["t_end_ns"]) == [200_000_000, 750_000_000]
    assert set(r["pid"]) == {3} and set(r["op"]) == {Op.READ}


def test_darshan_dxt_example_log_when_installed():
    ok, why = readers.darshan_available()
    if not ok:
        pytest.skip(why)
    import darshan
    from pathlib import Path
    logs = list(Path(darshan.__file__).parent.glob("examples/**/dxt.darshan"))
    if not logs:
        pytest.skip("this darshan package ships no example DXT log")
    r = readers.read(logs[0])                                   # auto: .darshan
    rep = darshan.DarshanReport(str(logs[0]), read_all=False)
    rep.mod_read_all_dxt_records("DXT_POSIX")
    counted = sum(int(x["read_count"]) + int(x["write_count"]) for x in rep.records["DXT_POSIX"].to_df())
    assert r.size == counted > 0
    assert set(r["op"]) <= {Op.READ, Op.WRITE}
    assert np.all(r["t_end_ns"] >= r["t_start_ns"])
    assert np.all(np.diff(r["t_start_ns"].astype(np.int64)) >= 0)
    with pytest.raises(ConfigError):
        readers.read_darshan_dxt(logs[0], module="DXT_STDIO")


def test_darshan_reader_skips_cleanly_or_reads(tmp_path):
    ok, why = readers.darshan_available()
    p = tmp_path / "bad.darshan"
    p.write_bytes(b"not a darshan log")
    if not ok:
        with pytest.raises(UnavailableError, match="darshan"):
            readers.read(p)
        pytest.skip(why)
    with pytest.raises(TraceError, match="bad.darshan"):
        readers.read(p)
