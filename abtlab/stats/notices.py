"""numpy's, scipy's and statsmodels' warnings where abtlab's statistics run into data they
cannot use: what means something to the user (zero variance, a singular design, a zero
reference) is said once, as abtlab's own one-line warning (AbtWarning, which the command
line prints as `abtlab stats: warning: ...`); the libraries' own warnings (division by
zero inside a t-test, a rank-deficient covariance) are silenced, since the result they
come with is NaN or inf and the notice says why."""
from __future__ import annotations

import contextlib
import sys
import warnings

import numpy as np

from ..errors import AbtWarning

__all__ = ["silenced", "notice", "plain"]


@contextlib.contextmanager
def silenced():
    """The libraries' numeric warnings (RuntimeWarning, statsmodels' own) silenced, and
    numpy's floating-point errors too: the caller says what the NaN or inf means."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", module=r"statsmodels|scipy|patsy")
        # statsmodels' own (singular design, ...), attributed to the caller's line; only
        # where it is loaded already (`abtlab run`'s summary does without it)
        if "statsmodels" in sys.modules:
            from statsmodels.tools.sm_exceptions import ModelWarning
            warnings.simplefilter("ignore", ModelWarning)
        yield


def notice(message: str) -> None:
    """One line for the user (abtlab's own warning), attributed to the caller's caller."""
    warnings.warn(message, AbtWarning, stacklevel=3)


def plain(value) -> str:
    """A level or a value as a person writes it: 3.3, ext4 (not np.float64(3.3))."""
    if isinstance(value, np.generic):
        value = value.item()
    return f"{value:g}" if isinstance(value, float) else str(value)
