"""The metarates driver's write_bytes option and its two rates."""
import numpy as np
import pytest

import abtlab
from abtlab.backends.metarates import write_bytes
from abtlab.errors import ConfigError
from abtlab.trace import Op


@pytest.mark.parametrize("value,expected", [(0, 0), ("0", 0), ("4096", 4096), ("4k", 4096)])
def test_write_bytes_values(value, expected):
    assert write_bytes(value) == expected


@pytest.mark.parametrize("value", [-1, "-4k", "1g", "lots", True])
def test_bad_write_bytes_is_refused_before_any_run(tmp_path, value):
    with pytest.raises(ConfigError) as e:
        abtlab.run("metarates", out=tmp_path / "m.nc", threads="2", reps=1, quiet=True,
                   write_bytes=value)
    assert e.value.field == "write_bytes"
    assert not list(tmp_path.iterdir())


@pytest.mark.root
def test_written_files_and_both_rates(tmp_path, built_native):
    out = tmp_path / "m.nc"
    abtlab.run("metarates", out=out, threads="4", files="4", write_bytes="4k", reps=1, quiet=True)
    ds = abtlab.load(out)
    ops = ds.abt.ops(ds.abt.run_ids()[0])
    writes = ops[ops["op"] == Op.WRITE]
    assert len(writes) == 16 and np.all(writes["bytes"] == 4096)
    fcr, agg = float(ds["fcr"].squeeze()), float(ds["fcr_aggregate"].squeeze())
    assert np.isfinite(fcr) and np.isfinite(agg) and fcr != agg
    assert "not an aggregate" in ds["fcr"].attrs["long_name"]
