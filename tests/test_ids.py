"""Ids and time: pi's UUIDv7 vector (harness session-uuid.test.ts), entry ids, ISO timestamps, custom ids."""

from __future__ import annotations

import re
from collections.abc import Container, Iterator

import pytest

from sessiontree.format import ids
from sessiontree.format.ids import (
    SESSION_ID_PATTERN,
    _UUIDv7,
    assert_valid_session_id,
    epoch_ms,
    iso_from_ms,
    new_entry_id,
    parse_iso_ms,
    uuid7,
)

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
SESSION_ID_MESSAGE = (
    "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
    "and start and end with an alphanumeric character"
)


# -- UUIDv7 (packages/agent/test/harness/session-uuid.test.ts) ----------------------------------------------
def test_uuid7_uses_the_rfc_9562_layout_and_preserves_monotonic_order() -> None:
    generator = _UUIDv7()
    time_ms = 0x0123456789AB
    first_random = bytes(6) + bytes([0xFF, 0xFF, 0xFF, 0xFE]) + bytes([0x01, 0x11, 0x22, 0x33, 0x44, 0x55])
    first = generator(time_ms, first_random)
    second = generator(time_ms, bytes(16))
    third = generator(time_ms, bytes(16))  # the 32-bit sequence overflows: the timestamp advances by 1 ms
    assert first == "01234567-89ab-7fff-bfff-f91122334455"
    assert second == "01234567-89ab-7fff-bfff-fc0000000000"
    assert third == "01234567-89ac-7000-8000-000000000000"
    assert first < second < third


def test_uuid7_stays_monotonic_when_the_clock_goes_back() -> None:
    generator = _UUIDv7()
    later = generator(2_000_000, bytes(16))
    earlier_clock = generator(1_000_000, bytes(16))
    assert earlier_clock > later
    assert earlier_clock[:13] == later[:13]  # still the later millisecond, sequence incremented


def test_uuid7_of_the_system_clock_is_lowercase_and_increasing() -> None:
    values = [uuid7() for _ in range(50)]
    assert all(UUID7.match(v) for v in values)
    assert values == sorted(values)
    assert len(set(values)) == len(values)


def test_uuid7_embeds_the_millisecond_timestamp() -> None:
    value = _UUIDv7()(1_764_770_401_123, bytes(16))
    assert int(value.replace("-", "")[:12], 16) == 1_764_770_401_123


# -- entry ids --------------------------------------------------------------------------------------------
def test_entry_ids_are_eight_lowercase_hex_characters() -> None:
    values = {new_entry_id(()) for _ in range(200)}
    assert all(re.fullmatch(r"[0-9a-f]{8}", v) for v in values)
    assert len(values) > 190  # 32 random bits: collisions among 200 are practically impossible


def test_entry_ids_are_regenerated_on_collision(monkeypatch: pytest.MonkeyPatch) -> None:
    draws: Iterator[bytes] = iter([b"\x00\x00\x00\x01", b"\x00\x00\x00\x01", b"\xab\xcd\xef\x01"])
    monkeypatch.setattr(ids.os, "urandom", lambda n: next(draws))
    assert new_entry_id({"00000001"}) == "abcdef01"


class _Everything(Container[str]):
    def __init__(self) -> None:
        self.asked = 0

    def __contains__(self, item: object) -> bool:
        self.asked += 1
        return True


def test_entry_ids_fall_back_to_a_full_uuid_after_100_collisions() -> None:
    everything = _Everything()
    value = new_entry_id(everything)
    assert everything.asked == 100
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", value)


# -- timestamps -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ms", "iso"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_764_770_401_123, "2025-12-03T14:00:01.123Z"),
        (1_764_770_401_000, "2025-12-03T14:00:01.000Z"),
        (1_764_770_401_007, "2025-12-03T14:00:01.007Z"),
    ],
)
def test_iso_timestamps_are_javascript_to_iso_string(ms: int, iso: str) -> None:
    assert iso_from_ms(ms) == iso
    assert parse_iso_ms(iso) == ms
    assert epoch_ms(iso) == ms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-01-01T00:00:00Z", 1_735_689_600_000),  # pi's fixtures contain timestamps without milliseconds
        ("2025-01-01T00:00:00.5Z", 1_735_689_600_500),
        ("2025-01-01T01:00:00+01:00", 1_735_689_600_000),
        ("2025-01-01T00:00:00.123456Z", 1_735_689_600_123),
        ("2025-01-01", 1_735_689_600_000),
    ],
)
def test_parse_iso_reads_the_forms_pi_files_contain(text: str, expected: int) -> None:
    assert parse_iso_ms(text) == expected


@pytest.mark.parametrize("text", ["", "nope", "2025-13-01T00:00:00Z", "2025-02-30T00:00:00Z", None, 12, []])
def test_parse_iso_gives_none_where_javascript_gives_nan(text: object) -> None:
    assert parse_iso_ms(text) is None
    assert epoch_ms(text) is None


# -- custom session ids (pi's assertValidSessionId) ---------------------------------------------------------
@pytest.mark.parametrize("value", ["a", "my-custom-id", "abc-123_def.456", "A.b_C-9", "0"])
def test_valid_custom_session_ids(value: str) -> None:
    assert_valid_session_id(value)
    assert SESSION_ID_PATTERN.match(value)


@pytest.mark.parametrize(
    "value",
    ["", "-abc", "abc-", "_abc", "abc_", ".abc", "abc.", "a/b", "a\\b", "a b", " abc", "abc\n", "ä"],
)
def test_invalid_custom_session_ids_raise_pis_message(value: str) -> None:
    with pytest.raises(ValueError) as info:
        assert_valid_session_id(value)
    assert str(info.value) == SESSION_ID_MESSAGE
