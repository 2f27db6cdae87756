"""One sampling path for every abtlab.bayes model: nutpie when it is installed (a
compiled NUTS, several times faster here), else PyMC's own NUTS; timing and
convergence diagnostics recorded next to the draws."""
from __future__ import annotations

import contextlib
import sys
import tempfile
import time

import numpy as np

from ..errors import ConfigError
from ..progress import _in_jupyter, shown, timed
from ..extras import require

__all__ = ["sample", "diagnostics", "draws", "SAMPLERS"]

SAMPLERS = ("auto", "nutpie", "pymc")


def _nutpie_available():
    try:
        import nutpie  # noqa: F401
        return True
    except ImportError:
        return False


def sample(model, draws=1000, tune=1000, chains=2, seed=0, sampler="auto", target_accept=0.9,
           var_names=None):
    """Draw from a PyMC model. Returns (InferenceData, info dict with sampler, compile_s,
    sample_s). var_names: what to keep (nutpie compiles less when it is short)."""
    if sampler not in SAMPLERS:
        raise ConfigError("sampler", sampler, " | ".join(SAMPLERS))
    for name, v, lo in (("draws", draws, 10), ("tune", tune, 0), ("chains", chains, 1)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ConfigError(name, v, f"an integer >= {lo}")
    use = "nutpie" if sampler == "nutpie" or (sampler == "auto" and _nutpie_available()) else "pymc"
    bar = shown() and _live_display()
    t0 = time.perf_counter()
    if use == "nutpie":
        nutpie = require("nutpie", "fast")
        with _own_tempdir():
            with timed("compiling the model (nutpie)", quiet=not shown()):
                compiled = nutpie.compile_pymc_model(model, var_names=var_names)
            t1 = time.perf_counter()
            with timed(f"sampling: {chains} chains x ({tune} tune + {draws} draws)",
                       quiet=not shown() or bar):
                idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=chains, cores=chains,
                                      seed=seed, progress_bar=bar, target_accept=target_accept)
    else:
        pm = require("pymc", "bayes")
        t1 = t0
        # PyMC compiles inside pm.sample; its bar starts when sampling does
        with timed(f"compiling the model and sampling (PyMC): {chains} chains x ({tune} tune + "
                   f"{draws} draws)", quiet=not shown()), model:
            idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                              progressbar=bar, target_accept=target_accept,
                              compute_convergence_checks=False)
    t2 = time.perf_counter()
    return idata, {"sampler": use, "compile_s": t1 - t0, "sample_s": t2 - t1}


def _live_display() -> bool:
    """A sampler's own live bar only where it redraws in place (a terminal or Jupyter);
    in a log it would be hundreds of lines, so there the phases are lines with times."""
    return _in_jupyter() or sys.stderr.isatty()


@contextlib.contextmanager
def _own_tempdir():
    """pytensor's numba backend writes each generated function's source to a temporary
    file it never removes (~25 per model): give it a directory that goes afterwards."""
    before = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="abtlab-pytensor-") as d:
        tempfile.tempdir = d
        try:
            yield d
        finally:
            tempfile.tempdir = before


def diagnostics(idata, var_names, info=None):
    """Max R-hat, min bulk ESS, divergences, ESS per second of sampling."""
    az = require("arviz", "bayes")
    summ = az.summary(idata, var_names=var_names, kind="diagnostics")
    div = int(np.asarray(idata.sample_stats["diverging"]).sum())
    out = {"rhat_max": float(summ["r_hat"].max()), "ess_bulk_min": float(summ["ess_bulk"].min()),
           "divergences": div}
    if info:
        out.update(info)
        out["ess_per_s"] = out["ess_bulk_min"] / max(info["sample_s"], 1e-9)
    return out


def draws(idata, name):
    """Posterior draws of `name` with chains and draws flattened into the first axis."""
    v = idata.posterior[name]
    return np.asarray(v).reshape(-1, *v.shape[2:])
