"""The kernel history study's tables (abtlab.studies.kernel_history runs the rows):
the high/low throughput ratio of each row with its CI and test, the demo's opening
answer table, the paper's mechanism and the timing terms, each row labelled with its
kind of data."""
from __future__ import annotations

import math

import numpy as np

from ..data import schema
from ..data.display import display_unit
from ..errors import ConfigError
from ..model import terms
from ..stats import format_ratio, test_slowdown
from ..stats.values import provenance_label
from ..studies.kernel_history import ROWS, History

__all__ = ["ratio_table", "answer_table", "mechanism_table", "terms_table"]


def ratio_table(hist: History, f_low=None, f_high=None, level=0.95):
    """One row per (study row, policy): throughput ratio f_high/f_low with its CI
    (Fieller) and the one-sided test of "slower at f_high" (abtlab.stats.test_slowdown),
    the kind of data, and for a missing study row the reason in `note`."""
    # deferred: pandas adds ~0.35 s CPU to `abtlab lab`'s start (classroom -> paper_terms -> here)
    import pandas as pd
    pt = hist.point
    f_low = pt.freqs[0] if f_low is None else f_low
    f_high = pt.freqs[-1] if f_high is None else f_high
    out = []
    for row in ROWS:
        ds = hist.runs.get(row)
        if ds is None:
            out.append({"row": row, "policy": "", "data": "", "note": hist.missing.get(row, "not run")})
            continue
        for pol in [str(p) for p in ds[schema.POLICY].values]:
            rec = _ratio_row(ds.sel({schema.POLICY: [pol]}), f_low, f_high, level)
            out.append({"row": row, "policy": pol, "data": provenance_label(ds), **rec})
    df = pd.DataFrame(out, columns=["row", "policy", "machine", "data", "ratio", "ci_low",
                                    "ci_high", "n_low", "n_high", "p", "fsync_ratio",
                                    "fsync_ci_low", "fsync_ci_high", "note"])
    df.attrs.update(f_low=float(f_low), f_high=float(f_high), level=level)
    return df


def _ratio_row(ds, f_low, f_high, level) -> dict:
    """The paper's throughput (write op timed) ratio with its test, and the -e one
    (fsync timed) beside it when the run has it."""
    t = test_slowdown(ds, "throughput", f_low, f_high, level=level)
    fs = {"fsync_ratio": math.nan, "fsync_ci_low": math.nan, "fsync_ci_high": math.nan}
    if "throughput_fsync" in ds and np.isfinite(ds["throughput_fsync"].values).any():
        tf = test_slowdown(ds, "throughput_fsync", f_low, f_high, level=level).iloc[0]
        fs = {"fsync_ratio": tf["ratio"], "fsync_ci_low": tf["ci_low"], "fsync_ci_high": tf["ci_high"]}
    if len(t) != 1:
        many = [c for c in t.columns if c in schema.FACTOR_DIMS and t[c].nunique() > 1]
        raise ConfigError(many[0] if many else "ds", "several levels", "one point per study row")
    r = t.iloc[0]
    machine = str(ds[schema.MACHINE].values[0]) if schema.MACHINE in ds.dims else "simulator"
    return {"machine": machine, "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
            "n_low": int(r["n_low"]), "n_high": int(r["n_high"]), "p": r["p"], **fs, "note": _verdict(r)}


def _verdict(r) -> str:
    if r["ci_high"] < 1:
        return "SLOWER at the higher frequency (CI below 1)"
    if r["ci_low"] > 1:
        return "faster at the higher frequency (CI above 1)"
    return "no clear difference (CI contains 1)"


