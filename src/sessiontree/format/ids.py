"""Identifiers and clocks: entry ids, session ids (UUIDv7), ISO timestamps, all injectable for replays.

Pure helpers; no I/O beyond reading the system clock and ``os.urandom``.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Container
from datetime import UTC, date, datetime

__all__ = [
    "SESSION_ID_PATTERN",
    "Clock",
    "IdFactory",
    "assert_valid_session_id",
    "epoch_ms",
    "iso_from_ms",
    "new_entry_id",
    "now_ms",
    "parse_iso_ms",
    "uuid7",
]

Clock = Callable[[], int]
"""A clock returns the current time in epoch milliseconds."""

IdFactory = Callable[[Container[str]], str]
"""An entry-id factory gets the ids already in use and returns a fresh one."""

# ``\Z``, not ``$``: Python's ``$`` also matches before a final "\n", JavaScript's does not.
SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\Z")
_SESSION_ID_MESSAGE = (
    "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
    "and start and end with an alphanumeric character"
)


def now_ms() -> int:
    """The system clock in epoch milliseconds (the default ``Clock``)."""
    return time.time_ns() // 1_000_000


def iso_from_ms(ms: int) -> str:
    """Epoch milliseconds as JavaScript's ``Date.toISOString()`` (``2025-12-03T14:00:01.123Z``)."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:\d{2})?$"
)


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MAX_DATE_MS = 8.64e15  # JavaScript's Date range: 100,000,000 days either side of the epoch
_FIRST_SAFE_MS = (date(1, 1, 2).toordinal() - _EPOCH_ORDINAL) * 86_400_000
_LAST_SAFE_MS = (date(9999, 12, 30).toordinal() - _EPOCH_ORDINAL) * 86_400_000


def _local_offset_ms(utc_ms: int) -> int:
    """The local UTC offset at ``utc_ms`` (0 where the platform cannot say, e.g. far outside its range)."""
    clamped = min(max(utc_ms, _FIRST_SAFE_MS), _LAST_SAFE_MS)  # the zone's offset near the ends of time
    try:
        offset = datetime.fromtimestamp(clamped / 1000, tz=UTC).astimezone().utcoffset()
    except (OverflowError, OSError, ValueError):
        return 0
    return 0 if offset is None else int(offset.total_seconds() * 1000)


def parse_iso_ms(text: object) -> float | None:
    """``new Date(text).getTime()`` for the ISO forms pi files contain; ``None`` where JS gives NaN.

    Never raises: computed with calendar arithmetic rather than ``datetime.timestamp()``, which fails for
    zone-less times near the ends of its range.
    """
    if not isinstance(text, str):
        return None
    m = _ISO.match(text)
    if not m:
        return None
    year, month, day, hh, mm, ss, frac, tz = m.groups()
    try:
        days = date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    hours, minutes, seconds = int(hh or 0), int(mm or 0), int(ss or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        return None
    ms = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000 + int((frac or "0")[:3].ljust(3, "0"))
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        ms -= sign * (int(tz[1:3]) * 60 + int(tz[4:6])) * 60_000
    elif tz is None and hh is not None:
        ms -= _local_offset_ms(ms)  # JavaScript reads a date-time without an offset as local time
    if abs(ms) > _MAX_DATE_MS:
        return None
    return float(ms)


def epoch_ms(text: object) -> int | None:
    """An entry's ISO timestamp as epoch milliseconds (``None`` when it does not parse)."""
    value = parse_iso_ms(text)
    return None if value is None else int(value)


def new_entry_id(existing: Container[str]) -> str:
    """8 random lowercase hex characters, regenerated on collision; a full UUID after 100 collisions."""
    for _ in range(100):
        candidate = os.urandom(4).hex()
        if candidate not in existing:
            return candidate
    return str(uuid.uuid4())


class _UUIDv7:
    """Monotonic UUIDv7 generator (RFC 9562 layout), as pi's: a per-millisecond 32-bit sequence."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._seq = 0

    def __call__(self, ms: int | None = None, random_bytes: bytes | None = None) -> str:
        with self._lock:
            now = now_ms() if ms is None else ms
            rnd = random_bytes if random_bytes is not None else os.urandom(16)
            if now > self._last_ms:
                self._last_ms = now
                self._seq = int.from_bytes(rnd[6:10], "big")
            else:
                self._seq += 1
                if self._seq > 0xFFFFFFFF:
                    self._last_ms += 1
                    self._seq = 0
            ts = self._last_ms
            seq = self._seq
            tail = rnd[10:16]
        b = bytearray(16)
        b[0:6] = ts.to_bytes(6, "big")
        b[6] = 0x70 | ((seq >> 28) & 0x0F)
        b[7] = (seq >> 20) & 0xFF
        b[8] = 0x80 | ((seq >> 14) & 0x3F)
        b[9] = (seq >> 6) & 0xFF
        b[10] = ((seq & 0x3F) << 2) | (tail[0] & 0x03)
        b[11:16] = tail[1:6]
        return str(uuid.UUID(bytes=bytes(b)))


uuid7 = _UUIDv7()
"""Return a new lowercase UUIDv7 string (monotonic within the process)."""


def assert_valid_session_id(session_id: str) -> None:
    """Raise ``ValueError`` with pi's message unless ``session_id`` is a valid custom session id."""
    if not isinstance(session_id, str) or not SESSION_ID_PATTERN.match(session_id):
        raise ValueError(_SESSION_ID_MESSAGE)
