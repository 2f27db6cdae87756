"""Frequentist baselines on the same model table: OLS of log throughput and a Gamma
GLM (log link) of throughput, each with the frequency interacting with every factor
(so each configuration gets its own slope through the factors, as in the hierarchical
model, but without pooling)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..stats.notices import notice
from .data import config_frame, factors_of

__all__ = ["BaselineFit", "fit_baseline", "KINDS"]

KINDS = ("ols", "glm")


def _formula(table, response):
    terms = []
    for f in factors_of(table):
        if table[f].nunique() < 2:
            continue
        # a factor of names (policy, device, machine) is categorical; sizes and counts
        # enter on a log2 scale
        numeric = pd.api.types.is_numeric_dtype(table[f])
        terms.append(f"np.log2({f})" if numeric else f"C({f})")
    if not terms:                   # one configuration: one intercept, one slope
        return f"{response} ~ x"
    rhs = " + ".join(terms)
    if "C(policy)" in terms and "np.log2(threads)" in terms:
        rhs += " + C(policy):np.log2(threads)"     # the slowdown depends on both
    return f"{response} ~ ({rhs}) * x"


@dataclass
class BaselineFit:
    kind: str
    result: object
    log_fref: float
    train: object

    def _frame(self, table):
        df = table.copy()
        df["x"] = df["log_f"] - self.log_fref
        for f in factors_of(self.train):
            if f in ("policy", "device") and f in df:
                bad = sorted(set(df[f].astype(str)) - set(self.train[f].astype(str)))
                if bad:
                    raise ConfigError(f, bad[0], "a level seen in the fitted data: "
                                      + ", ".join(sorted(self.train[f].astype(str).unique())))
        return df

    def _exog(self, df):
        # deferred: patsy is heavy; `import abtlab` and `abtlab run` do without it
        import patsy
        data = self.result.model.data
        info = getattr(data, "model_spec", None) or getattr(data, "design_info")
        return np.asarray(patsy.build_design_matrices([info], df)[0])

    def predict_interval(self, table, level=0.9):
        """Mean of log y and a `level` predictive interval for every row."""
        # deferred: scipy is heavy; `import abtlab` and `abtlab run` do without it
        from scipy import stats
        df = self._frame(table)
        if self.kind == "ols":
            fr = self.result.get_prediction(df).summary_frame(alpha=1 - level)
            return fr["mean"].to_numpy(), fr["obs_ci_lower"].to_numpy(), fr["obs_ci_upper"].to_numpy()
        mu = np.asarray(self.result.predict(df))
        shape = 1.0 / self.result.scale
        lo, hi = (stats.gamma.ppf(q, shape, scale=mu / shape) for q in ((1 - level) / 2, (1 + level) / 2))
        return np.log(mu), np.log(lo), np.log(hi)

    def slopes(self, table):
        """Per configuration: predicted d log y / d log f and its standard error,
        P(slope < 0) from the normal approximation (the frequentist analogue)."""
        # deferred: scipy is heavy; `import abtlab` and `abtlab run` do without it
        from scipy import stats
        configs, _ = config_frame(table)
        df = self._frame(configs.assign(log_f=self.log_fref))
        D = self._exog(df.assign(x=1.0)) - self._exog(df.assign(x=0.0))
        slope = D @ np.asarray(self.result.params)
        se = np.sqrt(np.einsum("ij,jk,ik->i", D, np.asarray(self.result.cov_params()), D))
        out = configs.copy()
        out["slope"], out["slope_se"] = slope, se
        out["p_slowdown"] = stats.norm.cdf(-slope / np.maximum(se, 1e-12))
        return out


def fit_baseline(table, kind="ols"):
    """Fit an OLS (log y) or Gamma-GLM (y, log link) baseline to a model table."""
    # deferred: patsy is heavy; `import abtlab` and `abtlab run` do without it
    import patsy
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    if kind not in KINDS:
        raise ConfigError("model", kind, " | ".join(KINDS))
    log_fref = float(np.mean(np.unique(table["log_f"])))
    df = table.assign(x=table["log_f"] - log_fref)
    formula = _formula(df, "log_y" if kind == "ols" else "y")
    try:
        _check_identified(kind, formula, df)
        if kind == "ols":
            res = smf.ols(formula, df).fit()
        else:
            res = smf.glm(formula, df, family=sm.families.Gamma(sm.families.links.Log())).fit()
    except ConfigError:
        raise
    except (patsy.PatsyError, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        raise ConfigError("model", kind, f"a dataset it can fit ({formula}: "
                          f"{str(exc).splitlines()[0]})") from None
    # both scales are relative (a log's variance, a Gamma's dispersion): real runs give
    # ~1e-4 and more, repetitions that are all the same rounding's ~1e-30
    if float(res.scale) < 1e-20:
        notice("the runs do not vary between repetitions (constant data): the fit's "
               "standard errors and p_slowdown are not meaningful")
    return BaselineFit(kind, res, log_fref, table)


def _check_identified(kind, formula, df):
    """Refuse a fit whose coefficients the runs cannot all determine, with room left
    for the residual scale (its intervals and p_slowdown need one)."""
    # deferred: patsy is heavy; `import abtlab` and `abtlab run` do without it
    import patsy
    _, X = patsy.dmatrices(formula, df, return_type="dataframe")
    rank, n = np.linalg.matrix_rank(X.to_numpy()), len(X)
    if rank < X.shape[1] or n <= rank:
        raise ConfigError("model", kind, f"a dataset with more runs than coefficients, each "
                          f"determined ({formula}: {X.shape[1]} coefficients, rank {rank}, "
                          f"{n} runs): add repetitions or frequencies")
