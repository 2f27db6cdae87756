"""`abtlab fit RUN.nc --model ...`: Bayesian slowdown predictors, baselines, optimal delay."""
from __future__ import annotations

from ..errors import ConfigError

__all__ = ["register"]

MODELS = ("hierarchical", "mechanistic", "glm", "ols", "delay")
BAYESIAN = ("hierarchical", "mechanistic", "delay")     # PyMC: abtlab's 'bayes' extra


def register(sub):
    p = sub.add_parser("fit", help="fit a slowdown predictor or the optimal-delay decision "
                                   "(Bayesian models: pip install 'abtlab[bayes]')",
                       description="hierarchical: P(slowdown) per configuration; mechanistic: "
                                   "ABT latent parameters; glm/ols: statsmodels baselines; "
                                   "delay: posterior of the optimal delayJC window. With "
                                   "--holdout, fits on the other runs and scores the held-out ones. "
                                   "hierarchical, mechanistic and delay need PyMC and ArviZ: "
                                   "pip install 'abtlab[bayes]' (nutpie, faster: 'abtlab[fast]'); "
                                   "glm and ols need only the core.")
    p.add_argument("run", help="a run dataset (.nc or .zarr)")
    p.add_argument("--model", default="hierarchical", help=" | ".join(MODELS))
    p.add_argument("--holdout", help="FACTOR=V[,V][;FACTOR=V]: held-out runs, e.g. threads=64")
    p.add_argument("--var", default="throughput",
                   help="the response: throughput (the paper's: eq. 3 with the write op timed, "
                        "IOzone's default) | throughput_fsync (fsync timed too, IOzone -e)")
    p.add_argument("--out", help="write the posterior (InferenceData NetCDF) here")
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=main)


def _show(title, frame):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    import pandas as pd
    print(f"\n== {title}")
    with pd.option_context("display.max_rows", 500, "display.width", 200, "display.precision", 3):
        print(frame.to_string())


def main(args):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..bayes import compare, decision
    from ..data.store import load
    from ..stats.values import provenance_label
    from ..bayes.data import THROUGHPUTS
    if args.model not in MODELS:
        raise ConfigError("model", args.model, " | ".join(MODELS))
    if args.var not in THROUGHPUTS:
        raise ConfigError("var", args.var, " | ".join(THROUGHPUTS))
    if args.model in BAYESIAN:          # before the dataset loads: say what to install first
        # deferred: every command module loads for `abtlab --help` (see commands/__init__)
        from ..extras import check
        check("bayes", f"--model {args.model} (a Bayesian model)")
    ds = load(args.run)
    print(f"{args.run}: {provenance_label(ds)} (freq_mode={ds.attrs.get('freq_mode', '?')})")
    kw = dict(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed)
    if args.model == "delay":
        if args.holdout:
            raise ConfigError("holdout", args.holdout, "not used with --model delay")
        fit = decision.fit_delay(ds, var=args.var, **kw)
        table = decision.optimal_delay(fit)
        _show("optimal delay per configuration (the most probable optimum; x ext4)",
              decision.decision_summary(table))
        _show("every option: posterior P(optimal), P(wait no worse than ext4), expectations", table)
    elif args.holdout:
        scores, preds, fits = compare.compare(ds, args.holdout, (args.model,), var=args.var, **kw)
        _show(f"held out {args.holdout}: predicted vs observed log {args.var}",
              preds[args.model])
        _show("scores", scores)
        fit = fits[args.model]
    else:
        fit = _fit_all(args.model, ds, kw, args.var)
    if getattr(fit, "diagnostics", None):
        print("\n" + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in fit.diagnostics.items()))
    if args.out:
        if not hasattr(fit, "idata"):
            raise ConfigError("out", args.out, "a Bayesian model (hierarchical, mechanistic, delay)")
        fit.idata.to_netcdf(args.out)
        print(f"wrote {args.out}")
    return 0


def _fit_all(name, ds, kw, var):
    # deferred: every command module loads for `abtlab --help` (see commands/__init__)
    from ..bayes import baselines, data, hierarchical, mechanistic
    if name == "hierarchical":
        fit = hierarchical.fit_hierarchical(ds, var=var, **kw)
        _show("P(slowdown): posterior probability that a faster CPU lowers throughput",
              fit.p_slowdown().drop(columns=["label"]))
    elif name == "mechanistic":
        fit = mechanistic.fit_mechanistic(ds, var=var, **kw)
        _show("ABT latent parameters (ms): D commit, S arrival spread, L lead time, T write",
              fit.parameters().drop(columns=["label"]))
        print(f"phi (non-scaling CPU share) = {float(fit.idata.posterior['phi'].mean()):.3f}, "
              f"psi (CPU share of the spread) = {float(fit.idata.posterior['psi'].mean()):.3f}")
    else:
        table = data.model_table(ds, var)
        fit = baselines.fit_baseline(table, name)
        _show(f"{name} baseline: d log y / d log f per configuration (y: {var})",
              fit.slopes(table).drop(columns=["label"]))
    return fit
