"""abtlab's exception types: every user-facing failure is one of these."""

__all__ = ["AbtError", "ConfigError", "TraceError", "UnavailableError", "RunError"]


class AbtError(Exception):
    """Base of every error abtlab raises on purpose."""


class ConfigError(AbtError, ValueError):
    """Bad input: names the field, what was given and what is accepted."""

    def __init__(self, field, given, accepted):
        self.field, self.given, self.accepted = field, given, accepted
        super().__init__(f"{field}: got {given!r}; accepted: {accepted}")


class TraceError(AbtError):
    """A trace file that is missing, truncated, of another version or not a trace."""


class UnavailableError(AbtError):
    """What was asked cannot run on this machine; the message says why."""


class RunError(AbtError):
    """A workload or system step failed while running."""
