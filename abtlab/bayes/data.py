"""Run dataset -> model table: one row per run, the factors, log of the response.

The Bayesian models and the baselines all read this table, so they see the same runs.
A *configuration* is one combination of the non-frequency factors (policy, threads,
file_size, record_size, files, device); the frequency is the regressor inside it.

The response is the paper's quantity by default: `throughput`, eq. 3 with the write op
timed (IOzone's default report); `throughput_fsync` (IOzone -e) is selectable
(THROUGHPUTS). A dataset written before the two were told apart is read with today's
definitions, recomputed from its records (abtlab.model.remeasure).
"""
from __future__ import annotations

import numpy as np

from ..data import schema
from ..errors import ConfigError
from ..model.remeasure import upgrade

__all__ = ["CONFIG_FACTORS", "THROUGHPUTS", "model_table", "factors_of", "config_frame",
           "commit_durations"]

# the machine too: host and guest points (or two guest kernels) are different configurations
CONFIG_FACTORS = (schema.POLICY, schema.THREADS, schema.FILE_SIZE, schema.RECORD_SIZE,
                  schema.FILES, schema.DEVICE, schema.MACHINE)
_EXTRA = ("unblocked_threads", "threads_clear_of_commits", "commits", "mean_commit_wait")
# the IOzone throughputs a predictor can model: the paper's (write op) first
THROUGHPUTS = ("throughput", "throughput_fsync")


def _check_dataset(ds, var):
    # deferred: xarray is heavy; `import abtlab` and `abtlab run` do without it
    import xarray as xr
    if not isinstance(ds, xr.Dataset):
        raise ConfigError("dataset", type(ds).__name__,
                          "an xarray.Dataset from abtlab.run, a sweep or abtlab.sim.simulate")
    if var not in ds.data_vars:
        have = sorted(v for v in ds.data_vars if v in schema.VARIABLES)
        raise ConfigError("var", var, "a variable of this dataset: " + (", ".join(have) or "none"))
    if schema.FREQ not in ds[var].dims:
        raise ConfigError(schema.FREQ, None, f"{var} swept over {schema.FREQ}")
    if any(ds.sizes[d] == 0 for d in ds[var].dims):
        raise ConfigError("dataset", "empty", f"at least one run of {var}")


def model_table(ds, var="throughput", min_freqs=2):
    """One row per run with a finite positive `var`: factor columns, freq_ghz, rep,
    y, log_y, log_f, the run_id when present, and the variables the mechanistic model
    and the decision read (when present). ConfigError names the field when the
    dataset cannot be modelled."""
    ds = upgrade(ds)
    _check_dataset(ds, var)
    names = [var] + [v for v in _EXTRA + (schema.RUN_ID,) if v in ds.data_vars and v != var]
    df = ds[names].to_dataframe().reset_index()
    df = df[np.isfinite(df[var].to_numpy(float))]
    if df.empty:
        raise ConfigError(var, "no finite values", "at least one finite run")
    if (df[var] <= 0).any():
        raise ConfigError(var, float(df[var].min()), "positive values (modelled on a log scale)")
    nf = df[schema.FREQ].nunique()
    if nf < min_freqs:
        raise ConfigError(schema.FREQ, sorted(df[schema.FREQ].unique()),
                          f"at least {min_freqs} frequency levels with data")
    if (df[schema.FREQ] <= 0).any():
        raise ConfigError(schema.FREQ, float(df[schema.FREQ].min()), "frequencies in GHz > 0")
    df = df.rename(columns={var: "y"})
    df["log_y"] = np.log(df["y"].to_numpy(float))
    df["log_f"] = np.log(df[schema.FREQ].to_numpy(float))
    df.attrs.update(var=var, freq_mode=ds.attrs.get("freq_mode", "?"),
                    backend=ds.attrs.get("backend", "?"))
    return df.reset_index(drop=True)


def factors_of(table):
    """The configuration factors present as columns of a model table."""
    return [f for f in CONFIG_FACTORS if f in table.columns]


def config_frame(table):
    """Unique configurations of a table (DataFrame, one row each) and each row's index."""
    facs = factors_of(table)
    keys = table[facs].astype(str).agg("|".join, axis=1)
    uniq, first, idx = np.unique(keys.to_numpy(), return_index=True, return_inverse=True)
    configs = table.iloc[first][facs].reset_index(drop=True)
    configs["label"] = [_label(r, facs) for _, r in configs.iterrows()]
    return configs, idx


def _label(row, facs):
    return " ".join(f"{f}={row[f]}" for f in facs)


def commit_durations(ds, run_ids):
    """Mean journal-commit duration (s) of each run from the commit traces; NaN where a
    run has no commit records (or the dataset carries no traces)."""
    out = np.full(len(run_ids), np.nan)
    if "commit_run" not in ds.data_vars or ds.sizes.get(schema.COMMIT_DIM, 0) == 0:
        return out
    run = ds["commit_run"].values.astype(np.int64)
    dur = (ds["commit_end"].values - ds["commit_start"].values).astype(float) * 1e-9
    ok = dur > 0
    n = int(max(run.max(initial=-1), np.max(run_ids, initial=-1))) + 1
    s = np.bincount(run[ok], dur[ok], minlength=n)
    c = np.bincount(run[ok], minlength=n)
    ids = np.asarray(run_ids, np.int64)
    valid = ids >= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out[valid] = s[ids[valid]] / c[ids[valid]]
    return out
