"""ds.abt.ops / commits as labelled DataFrames beside the raw arrays."""
import abtlab
import abtlab.present.accessor  # noqa: F401  (registers ds.abt)
from abtlab.data.run_frames import OP_NAMES


def test_ops_and_commits_frames_label_the_raw_records(tmp_path):
    ds = abtlab.run("sim", out=str(tmp_path / "r.nc"), threads=8, freq="1.6", reps=2, quiet=True)
    rid = ds.abt.run_ids()[0]
    raw, df = ds.abt.ops(rid), ds.abt.ops(rid, frame=True)
    assert len(df) == len(raw) > 0
    assert set(df.op) <= set(OP_NAMES.values()) and {"write", "fsync"} <= set(df.op)
    assert (df.duration_ns == df.t_end_ns - df.t_start_ns).all() and (df.duration_ns >= 0).all()
    assert df.t_start_ns.is_monotonic_increasing
    assert df.bytes.sum() == raw["bytes"].sum()
    assert (df.groupby("op", observed=True).size()["write"]
            == (raw["op"] == abtlab.trace.Op.WRITE).sum())
    raw_c, c = ds.abt.commits(rid), ds.abt.commits(rid, frame=True)
    assert list(c.columns) == ["tid", "start_ns", "locking_ns", "flushing_ns", "logging_ns",
                               "end_ns", "handles", "blocks", "duration_ns"]
    assert len(c) == len(raw_c["tid"]) > 0
    assert (c.duration_ns == raw_c["end"] - raw_c["start"]).all()
