"""Configuration-level design: how a configuration's intercept and frequency slope are
predicted from its factors (the group-level regression of the hierarchical models).

Numeric factors enter as standardised log2 (threads, sizes, files), categorical ones
(policy, device) as treatment dummies, plus policy x log2 threads (the slowdown depends
on both). Only factors with more than one training level enter. New levels of a numeric
factor are fine (that is how unmeasured configurations are predicted); a new policy or
device is not, and raises ConfigError naming it.
"""
from __future__ import annotations

import numpy as np

from ..data import schema
from ..errors import ConfigError

__all__ = ["ConfigDesign"]

_NUMERIC = (schema.THREADS, schema.FILE_SIZE, schema.RECORD_SIZE, schema.FILES)
_CATEGORICAL = (schema.POLICY, schema.DEVICE, schema.MACHINE)


class ConfigDesign:
    """Fitted on the training configurations; `matrix(configs)` for any configurations."""

    def __init__(self, configs):
        self.numeric = {}
        for f in _NUMERIC:
            if f in configs and configs[f].nunique() > 1:
                v = np.log2(configs[f].to_numpy(float))
                self.numeric[f] = (v.mean(), v.std() or 1.0)
        self.levels = {}
        for f in _CATEGORICAL:
            if f in configs:
                lv = sorted(configs[f].astype(str).unique(), key=lambda s: (s != "ext4", s))
                self.levels[f] = lv
        self.interact = len(self.levels.get(schema.POLICY, ())) > 1 and schema.THREADS in self.numeric
        self.columns = self._columns()
        if self.interact and len(configs) < len(self.columns) + 3:
            # too few configurations to leave the interaction any residual freedom
            self.interact = False
            self.columns = self._columns()

    def _columns(self):
        cols = ["intercept"] + [f"log2_{f}" for f in self.numeric]
        for f, lv in self.levels.items():
            cols += [f"{f}[{v}]" for v in lv[1:]]
        if self.interact:
            cols += [f"{schema.POLICY}[{v}]:log2_threads" for v in self.levels[schema.POLICY][1:]]
        return cols

    def matrix(self, configs) -> np.ndarray:
        n = len(configs)
        parts = [np.ones((n, 1))]
        for f, (m, s) in self.numeric.items():
            if f not in configs:
                raise ConfigError(f, None, "a column of the configurations")
            parts.append(((np.log2(configs[f].to_numpy(float)) - m) / s)[:, None])
        for f, lv in self.levels.items():
            vals = configs[f].astype(str).to_numpy()
            bad = sorted(set(vals) - set(lv))
            if bad:
                raise ConfigError(f, bad[0], "a level seen in the fitted data: " + ", ".join(lv))
            parts.append((vals[:, None] == np.asarray(lv[1:])[None, :]).astype(float).reshape(n, -1))
        if self.interact:
            pol = parts[1 + len(self.numeric) + list(self.levels).index(schema.POLICY)]
            lt = parts[1 + list(self.numeric).index(schema.THREADS)]
            parts.append(pol * lt)
        return np.hstack(parts)
