"""abtlab.bayes.sampling: the sampler leaves nothing behind in the temporary directory
(pytensor's numba backend writes each generated function's source there)."""
import tempfile

import numpy as np
import pytest

from abtlab.bayes.sampling import SAMPLERS, sample
from abtlab.errors import ConfigError

pm = pytest.importorskip("pymc")


def _model():
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=np.random.default_rng(0).normal(0.5, 1, 20))
    return m


def test_nutpie_leaves_no_generated_sources(tmp_path, monkeypatch):
    pytest.importorskip("nutpie")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    idata, info = sample(_model(), draws=50, tune=50, chains=1, sampler="nutpie", var_names=["mu"])
    assert info["sampler"] == "nutpie" and idata.posterior["mu"].size == 50
    assert list(tmp_path.iterdir()) == []
    assert tempfile.tempdir == str(tmp_path)            # restored


def test_bad_sampler_names_the_field():
    with pytest.raises(ConfigError, match="sampler"):
        sample(_model(), sampler="metropolis")
    assert "nutpie" in SAMPLERS
