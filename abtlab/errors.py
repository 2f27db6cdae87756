"""abtlab's exception types: every user-facing failure is one of these."""

__all__ = ["AbtError", "ConfigError", "TraceError", "UnavailableError", "RunError", "DiskFullError", "AbtWarning"]


class AbtError(Exception):
    """Base of every error abtlab raises on purpose."""


class ConfigError(AbtError, ValueError):
    """Bad input: names the field, what was given and what is accepted."""

    def __init__(self, field, given, accepted):
        self.field, self.given, self.accepted = field, given, accepted
        super().__init__(f"{field}: got {_plain(given)!r}; accepted: {accepted}")


def _plain(value):
    """numpy's scalars as the numbers they are (3.3, not np.float64(3.3)), in lists too."""
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value


class TraceError(AbtError):
    """A trace file that is missing, truncated, of another version or not a trace."""


class UnavailableError(AbtError):
    """What was asked cannot run on this machine; the message says why."""


class RunError(AbtError):
    """A workload or system step failed while running."""


class DiskFullError(AbtError):
    """No space left on the device a dataset, a part or the resume state goes to: the
    message names the path, the space it needs and what is free (abtlab.data.space)."""


class AbtWarning(UserWarning):
    """Something the user should know that does not stop the command (a torn part set
    aside, a statistic that cannot be computed): one line, `abtlab CMD: warning: ...`."""
