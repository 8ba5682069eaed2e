"""A memory's detail read as its kind: typed for the right kind, a named error otherwise."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from nous_memory import Memory, WrongKindError
from nous_memory.memories.kinds import EpisodeDetail, EpisodeState, FactDetail


def _memory(detail: FactDetail | EpisodeDetail) -> Memory:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    return Memory(id=uuid4(), agent_id="a", kind=detail.kind, status="active",
                  summary="s", summary_source="template", summary_tokens=1, importance=0.5,
                  tags=[], embedding_model=None, version=1, created_at=now, updated_at=now,
                  detail=detail)


def test_the_right_kind_gives_its_detail_typed() -> None:
    fact = _memory(FactDetail(content="Ana is vegetarian"))
    assert fact.fact.content == "Ana is vegetarian"
    assert _memory(EpisodeDetail(state=EpisodeState.OPEN)).episode.state is EpisodeState.OPEN


@pytest.mark.parametrize("read", ["episode", "decision", "procedure", "censor"])
def test_another_kind_raises_a_typed_error_naming_both(read: str) -> None:
    fact = _memory(FactDetail(content="x"))
    with pytest.raises(WrongKindError) as info:
        getattr(fact, read)
    article = "an" if read == "episode" else "a"
    assert str(info.value) == f"memory {fact.id} is a fact, not {article} {read}"
    assert (info.value.kind, info.value.wanted) == ("fact", read)
    assert isinstance(info.value, TypeError)


def test_the_json_shape_is_unchanged() -> None:
    fact = _memory(FactDetail(content="x"))
    dumped = fact.model_dump(mode="json")
    assert set(dumped) == set(Memory.model_fields) and dumped["detail"]["content"] == "x"
