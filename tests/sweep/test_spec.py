import sys
from pathlib import Path

import numpy as np
import pytest

import abtlab
from abtlab import backends
from abtlab.sweep import spec
from abtlab.errors import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
backends.register("fake", "fakebackend:FakeBackend")

GOOD = """
backend = "sim"
seed = 4
[factors]
threads = [16, 32]
policy = ["ext4", "delayjc:window=2ms"]
freq = "1.6,3.3"
device = "loop"
[repetitions]
min = 2
max = 4
target = 0.5
"""


def test_load_and_run_spec(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD)
    s = spec.load_spec(p)
    assert s.backend == "sim" and s.reps.max == 4 and s.seed == 4
    ds = spec.run_spec(s, out=tmp_path / "o.nc", quiet=True)
    assert set(ds.policy.values) == {"ext4", "delayjc:window=2ms,max_resets=64,max_age=1s"}
    assert ds.attrs["freq_mode"] == "simulated"
    back = abtlab.load(tmp_path / "o.nc")
    assert back.sizes["threads"] == 2


@pytest.mark.parametrize("text,field", [
    ('backend = "nope"', "backend"),
    ('backend = "sim"\ncolour = 3', "colour"),
    ('backend = "sim"\nrepetitions = 0', "repetitions"),
    ('backend = "sim"\n[repetitions]\nmin = 1', "repetitions.min"),
    ('backend = "sim"\n[repetitions]\nmin = 3\nmax = 2', "repetitions.max"),
    ('backend = "sim"\n[repetitions]\ntarget = -1', "repetitions.target"),
    ('backend = "sim"\n[repetitions]\nspeed = 1', "repetitions.speed"),
    ('backend = "sim"\n[execution]\ncores = 1', "execution.cores"),
    ('backend = "sim"\n[execution]\norder = "zigzag"', "execution.order"),
    ('backend = "sim"\nseed = "x"', "seed"),
    ('backend = "sim"\n[factors]\nthreads = [0]', "threads"),
    ('backend = "sim" x', "spec"),
])
def test_bad_specs_name_the_field(tmp_path, text, field):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        spec.run_spec(p, out=tmp_path / "o.nc", quiet=True)
    assert e.value.field == field
    assert not (tmp_path / "o.nc").exists()


def test_cli_sweep(tmp_path):
    from abtlab.cli import main
    p = tmp_path / "s.toml"
    p.write_text(GOOD)
    assert main(["sweep", str(p), "--out", str(tmp_path / "c.nc"), "--quiet"]) == 0
    assert main(["sweep", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "d.nc")]) == 2


def test_adaptive_reps_stop_at_target(tmp_path):
    """A quiet point (0.1% RSD) stops at min, a noisy one (5%) runs on until its CI meets
    the target or the cap: a sweep that ran every point to max, or stopped every point at
    min, fails here."""
    from abtlab.stats import ci_halfwidth
    from abtlab.sweep.loop import Reps, run
    rule = Reps(min=3, max=12, target=0.02)
    ds = run("fake", {"policy": ["ext4"], "threads": [1, 64]}, reps=rule, quiet=True, seed=1,
             options={"rsd": "1:0.001"})
    n = {t: int(ds["throughput"].sel(policy="ext4", threads=t).count("rep")) for t in (1, 64)}
    assert n[1] == 3 and 3 < n[64] <= 12, n
    for t in (1, 64):
        v = ds["throughput"].sel(policy="ext4", threads=t).values
        v = v[np.isfinite(v)]
        # either the target is met or the cap is reached
        assert ci_halfwidth(v, 0.95) <= 0.02 or v.size == 12
