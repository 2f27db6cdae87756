"""One repetition of one point, as every backend and the simulator return it; the data
layer assembles many into a run dataset (abtlab.data.assemble)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["RunResult"]


@dataclass
class RunResult:
    """One repetition of one point.

    scalars: variable name (schema.VARIABLES) -> float.
    ops: structured array of trace.RECORD_DTYPE (may be empty).
    commits: dict of column (schema.COMMIT_COLUMNS without the commit_ prefix) -> array.
    batches: dict of column (schema.BATCH_COLUMNS without the batch_ prefix) -> array.
    attrs: facts about this run to merge into dataset attrs (freq_mode, filesystem, ...).
    """
    scalars: dict
    ops: np.ndarray | None = None
    commits: dict | None = None
    batches: dict | None = None
    attrs: dict = field(default_factory=dict)
