"""Episodes as live conversations: start, append verbatim messages, close.

Closing only marks the episode ``closing`` and enqueues durable work; the worker does
the LLM call later (``close``).  The transcript is ground truth and never
rewritten; a closed episode stays fully searchable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pydantic import (
    ValidationError,
)

from ..db import Connection, Database
from ..db.audit import record_events
from ..errors import (
    ConflictError,
    FieldProblem,
    InvalidInputError,
    NotFoundError,
    PayloadTooLargeError,
    is_size_reason,
    longer_than,
    more_than,
)
from ..memories.guard import Cleaned, clean_all
from ..memories.kinds import (
    EpisodeDetail,
    EpisodeState,
    Kind,
    is_utf8,
    parse_agent_id,
    parse_new,
    problems_from,
)
from ..memories.manager import MemoryManager
from ..memories.messages import TranscriptMessage, to_message
from ..memories.params import parse_memory_id
from ..memories.records import Memory
from ..people import message_person, person_key
from ..tokens import count_tokens
from ..work.queue import enqueue
from ..work.tasks import EPISODE_PROCESSING, Task
from .results import DEFAULT_LATEST as DEFAULT_LATEST
from .results import MAX_MESSAGES_PER_APPEND as MAX_MESSAGES_PER_APPEND
from .results import MAX_METADATA_CHARS as MAX_METADATA_CHARS
from .results import TRANSCRIPT_PAGE as TRANSCRIPT_PAGE
from .results import AppendResult as AppendResult
from .results import MessageIn as MessageIn
from .results import Role as Role


class OversizeMessageError(PayloadTooLargeError):
    """A message (or an append) is larger than the documented limit (HTTP 413)."""


class EpisodeManager:
    def __init__(self, db: Database, memories: MemoryManager) -> None:
        self._db = db
        self._memories = memories

    async def start(self, agent_id: str, *, title: str | None = None,
                    participants: Sequence[str] | None = None, user_id: str | None = None,
                    started_at: datetime | None = None) -> Memory:
        """An episode in state ``open``, ready for messages."""
        agent = parse_agent_id(agent_id)
        if isinstance(participants, str):
            raise InvalidInputError.single("participants", "must be a list of names")
        fields: dict[str, Any] = {
            "title": title, "participants": list(participants or []), "user_id": user_id,
            "started_at": started_at or datetime.now(UTC),
            # a conversation with a user is theirs (more people join as they speak)
            "people": [person_key(user_id, "user_id")] if user_id is not None else None,
        }
        new = parse_new(Kind.EPISODE, {k: v for k, v in fields.items() if v is not None},
                        allow_untitled=True)
        # the lifecycle owns `state`; callers cannot set it, start() opens the episode
        new = new.model_copy(update={"detail": new.detail.model_copy(
            update={"state": EpisodeState.OPEN})})
        prepared = await self._memories.prepare(agent, [new])
        async with self._db.transaction() as conn:
            (episode,) = await self._memories.write(conn, prepared)
        return episode

    async def append(self, agent_id: str, episode_id: UUID | str,
                     messages: Sequence[Mapping[str, Any] | MessageIn]) -> AppendResult:
        """Append messages in order; an episode that is closing or closed refuses them."""
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(episode_id, "episode_id")
        parsed = parse_messages(messages)
        # secrets out before anything is stored (memories/guard.py)
        cleaned = clean_all([m.content for m in parsed],
                            await self._memories.guard.policy(agent), "messages[{}].content")
        parsed = [m if c.text == m.content else m.model_copy(update={"content": c.text})
                  for m, c in zip(parsed, cleaned, strict=True)]
        tokens = [count_tokens(m.content) for m in parsed]
        async with self._db.transaction() as conn:
            row = await conn.fetchrow("episode_for_update", agent, ident)
            if row is None:
                raise NotFoundError("episode", ident)
            if row["state"] != EpisodeState.OPEN:
                raise ConflictError(
                    f"episode {ident} is {row['state']}; messages go to an open episode")
            first = row["message_count"]
            persons = [message_person(m.role.value, user=m.user, name=m.name,
                                      episode_user=row["user_id"]) for m in parsed]
            rows = [{"seq": first + i, "role": m.role.value, "content": m.content,
                     "name": m.name, "tool_call_id": m.tool_call_id, "tokens": n,
                     "metadata": m.metadata, "person": person,
                     "created_at": m.created_at.isoformat() if m.created_at else None}
                    for i, (m, n, person) in enumerate(zip(parsed, tokens, persons,
                                                          strict=True))]
            stamps = await conn.fetch("insert_messages", agent, ident, rows)
            speakers = sorted({p for p in persons if p is not None})
            if speakers:
                await conn.execute("episode_add_people", agent, ident, speakers)
            await record_redactions(conn, agent, ident, first, cleaned, "append")
            times = [r["created_at"] for r in stamps]
            await conn.execute("episode_after_append", agent, ident, first + len(parsed),
                               max(times), min(times))
        return AppendResult(episode_id=ident, first_seq=first, last_seq=first + len(parsed) - 1,
                            message_count=first + len(parsed), tokens=sum(tokens))

    async def close(self, agent_id: str, episode_id: UUID | str) -> Memory:
        """Mark ``closing`` and enqueue close processing; closing twice changes nothing."""
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(episode_id, "episode_id")
        async with self._db.transaction() as conn:
            row = await conn.fetchrow("episode_for_update", agent, ident)
            if row is None:
                raise NotFoundError("episode", ident)
            if row["state"] == EpisodeState.CLOSING:
                # a no-op while its work item is open; re-queues one that failed for good
                await enqueue(conn, agent, Task.EPISODE_CLOSE, ident)
            elif row["state"] == EpisodeState.OPEN:
                await conn.fetchval("episode_mark_closing", agent, ident, datetime.now(UTC))
                await conn.execute("memory_touch", agent, ident)
                await enqueue(conn, agent, Task.EPISODE_CLOSE, ident)
                await record_events(conn, agent, [{
                    "memory_id": str(ident), "event": "updated", "actor": "close_episode",
                    "old_values": {"state": "open"}, "new_values": {"state": "closing"}}])
        return await self.get(agent, ident)

    async def get(self, agent_id: str, episode_id: UUID | str) -> Memory:
        memory = await self._memories.get(agent_id, parse_memory_id(episode_id, "episode_id"))
        if memory.kind is not Kind.EPISODE:
            raise NotFoundError("episode", memory.id)
        return memory

    async def processing(self, agent_id: str, episode_id: UUID | str) -> bool:
        """Whether close processing (the close or its embedding/learning follow-up) is
        still queued or running for this episode."""
        agent = parse_agent_id(agent_id)
        ident = parse_memory_id(episode_id, "episode_id")
        return bool(await self._db.fetchval("work_open_for", agent, ident,
                                               list(EPISODE_PROCESSING)))

    async def transcript(self, agent_id: str, episode_id: UUID | str, *, from_seq: int = 0,
                         limit: int = TRANSCRIPT_PAGE) -> list[TranscriptMessage]:
        """The verbatim messages, in order (a page of at most ``limit``); a message deleted
        while the episode was open is left out, so its seq is a gap."""
        episode = await self.get(agent_id, episode_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not (
                1 <= limit <= TRANSCRIPT_PAGE):
            raise InvalidInputError.single("limit", f"must be between 1 and {TRANSCRIPT_PAGE}")
        if isinstance(from_seq, bool) or not isinstance(from_seq, int) or not (
                0 <= from_seq < 2**31):
            raise InvalidInputError.single("from_seq", "must be an integer >= 0")
        rows = await self._db.fetch("episode_messages", episode.agent_id, episode.id,
                                    max(from_seq, 0), limit)
        return [to_message(r) for r in rows]

    async def latest(self, agent_id: str, episode_id: UUID | str, *,
                     limit: int = DEFAULT_LATEST) -> list[TranscriptMessage]:
        """The newest ``limit`` messages (deleted ones left out), oldest first."""
        episode = await self.get(agent_id, episode_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not (
                1 <= limit <= TRANSCRIPT_PAGE):
            raise InvalidInputError.single("limit", f"must be between 1 and {TRANSCRIPT_PAGE}")
        rows = await self._db.fetch("episode_messages_latest", episode.agent_id, episode.id,
                                    limit)
        return [to_message(r) for r in rows]


def parse_messages(messages: Sequence[Mapping[str, Any] | MessageIn]) -> list[MessageIn]:
    """Validate a whole append first: one bad message rejects it and stores nothing."""
    if not messages:
        raise InvalidInputError.single("messages", "at least one message is needed")
    if len(messages) > MAX_MESSAGES_PER_APPEND:
        raise OversizeMessageError(FieldProblem(
            "messages", more_than(MAX_MESSAGES_PER_APPEND, len(messages), "messages")))
    parsed: list[MessageIn] = []
    problems: list[FieldProblem] = []
    too_large = False
    for index, message in enumerate(messages):
        try:
            item = message if isinstance(message, MessageIn) else MessageIn.model_validate(
                dict(message))
        except ValidationError as exc:
            found = problems_from(exc, f"messages[{index}].")
            too_large |= any(is_size_reason(p.reason) for p in found)
            problems.extend(found)
            continue
        except (ValueError, TypeError) as exc:
            problems.append(FieldProblem(f"messages[{index}]", f"must be an object ({exc})"))
            continue
        try:
            encoded = json.dumps(item.metadata, allow_nan=False)
            size = len(encoded)
            if "\\u0000" in encoded:
                raise ValueError("contains a NUL character, which PostgreSQL cannot store")
            if not is_utf8(json.dumps(item.metadata, ensure_ascii=False)):
                raise ValueError("contains a lone UTF-16 surrogate, which is not valid "
                                 "Unicode text")
        except (TypeError, ValueError) as exc:
            problems.append(FieldProblem(f"messages[{index}].metadata", f"not JSON: {exc}"))
            continue
        if size > MAX_METADATA_CHARS:
            too_large = True
            problems.append(FieldProblem(f"messages[{index}].metadata", longer_than(
                MAX_METADATA_CHARS, size, "characters as JSON")))
            continue
        parsed.append(item)
    if problems:
        raise (OversizeMessageError if too_large else InvalidInputError)(problems)
    return parsed


async def read_transcript(db: Database, agent: str, ident: UUID) -> list[TranscriptMessage]:
    """The whole transcript less deleted messages, read in pages (no silent cap), with
    the tail a trim moved to cold storage."""
    messages: list[TranscriptMessage] = []
    while True:
        start = messages[-1].seq + 1 if messages else 0
        page = await db.fetch("episode_messages", agent, ident, start, TRANSCRIPT_PAGE)
        messages.extend(to_message(r) for r in page)
        if len(page) < TRANSCRIPT_PAGE:
            break
    hot = {m.seq for m in messages}
    cold = await db.fetch("episode_messages_cold", agent, ident)
    tail = [m for m in map(to_message, cold) if m.seq not in hot]
    return sorted(messages + tail, key=lambda m: m.seq) if tail else messages


def episode_detail(memory: Memory) -> EpisodeDetail:
    assert isinstance(memory.detail, EpisodeDetail)
    return memory.detail


async def record_redactions(conn: Connection, agent: str, episode: UUID, first_seq: int,
                            cleaned: Sequence[Cleaned], actor: str) -> None:
    """The audit of the secrets taken out of appended messages: which kinds in which
    message, never a value."""
    taken = [{"seq": first_seq + i, "kinds": list(c.kinds)}
             for i, c in enumerate(cleaned) if c.kinds]
    if taken:
        await record_events(conn, agent, [{
            "memory_id": str(episode), "event": "updated", "actor": actor,
            "old_values": None, "new_values": {"redacted": taken}}])
