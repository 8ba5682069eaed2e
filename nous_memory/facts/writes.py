"""The writes of fact learning: a new fact with its links, a confirmation, a retirement,
each with its audit event, inside the caller's transaction (``learning.py`` decides)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from pgvector import Vector as PgVector

from ..db import Connection
from ..db.audit import record_events
from ..embeddings.cache import EmbeddingCache
from ..memories.fact_key import fact_hash
from ..memories.kinds import FactDetail
from ..memories.manager import MemoryManager, PreparedWrite
from ..memories.records import Memory
from ..tokens import count_tokens
from .results import LearnAction, LearnResult

CONFIRM_GAIN = 0.1
CONTRADICTION_FACTOR = 0.5


class FactWrites:
    def __init__(self, memories: MemoryManager, embeddings: EmbeddingCache) -> None:
        self._memories = memories
        self._embeddings = embeddings

    async def create(self, conn: Connection, prepared: PreparedWrite, *,
                      supersedes: UUID | None = None,
                      flagged: Sequence[UUID] = ()) -> UUID:
        """Insert the prepared fact (with its links) and return its id."""
        detail = fact_detail(prepared)
        updates: dict[str, Any] = {"conflicts_with": list(flagged)}
        if supersedes is not None:
            updates["supersedes_id"] = supersedes
        news = [prepared.news[0].model_copy(update={"detail": detail.model_copy(
            update=updates)})]
        (created,) = await self._memories.write(
            conn, PreparedWrite(agent=prepared.agent, news=news, ids=prepared.ids,
                                summaries=prepared.summaries, tokens=prepared.tokens,
                                embedded=prepared.embedded))
        return created.id

    async def past(self, conn: Connection, agent: str, past: UUID, successor: UUID,
                    until: datetime) -> None:
        """A value said before ``successor``: recorded superseded by it, its place in the
        timeline linked both ways."""
        await self.retire(conn, agent, past, successor, until=until)
        await conn.execute("fact_relink", agent, past, successor)

    # ------------------------------------------------------------------ stages

    async def confirm(self, conn: Connection, agent: str, fact_id: UUID,
                       stored: float | None, incoming: float | None, *, similarity: float,
                       decided_by: str, statement: FactDetail,
                       reword: PreparedWrite | None = None,
                       old_content: str | None = None, discreet: bool = False) -> None:
        """``discreet``: a person's statement confirming a fact others read (people/):
        the history keeps that it was confirmed, not their words or where they said it."""
        base = _max(stored, incoming)
        confidence = None if base is None else round(base + (1 - base) * CONFIRM_GAIN, 4)
        content = None
        if reword is not None:
            content = reword.summaries[0][0]
            await conn.execute("memory_reword", agent, fact_id, content, count_tokens(content),
                               PgVector(reword.embedded.vectors[0]), self._embeddings.model_name)
            await self._embeddings.save(conn, agent, reword.embedded)
        else:
            await conn.execute("memory_touch", agent, fact_id)
        await conn.execute("fact_confirm", agent, fact_id, confidence, content,
                           fact_hash(content) if content else None)
        old: dict[str, Any] = {"confidence": stored}
        new: dict[str, Any] = {
            "confidence": confidence, "similarity": round(similarity, 4),
            "decided_by": decided_by,
            # the confirming statement's provenance stays in the history
            "confirmed_by": {"source_kind": statement.source_kind.value} if discreet else {
                "content": statement.content, "source": statement.source,
                "source_kind": statement.source_kind.value,
                "source_episode_id": _s(statement.source_episode_id)}}
        if content is not None:
            old["content"], new["content"] = old_content, content
        await self.events(conn, agent, fact_id, "confirmed", old, new)

    async def retire(self, conn: Connection, agent: str, old_id: UUID, new_id: UUID, *,
                      until: datetime | None = None) -> None:
        """Mark ``old_id`` superseded by ``new_id`` (held until ``until``: when the new
        value was said), both links kept, confidence halved."""
        row = await conn.fetchrow("fact_for_update", agent, old_id)
        assert row is not None
        lowered = None if row["confidence"] is None else round(
            row["confidence"] * CONTRADICTION_FACTOR, 4)
        await conn.execute("fact_link_superseded", agent, old_id, new_id, lowered)
        await conn.execute("memory_set_status", agent, old_id, "superseded")
        await conn.execute("fact_valid_until", agent, old_id, until)
        await self.events(conn, agent, old_id, "superseded",
                           {"status": "active", "confidence": row["confidence"]},
                           {"status": "superseded", "superseded_by_id": str(new_id),
                            "confidence": lowered,
                            "valid_until": None if until is None else until.isoformat()})

    async def events(self, conn: Connection, agent: str, memory_id: UUID, event: str,
                      old: dict[str, Any], new: dict[str, Any]) -> None:
        await record_events(conn, agent, [{
            "memory_id": str(memory_id), "event": event, "old_values": old,
            "new_values": new, "actor": "learn_fact"}])

    async def result(self, conn: Connection, agent: str, action: LearnAction, fact_id: UUID,
                      similarity: float | None, decided_by: str,
                      related: list[UUID]) -> LearnResult:
        row = await conn.fetchrow("get_memory", agent, fact_id)
        assert row is not None
        return LearnResult(action=action, fact=Memory.from_row(row),
                           similarity=None if similarity is None else round(similarity, 4),
                           decided_by=decided_by, related=related)


def fact_detail(prepared: PreparedWrite) -> FactDetail:
    detail = prepared.news[0].detail
    assert isinstance(detail, FactDetail)
    return detail


def _max(a: float | None, b: float | None) -> float | None:
    known = [v for v in (a, b) if v is not None]
    return max(known) if known else None


def _s(value: UUID | None) -> str | None:
    return None if value is None else str(value)
