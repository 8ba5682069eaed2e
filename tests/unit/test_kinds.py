"""Input validation: every rejection names the field and the reason."""

from __future__ import annotations

import pytest

from nous_memory.errors import InvalidInputError, PayloadTooLargeError
from nous_memory.memories.kinds import (
    MAX_TEXT_CHARS,
    EpisodeDetail,
    Kind,
    parse_agent_id,
    parse_new,
)


def _problem(kind: str, **fields: object) -> tuple[str, str]:
    with pytest.raises(InvalidInputError) as info:
        parse_new(kind, fields)
    return info.value.field, info.value.reason


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan"), "high"])
def test_confidence_outside_unit_interval(value: object) -> None:
    field, _ = _problem("decision", description="x", confidence=value)
    assert field == "confidence"


def test_unknown_kind() -> None:
    field, reason = _problem("feeling", content="x")
    assert field == "kind" and "decision" in reason
    assert "feeling" not in reason  # the value is never echoed back


def test_unknown_outcome() -> None:
    field, reason = _problem("decision", description="x", outcome="great")
    assert field == "outcome" and "pending" in reason


@pytest.mark.parametrize("content", ["", "   \n\t"])
def test_empty_content(content: str) -> None:
    assert _problem("fact", content=content)[0] == "content"


def test_text_over_limit_is_payload_too_large() -> None:
    with pytest.raises(PayloadTooLargeError) as info:
        parse_new("fact", {"content": "x" * (MAX_TEXT_CHARS + 1)})
    assert info.value.field == "content"
    assert str(MAX_TEXT_CHARS) in info.value.reason
    parse_new("fact", {"content": "x" * MAX_TEXT_CHARS})  # the limit itself is fine


@pytest.mark.parametrize(("kind", "fields", "path"), [
    ("fact", {"content": "a\x00b"}, "content"),
    ("fact", {"content": "ok", "tags": ["fine", "b\x00d"]}, "tags.1"),
    ("decision", {"description": "d", "reasons": ["\x00"]}, "reasons.0"),
])
def test_nul_bytes(kind: str, fields: dict[str, object], path: str) -> None:
    field, reason = _problem(kind, **fields)
    assert field == path and "NUL" in reason


def test_unknown_field() -> None:
    assert _problem("fact", content="x", colour="red") == ("colour", "unknown field")


def test_summary_only_for_episodes() -> None:
    assert _problem("fact", content="x", summary="y")[0] == "summary"
    new = parse_new("episode", {"summary": "We talked."})
    assert new.kind is Kind.EPISODE and new.common.summary == "We talked."


def test_all_problems_reported_at_once() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_new("decision", {"description": "", "confidence": 2, "importance": -1})
    assert {p.field for p in info.value.problems} == {"description", "confidence", "importance"}


def test_counts_consistent() -> None:
    assert "exceeds" in _problem("procedure", name="p", activation_count=1, success_count=2)[1]
    assert "exceeds" in _problem("censor", trigger_pattern="t", action="warn", reason="r",
                                 false_positive_count=1)[1]


def test_episode_times_ordered_and_naive_taken_as_utc() -> None:
    assert "before" in _problem("episode", title="t", started_at="2024-01-02T00:00:00Z",
                                ended_at="2024-01-01T00:00:00Z")[1]
    new = parse_new("episode", {"title": "t", "started_at": "2024-01-01T10:00:00"})
    assert isinstance(new.detail, EpisodeDetail) and new.detail.started_at is not None
    assert new.detail.started_at.utcoffset() is not None


@pytest.mark.parametrize("agent", ["", "  ", "a" * 129, "bad\x00id", "tab\tid", 7])
def test_bad_agent_ids(agent: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_agent_id(agent)
    assert info.value.field == "agent_id"
