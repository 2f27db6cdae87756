import numpy as np
import pytest

from abtlab import trace
from abtlab.errors import TraceError


def _records(n=5):
    r = np.zeros(n, trace.RECORD_DTYPE)
    r["pid"] = 42
    r["tid"] = np.arange(n)
    r["op"] = trace.Op.WRITE
    r["bytes"] = 32768
    r["t_start_ns"] = np.arange(n) * 1000 + 10 ** 12
    r["t_end_ns"] = r["t_start_ns"] + 500
    return r


def test_round_trip(tmp_path):
    recs = _records(7)
    trace.write(tmp_path / "t.trace", recs)
    back = trace.read(tmp_path / "t.trace", kind=trace.Kind.OPS)
    assert back.dtype == trace.RECORD_DTYPE
    np.testing.assert_array_equal(back, recs)


def test_empty_round_trip(tmp_path):
    trace.write(tmp_path / "e.trace", np.zeros(0, trace.RECORD_DTYPE))
    assert trace.read(tmp_path / "e.trace").size == 0


def test_truncated_is_named(tmp_path):
    p = tmp_path / "t.trace"
    trace.write(p, _records(4))
    data = p.read_bytes()
    p.write_bytes(data[:-5])
    with pytest.raises(TraceError, match="truncated"):
        trace.read(p)


def test_not_a_trace(tmp_path):
    p = tmp_path / "x.trace"
    p.write_bytes(b"hello world, this is not a trace at all!!")
    with pytest.raises(TraceError, match="not an abtlab trace"):
        trace.read(p)
    with pytest.raises(TraceError, match="shorter than"):
        (tmp_path / "s").write_bytes(b"ABT")
        trace.read(tmp_path / "s")
    with pytest.raises(TraceError, match="does not exist"):
        trace.read(tmp_path / "missing")


def test_wrong_version_and_kind(tmp_path):
    p = tmp_path / "v.trace"
    trace.write(p, _records(1))
    raw = bytearray(p.read_bytes())
    raw[8] = 99
    p.write_bytes(bytes(raw))
    with pytest.raises(TraceError, match="version 99"):
        trace.read(p)
    trace.write(p, _records(1), kind=trace.Kind.BATCHES)
    with pytest.raises(TraceError, match="kind 2"):
        trace.read(p, kind=trace.Kind.OPS)


def test_header_matches_c(built_native):
    """The C header's enum values and sizes are the ones the reader uses."""
    text = (built_native / "include" / "abt_trace.h").read_text()
    for op in trace.Op:
        assert f"ABT_OP_{op.name} = {int(op)}" in text
    assert f"ABT_TRACE_VERSION {trace.VERSION}" in text
