"""ANOVA and regression of a run dataset's measure on its swept factors (statsmodels).

Part of the `abtlab.stats` API (`abtlab.stats.regress`, `abtlab.stats.anova`).
"""
from __future__ import annotations

import numpy as np

from ..data import schema
from ..errors import ConfigError
from .notices import notice, silenced
from .values import _provenance, _values

__all__ = ["regress", "anova"]


def _long_frame(ds, var, factors, log):
    da = _values(ds, var)
    dims = [d for d in da.dims if d != schema.REP]
    if factors is None:
        factors = [d for d in dims if da.sizes[d] > 1]
    factors = list(factors)
    for f in factors:
        if f not in dims:
            raise ConfigError("factors", f, f"dims of {var}: {dims}")
        if da.sizes[f] < 2:
            raise ConfigError("factors", f, "factors with at least 2 levels")
    if not factors:
        raise ConfigError("factors", [], f"at least one dim of {var} with 2 or more levels")
    df = da.to_dataframe(name="y").reset_index()
    df = df[np.isfinite(df["y"])][factors + ["y"]]
    if log:
        if (df["y"] <= 0).any():
            raise ConfigError(var, "values <= 0", "positive values, or log=False")
        df["y"] = np.log(df["y"])
    return df, factors


def regress(ds, var="throughput", factors=None, log=True, order=None, formula=None):
    """Fit OLS of var (log var when log) on the swept factors as categories, with all
    interactions up to `order` (None: full factorial). `formula` (patsy, response `y`,
    factor names as columns) replaces the generated one. Returns the statsmodels result."""
    # deferred: statsmodels is heavy; `import abtlab` and `abtlab run` do without it
    import statsmodels.formula.api as smf
    df, factors = _long_frame(ds, var, factors, log)
    if formula is None:
        terms = " + ".join(f"C({f})" for f in factors)
        if order is None or order >= len(factors):
            formula = "y ~ " + terms.replace(" + ", " * ")
        elif isinstance(order, int) and order >= 1:
            formula = f"y ~ ({terms})**{order}"
        else:
            raise ConfigError("order", order, f"an interaction order 1..{len(factors)} or None")
    try:
        with silenced():
            fit = smf.ols(formula, df).fit()
    except Exception as exc:  # patsy reports formula errors with its own types
        raise ConfigError("formula", formula, f"a patsy formula over y and {factors}: {exc}") from None
    with silenced():            # its lazy properties warn as they are first computed
        no_dof = fit.df_resid < 1
        if not no_dof:
            _say_degenerate(fit, var)
    if no_dof:
        raise ConfigError("factors", factors, "fewer interaction terms (order=) or more "
                          "repetitions: the model leaves no residual degrees of freedom")
    fit.abtlab_attrs = _provenance(ds, var=var, log=log, formula=formula)
    return fit


def _say_degenerate(fit, var) -> None:
    """What makes the fit's F and p meaningless, in a line each (statsmodels warns of
    neither, or only as a division by zero): a singular design, no residual spread."""
    model = fit.model
    missing = model.exog.shape[1] - int(model.rank)
    if missing:
        notice(f"the design is singular: {missing} of {model.exog.shape[1]} coefficients cannot "
               "be estimated (a combination of levels without a finite run, or factors that "
               "vary together); their ANOVA rows are not defined")
    # rounding's residue on a log scale, not spread: ~1e-30 against ~1e-4 of real runs
    if fit.mse_resid <= 1e-24 * max(float(np.mean(model.endog ** 2)), 1.0):
        notice(f"{var} does not vary between repetitions of a point (zero residual variance): "
               "the F statistics and p-values are not meaningful")


def anova(ds, var="throughput", factors=None, log=True, order=None):
    """Type-2 ANOVA table (statsmodels anova_lm) of regress(ds, var, factors, log, order)."""
    # deferred: statsmodels is heavy; `import abtlab` and `abtlab run` do without it
    import statsmodels.api as sm
    fit = regress(ds, var, factors, log, order)
    with silenced():
        table = sm.stats.anova_lm(fit, typ=2)
    table.attrs = dict(fit.abtlab_attrs)
    return table
