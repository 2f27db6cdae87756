"""Bayesian slowdown predictors (PyMC; sampled with nutpie when installed).

- hierarchical: log throughput ~ log frequency per configuration, partially pooled;
  P(slowdown) per configuration and predictions for unmeasured ones.
- mechanistic: the ABT model's quantities (commit duration, arrival spread, lead
  time, CPU scaling) as latent parameters, from unblocked and commit counts.
- baselines: statsmodels OLS / Gamma GLM on the same table.
- compare: held-out accuracy (RMSE, 90% coverage, slowdown sign) and ArviZ LOO.
- decision: the posterior of the optimal delayJC window under the wait constraint.
PyMC, nutpie, ArviZ and statsmodels are imported only when a model is fitted.
"""
from __future__ import annotations

import os
from pathlib import Path
import importlib

__all__ = ["fit_hierarchical", "fit_mechanistic", "fit_baseline", "fit_delay", "optimal_delay",
           "compare", "split", "model_table"]


def __getattr__(name):
    where = {"fit_hierarchical": "hierarchical", "fit_mechanistic": "mechanistic",
             "fit_baseline": "baselines", "fit_delay": "decision", "optimal_delay": "decision",
             "compare": "compare", "split": "compare", "model_table": "data"}
    if name in where:
        return getattr(importlib.import_module(f"{__name__}.{where[name]}"), name)
    raise AttributeError(name)


# PyTensor finds a BLAS by the library names of conda's and Debian's reference packages
# (cblas, or openblas with gfortran); Debian's OpenBLAS (libopenblas-dev, which `make setup`
# installs) is linked by `-lblas` alone, so PyTensor warns its C ops will be "severely
# degraded" and runs gemm without BLAS although the library is there. Say the flag, unless
# the user configured PyTensor themselves.
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


def _blas_flags() -> None:
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    if "blas__ldflags" in flags or os.environ.get("PYTENSORRC") or (Path.home() / ".pytensorrc").exists():
        return
    if any((Path(d) / "libblas.so").exists() for d in _LIB_DIRS):
        os.environ["PYTENSOR_FLAGS"] = ",".join(f for f in (flags, "blas__ldflags=-lblas") if f)


_blas_flags()
