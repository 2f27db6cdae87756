"""Shipped sample runs load, follow the schema and say how they were made."""
from pathlib import Path

import numpy as np
import pytest

import abtlab

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "data" / "samples").glob("*.nc"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_is_a_valid_labelled_run(path):
    ds = abtlab.load(path)
    abtlab.data.schema.validate(ds)
    assert ds.attrs["freq_mode"] in ("real", "emulated")
    assert ds.attrs["command"].startswith("abtlab run")
    assert np.isfinite(ds["throughput"]).all()
    rid = int(ds.abt.run_ids(policy="ext4")[0])
    assert ds.abt.ops(rid).size > 0 and ds.abt.commits(rid)["end"].size > 0


def test_there_is_a_sample():
    assert SAMPLES