def answer_table(hist: History, policy="ext4", f_low=None, f_high=None, level=0.95, digits=2):
    """The demo's opening table: per study row the `policy` ratio of the paper's
    throughput (write op timed) as '0.53 [0.45, 0.61]', the kind of data, the ratio with
    the fsync timed (IOzone -e) beside it, n per frequency and the verdict (on the
    paper's quantity), or why the row is missing."""
    if policy not in hist.point.policies:
        raise ConfigError("policy", policy, "a policy of the study: " + ", ".join(hist.point.policies))
    df = ratio_table(hist, f_low, f_high, level)
    df = df[(df.policy == policy) | (df.policy == "")]      # "": a missing row
    head = f"{df.attrs['f_high']:g}/{df.attrs['f_low']:g} GHz [{level:.0%} CI]"
    fhead = f"with fsync timed {df.attrs['f_high']:g}/{df.attrs['f_low']:g}"

    def fmt(rs, los, his):
        return [format_ratio(r, lo, hi, digits) if math.isfinite(r) else "-"
                for r, lo, hi in zip(rs.astype(float), los.astype(float), his.astype(float))]
    table = df.assign(**{head: fmt(df.ratio, df.ci_low, df.ci_high),
                         fhead: fmt(df.fsync_ratio, df.fsync_ci_low, df.fsync_ci_high),
                         "n": [f"{a:.0f} / {b:.0f}" if math.isfinite(a) else "-"
                               for a, b in zip(df.n_low.astype(float), df.n_high.astype(float))]})
    table = table[["row", "machine", "data", head, fhead, "n", "note"]].fillna("").set_index("row")
    table.index.name = None                   # one header row in the rendered table
    table.attrs = dict(df.attrs, policy=policy)
    return table


def mechanism_table(hist: History, policy="ext4"):
    """Per study row and frequency, means over repetitions of what the paper's
    mechanism moves: throughput (in the unit of abtlab.data.display, MiB/s, of the row's
    own clock; the paper's, write op timed, and with the fsync timed), journal commits, unblocked threads (the trace
    evidence, where the run recorded it), writers whose write op shares no time with a
    commit (span overlap, not the paper's count) and the mean commit wait (ms)."""
    import pandas as pd                 # deferred: see ratio_table
    rate, k = display_unit("bytes/s", [float(np.nanmax(ds["throughput"].values))
                                       for ds in hist.runs.values() if "throughput" in ds])
    cols = {"throughput": (f"throughput [{rate}]", k), "throughput_fsync": (f"with fsync [{rate}]", k),
            "commits": ("commits", 1),
            "unblocked_threads": ("unblocked_threads", 1), "threads_clear_of_commits": ("no_commit_overlap", 1),
            "mean_commit_wait": ("commit_wait [ms]", 1e3)}
    frames = []
    for row in ROWS:
        ds = hist.runs.get(row)
        if ds is None or policy not in [str(p) for p in ds[schema.POLICY].values]:
            continue
        m = ds[[v for v in cols if v in ds]].sel({schema.POLICY: policy}).mean(schema.REP)
        df = m.to_dataframe().reset_index()
        for var, (name, scale) in cols.items():
            if var in df:
                df[name] = df.pop(var) * scale
        frames.append(df.assign(row=row, data=provenance_label(ds)))
    if not frames:
        raise ConfigError("policy", policy, "a policy of the study: " + ", ".join(hist.point.policies))
    out = pd.concat(frames, ignore_index=True)
    keep = ["row", schema.FREQ] + [n for n, _ in cols.values() if n in out] + ["data"]
    return out[keep].set_index(["row", schema.FREQ])


def terms_table(hist: History, policy="ext4"):
    """Per study row and frequency, the timing terms that decide the paper's account
    (abtlab.model.terms, in ms; `writers_before_first_commit` a count): whether the lead
    writer's delay to the first commit shrinks with the clock faster than the others'
    lag behind it."""
    import pandas as pd                 # deferred: see ratio_table
    frames = []
    for row in ROWS:
        ds = hist.runs.get(row)
        if ds is None or policy not in [str(p) for p in ds[schema.POLICY].values]:
            continue
        t = terms.terms_table(ds.sel({schema.POLICY: [policy]}))
        for name in terms.TERMS:
            if name != "writers_before_first_commit":
                t[name] = t[name] * 1e3
        frames.append(t.assign(row=row, data=provenance_label(ds)))
    if not frames:
        raise ConfigError("policy", policy, "a policy of the study: " + ", ".join(hist.point.policies))
    out = pd.concat(frames, ignore_index=True)
    keep = ["row", schema.FREQ, *terms.TERMS, "data"]
    return out[keep].rename(columns={k: f"{k}_ms" for k in terms.TERMS
                                     if k != "writers_before_first_commit"}).set_index(["row", schema.FREQ])
