"""Tier 3: ``expand`` — everything the store knows about one memory.

Every field (episode detail restored in full from cold storage), the audit history,
the supersession chain of a fact, the source episode of a fact or decision with a
transcript excerpt around the words the memory came from, and what was moved to cold
storage.  Accepts a memory id or a ref shown in a context (``fact:1a2b3c4d``,
``episode:1a2b3c4d#c3`` for a transcript chunk).  Not on the hot path: several short
reads, no transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from ..db import Database
from ..errors import InvalidInputError, NotFoundError
from ..facts.learning import FactLearner
from ..memories.kinds import EpisodeDetail, Kind, parse_agent_id
from ..memories.manager import MemoryManager
from ..memories.records import Memory, MemoryEvent
from ..people import person_key, visible_to
from .access import AccessLog
from .refs import Target, make_ref, parse_target
from .results import ArchivedPart as ArchivedPart
from .results import ExcerptMessage as ExcerptMessage
from .results import Expanded as Expanded
from .results import TranscriptExcerpt as TranscriptExcerpt
from .truncation import query_terms

EXCERPT_MESSAGES = 12  # messages shown around the best match (or from the start)
TRANSCRIPT_SCAN = 5_000  # messages read to find the best match


class Expander:
    def __init__(self, db: Database, memories: MemoryManager, facts: FactLearner,
                 access: AccessLog) -> None:
        self._db = db
        self._memories = memories
        self._facts = facts
        self._access = access

    async def expand(self, agent_id: str, memory_id: UUID | str, *,
                     user: str | None = None) -> Expanded:
        """``user``: the person asking (people/); a memory that is not theirs or shared is
        not found, and neither is another person's conversation it came from."""
        agent = parse_agent_id(agent_id)
        asker = None if user is None else person_key(user, "user")
        ident, chunk_no = await self.resolve(agent, memory_id)
        memory = await self._memories.get(agent, ident)
        if not visible_to(memory.people, asker):
            raise NotFoundError("memory", ident)
        archive = await self._db.fetch("memory_archive_parts", agent, ident)
        memory, restored = _restore_detail(memory, archive)
        events = [MemoryEvent.model_validate(dict(r))
                  for r in await self._db.fetch("memory_events", agent, ident)]
        chain: list[Memory] = []
        if memory.kind is Kind.FACT:
            chain = [m for m in (await self._facts.history(agent, ident)).chain
                     if visible_to(m.people, asker)]
        source_id = getattr(memory.detail, "source_episode_id", None)
        source: Memory | None = None
        transcript: TranscriptExcerpt | None = None
        if memory.kind is Kind.EPISODE:
            transcript = await self._excerpt(agent, ident, archive, None, chunk_no)
        elif source_id is not None:
            try:
                source = await self._memories.get(agent, source_id)
            except NotFoundError:
                source = None  # the episode was deleted; the provenance id stays
            if source is not None and not visible_to(source.people, asker):
                source = None  # another person's conversation: not theirs to read
            if source is not None:
                source_archive = await self._db.fetch("memory_archive_parts", agent, source_id)
                transcript = await self._excerpt(agent, source_id, source_archive,
                                                 memory.summary, None)
        self._access.record(agent, [ident])
        return Expanded(
            ref=make_ref(memory.kind, ident), memory=memory,
            detail_restored=restored, events=events, chain=chain, source_episode=source,
            transcript=transcript, archived=[_part(r) for r in archive])

    async def resolve(self, agent_id: str, target: UUID | str, *, deleted: bool = False
                      ) -> tuple[UUID, int | None]:
        """The memory id behind an id or a ref, and the chunk number a chunk ref names;
        ``deleted``: a ref names a soft-deleted memory (for a restore)."""
        agent = parse_agent_id(agent_id)
        parsed = parse_target(target)
        ident = parsed.memory_id
        if ident is None:
            ident = await self._resolve(agent, parsed, deleted)
        return ident, parsed.chunk_no

    async def _resolve(self, agent: str, target: Target, deleted: bool) -> UUID:
        low, high = target.id_range()
        query = "deleted_memory_by_ref" if deleted else "memory_by_ref"
        rows = await self._db.fetch(query, agent, low, high, str(target.kind))
        if not rows:
            raise NotFoundError("memory", target.ref)
        if len(rows) > 1:
            raise InvalidInputError.single(
                "memory_id", f"ref {target.ref} matches several memories; use the full id")
        ident: UUID = rows[0]["id"]
        return ident

    async def _excerpt(self, agent: str, episode: UUID, archive: Sequence[Mapping[str, Any]],
                       about: str | None, chunk_no: int | None) -> TranscriptExcerpt:
        hot = await self._db.fetch("episode_messages", agent, episode, 0, TRANSCRIPT_SCAN)
        messages = {r["seq"]: _message(r) for r in hot}
        cold = [r for r in archive if r["part"] == "transcript"]
        for row in cold:
            for raw in _json_list(row["messages"])[:TRANSCRIPT_SCAN]:
                message = _message(raw)
                messages.setdefault(message.seq, message)
        ordered = [messages[seq] for seq in sorted(messages)]
        start = 0
        if chunk_no is not None:
            chunks = await self._db.fetch("episode_chunks", agent, episode)
            match = [c for c in chunks if c["chunk_no"] == chunk_no]
            if match:
                first = match[0]["first_seq"]
                start = next((i for i, m in enumerate(ordered) if m.seq >= first), 0)
        elif about:
            start = max(_best_match(ordered, about) - EXCERPT_MESSAGES // 2, 0)
        return TranscriptExcerpt(episode_id=episode, total_messages=len(ordered),
                                 from_cold_storage=bool(cold),
                                 messages=ordered[start:start + EXCERPT_MESSAGES])


def _best_match(messages: Sequence[ExcerptMessage], about: str) -> int:
    """The index of the message sharing the most words with ``about`` (first on ties)."""
    terms = query_terms(about)
    best, best_score = 0, 0
    for index, message in enumerate(messages):
        score = len(terms & query_terms(message.content))
        if score > best_score:
            best, best_score = index, score
    return best


def _json_list(value: object) -> list[Mapping[str, Any]]:
    data = json.loads(value) if isinstance(value, str) else value
    return [m for m in data if isinstance(m, Mapping)] if isinstance(data, list) else []


def _message(row: Mapping[str, Any]) -> ExcerptMessage:
    return ExcerptMessage(seq=int(row["seq"]), role=str(row["role"]), name=row.get("name"),
                          content=str(row["content"]), created_at=row.get("created_at"))


def _restore_detail(memory: Memory, archive: Sequence[Mapping[str, Any]]
                    ) -> tuple[Memory, bool]:
    """Full episode detail = left(hot detail, start_offset) || archived content."""
    cold = next((r for r in archive if r["part"] == "detail"), None)
    if cold is None or not isinstance(memory.detail, EpisodeDetail):
        return memory, False
    # from SQL: the validated record has its whitespace trimmed, the raw head has not
    detail = memory.detail.model_copy(update={"detail": cold["full_detail"]})
    return memory.model_copy(update={"detail": detail}), True


def _part(row: Mapping[str, Any]) -> ArchivedPart:
    size = (len(row["content"]) if row["part"] == "detail"
            else len(_json_list(row["messages"])))
    return ArchivedPart(part=row["part"], reason=row["reason"], archived_at=row["archived_at"],
                        start_offset=row["start_offset"], size=size)
