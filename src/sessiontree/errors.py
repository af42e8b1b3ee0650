"""The exception hierarchy of sessiontree: one base class with a ``kind``, a subclass per failure family.

Holds no logic beyond formatting; every module raises these instead of bare exceptions.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousReferenceError",
    "CorruptSessionError",
    "ResourceError",
    "SessionError",
    "SessionLockedError",
    "SessionNotFoundError",
    "StorageError",
]


class SessionError(Exception):
    """Base class for every error sessiontree raises about a session.

    ``kind`` is a short machine-readable code (pi's harness codes: ``not_found``, ``invalid_session``,
    ``invalid_entry``, ``invalid_fork_target``, ``storage``, ``locked``, ``invalid_argument``, ``unknown``;
    and sessiontree's own: ``ambiguous``, ``not_a_file``, ``not_a_session``, ``read_only``, ``invalid_resource``).
    """

    kind: str = "unknown"

    def __init__(
        self, message: str, *, kind: str | None = None, path: str | None = None, line: int | None = None
    ) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind
        self.path = path
        self.line = line


class SessionNotFoundError(SessionError):
    """An entry, session or file that does not exist ("Entry <id> not found")."""

    kind = "not_found"


class CorruptSessionError(SessionError):
    """The file cannot be read as a session without losing data (e.g. a damaged header)."""

    kind = "invalid_session"


class SessionLockedError(SessionError):
    """Another writer (process or manager) holds the session file's lock."""

    kind = "locked"


class StorageError(SessionError):
    """An operating-system level failure while reading or writing a session."""

    kind = "storage"


class ResourceError(SessionError):
    """A prompt resource that cannot be used: a skill's or template's broken front matter, an unreadable or
    oversized file, a damaged ``trust.json`` (``path`` and ``line`` say where)."""

    kind = "invalid_resource"


class AmbiguousReferenceError(SessionError):
    """An id prefix, label or session name that matches more than one thing; ``candidates`` lists them."""

    kind = "ambiguous"

    def __init__(self, message: str, *, candidates: list[str], path: str | None = None) -> None:
        super().__init__(message, path=path)
        self.candidates = candidates
