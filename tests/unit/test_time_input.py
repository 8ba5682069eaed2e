"""A time given as input: one reading and one reason everywhere, and the bad value is
never echoed back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nous_memory.context.recall import parse_request
from nous_memory.errors import InvalidInputError
from nous_memory.history.sessions import session_from
from nous_memory.memories.params import TIME_REASON, parse_time

BAD = ["last tuesday<script>", "2024-13-01T00:00:00", 12345, "9" * 80]


@pytest.mark.parametrize("value", BAD)
def test_every_reader_gives_the_same_reason_without_the_value(value: object) -> None:
    reasons = []
    with pytest.raises(InvalidInputError) as raised:
        parse_time(value, "since")
    reasons.append((raised.value.field, raised.value.reason))
    with pytest.raises(InvalidInputError) as raised:
        parse_request("a", "q", None, 5, False, as_of=value)
    reasons.append((raised.value.field, raised.value.reason))
    with pytest.raises(InvalidInputError) as raised:
        session_from({"started_at": value, "turns": []})
    reasons.append((raised.value.field, raised.value.reason))
    assert reasons == [("since", TIME_REASON), ("as_of", TIME_REASON),
                       ("started_at", TIME_REASON)]
    assert str(value)[:8] not in TIME_REASON


def test_a_time_without_an_offset_is_utc_and_one_with_an_offset_is_kept() -> None:
    assert parse_time("2024-05-01T12:00:00", "t") == datetime(2024, 5, 1, 12, tzinfo=UTC)
    moment = parse_time("2024-05-01T12:00:00+02:00", "t")
    assert moment is not None and moment.utcoffset() is not None
    assert moment.astimezone(UTC).hour == 10
    assert parse_time(None, "t") is None
