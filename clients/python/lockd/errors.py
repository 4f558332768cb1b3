"""The exceptions of the lockd client: one base class, one class per outcome
an application handles differently (could not acquire in time, no majority,
lost it later, no connection, refused before sending)."""

from __future__ import annotations

import builtins


class LockdError(Exception):
    """Base of every lockd error. `code` is the reply's code (`QUORUM`,
    `NOTHELD`, ...) or a client-side code (`TIMEOUT`, `LOST`, `CONNECTION`,
    `INVALID`); `text` is the rest of the reply line."""

    def __init__(self, code: str, text: str = "") -> None:
        self.code = code
        self.text = text
        super().__init__(f"{code} {text}".strip())


class Timeout(LockdError, builtins.TimeoutError):
    """The wait passed before the lock was granted (lockd answered TIMEOUT).
    Also a builtin TimeoutError."""

    def __init__(self, text: str = "wait passed") -> None:
        super().__init__("TIMEOUT", text)


class QuorumError(LockdError):
    """No majority of the Redis masters answered in time (ERR QUORUM)."""


class LockLost(LockdError):
    """A lock (or leadership) this client held is no longer held: lockd sent
    LOST, the session ended (connection gone and not resumable), or the
    lease lockd last confirmed ended without a new confirmation (the local
    deadline)."""

    def __init__(self, text: str = "lock lost") -> None:
        super().__init__("LOST", text)


class ConnectionError(LockdError, builtins.ConnectionError):
    """No lockd could be reached, or the connection broke mid-request."""

    def __init__(self, text: str = "connection lost") -> None:
        super().__init__("CONNECTION", text)


class InvalidArgument(LockdError, ValueError):
    """Refused before anything was sent: a key, value or number lockd would
    reject, or one that could not be sent as one request word (a blank, CR,
    LF, NUL or other non-printable byte, or too long)."""

    def __init__(self, text: str) -> None:
        super().__init__("INVALID", text)


def from_reply(line: str) -> LockdError:
    """The exception for an `ERR CODE text` reply line."""
    parts = line.split(" ", 2)
    code = parts[1] if len(parts) > 1 else "UNKNOWN"
    text = parts[2] if len(parts) > 2 else ""
    if code == "QUORUM":
        return QuorumError(code, text)
    return LockdError(code, text)
