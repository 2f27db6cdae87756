"""What a fit shows while it works: the compile as a line with its time, then the
sampling; and no PyTensor BLAS warning where `make setup` installed OpenBLAS."""
import subprocess
import sys
from pathlib import Path

import pytest

from abtlab.bayes import _LIB_DIRS


def test_compile_and_sampling_are_named_with_their_times(capsys, monkeypatch):
    pm = pytest.importorskip("pymc")
    monkeypatch.delenv("ABTLAB_PROGRESS", raising=False)
    from abtlab.bayes.sampling import sample
    with pm.Model() as m:
        pm.Normal("mu", 0.0, 1.0)
    idata, info = sample(m, draws=20, tune=20, chains=1, seed=0)
    err = capsys.readouterr().err
    assert "compiling the model" in err
    assert "done in" in err
    if info["sampler"] == "nutpie":   # compile and sampling apart (PyMC compiles inside its sample)
        line = next(ln for ln in err.splitlines() if ln.startswith("compiling the model (nutpie): done in"))
        assert float(line.split("done in ")[1].split()[0]) == pytest.approx(info["compile_s"], abs=0.5)
        assert "sampling: 1 chains x (20 tune + 20 draws)" in err
    assert idata.posterior["mu"].size == 20


@pytest.mark.skipif(not any((Path(d) / "libblas.so").exists() for d in _LIB_DIRS),
                    reason="no linkable BLAS (make setup installs libopenblas-dev)")
def test_no_blas_warning_on_a_set_up_machine(tmp_path):
    code = ("import warnings; warnings.simplefilter('error')\n"
            "import abtlab.bayes, pytensor\n"
            "print(pytensor.config.blas__ldflags)")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("PYTENSOR_FLAGS", "PYTENSORRC")}
    env["HOME"] = str(tmp_path)        # no ~/.pytensorrc of the user's
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "could not link to a BLAS" not in out.stderr
    assert out.stdout.strip() == "-lblas"
