"""The history import: each session one closed episode, written in one transaction.

Resumable and idempotent: an episode keeps its session's key (unique per agent), keys
already present are skipped before anything is written, and a session is either
wholly imported or not at all, so an import stopped at any instant is finished by
running it again.  The import only writes; close processing (chunks, embeddings, rule
facts, or the LLM's extraction) is the worker's, in the order the sessions were
imported, so facts restated later supersede the earlier ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from ..db import Database
from ..db.audit import record_events
from ..db.contention import again_on_contention
from ..episodes.lifecycle import record_redactions
from ..errors import ConflictError, ContentionError, DuplicateError
from ..memories.guard import clean_all
from ..memories.kinds import EpisodeDetail, EpisodeState, Kind, parse_agent_id, parse_new
from ..memories.manager import MemoryManager
from ..people import message_person
from ..tokens import count_tokens
from ..work.queue import enqueue
from ..work.tasks import EPISODE_PROCESSING, Task
from .results import IngestProgress as IngestProgress
from .results import IngestResult as IngestResult
from .results import IngestStatus as IngestStatus
from .sessions import CheckedSession, HistorySession, parse_sessions

BATCH_SESSIONS = 50  # sessions whose keys are checked, and episodes prepared, together
SOURCE_KEY_INDEX = "episodes_source_key"  # schema.sql


Progress = Callable[[IngestProgress], None]


class HistoryImporter:
    def __init__(self, db: Database, memories: MemoryManager) -> None:
        self._db = db
        self._memories = memories

    async def ingest(self, agent_id: str,
                     sessions: Sequence[HistorySession | Mapping[str, Any]], *,
                     progress: Progress | None = None) -> IngestResult:
        agent = parse_agent_id(agent_id)
        checked = parse_sessions(sessions)
        imported: list[UUID] = []
        skipped = turns = 0
        for first in range(0, len(checked), BATCH_SESSIONS):
            batch = checked[first:first + BATCH_SESSIONS]
            present = {r["source_key"] for r in await self._db.fetch(
                "episodes_by_source_key", agent, [s.key for s in batch])}
            todo = [s for s in batch if s.key not in present]
            skipped += len(batch) - len(todo)
            for session in todo:
                ident = await self._written(agent, session, done=bool(imported))
                if ident is None:
                    skipped += 1  # imported by a concurrent import meanwhile
                else:
                    imported.append(ident)
                    turns += len(session.messages)
                if progress is not None:
                    progress(IngestProgress(sessions_done=len(imported) + skipped,
                                            sessions_total=len(checked), turns_done=turns,
                                            skipped=skipped))
            if progress is not None and len(todo) < len(batch):
                progress(IngestProgress(sessions_done=len(imported) + skipped,
                                        sessions_total=len(checked), turns_done=turns,
                                        skipped=skipped))
        return IngestResult(agent_id=agent, sessions_imported=len(imported),
                            sessions_skipped=skipped, turns_imported=turns,
                            episode_ids=imported)

    async def status(self, agent_id: str) -> IngestStatus:
        agent = parse_agent_id(agent_id)
        row = await self._db.fetchrow("history_status", agent, list(EPISODE_PROCESSING))
        assert row is not None
        return IngestStatus(agent_id=agent, sessions=row["sessions"],
                            closing=row["closing"], failed=row["failed"])

    async def _written(self, agent: str, session: CheckedSession, *,
                       done: bool) -> UUID | None:
        """``_write``, again when it lost to another transaction; should it keep losing
        after this call imported sessions, the error says so (a ContentionError says
        nothing was written)."""
        try:
            return await again_on_contention(lambda: self._write(agent, session))
        except ContentionError as exc:
            if not done:
                raise
            raise ConflictError(
                f"session {session.key!r} kept losing to other transactions of the agent "
                f"({exc}); the sessions before it were imported: send the call again to "
                f"import the rest (those imported are skipped)") from exc

    async def _write(self, agent: str, session: CheckedSession) -> UUID | None:
        """One session in one transaction; None when its key was taken meanwhile."""
        persons = [message_person(m.role.value, user=m.user, name=m.name,
                                  episode_user=session.user) for m in session.messages]
        cleaned = clean_all([m.content for m in session.messages],
                            await self._memories.guard.policy(agent), "turns[{}].content")
        fields: dict[str, Any] = {
            "participants": session.participants, "started_at": session.started_at,
            "user_id": session.user,
            "people": sorted({p for p in persons if p is not None} | (
                {session.user} if session.user else set()))}
        if session.title:
            fields["title"] = session.title
        new = parse_new(Kind.EPISODE, fields, allow_untitled=True)
        detail = new.detail
        assert isinstance(detail, EpisodeDetail)
        new = new.model_copy(update={"detail": detail.model_copy(
            update={"state": EpisodeState.OPEN, "source_key": session.key})})
        # the summary is replaced at close and embedded then: nothing to embed now
        prepared = await self._memories.prepare(agent, [new], embed=False)
        rows = [{"seq": seq, "role": m.role.value, "content": c.text, "name": m.name,
                 "tool_call_id": m.tool_call_id, "tokens": count_tokens(c.text),
                 "metadata": m.metadata, "person": person,
                 "created_at": (m.created_at or session.started_at).isoformat()}
                for seq, (m, person, c) in enumerate(zip(session.messages, persons, cleaned,
                                                         strict=True))]
        try:
            async with self._db.transaction() as conn:
                (episode,) = await self._memories.write(conn, prepared)
                stamps = await conn.fetch("insert_messages", agent, episode.id, rows)
                times = [r["created_at"] for r in stamps]
                await conn.execute("episode_after_append", agent, episode.id, len(rows),
                                   max(times), min(times))
                await record_redactions(conn, agent, episode.id, 0, cleaned, "history_import")
                await conn.fetchval("episode_mark_closing", agent, episode.id,
                                    datetime.now(UTC))
                await enqueue(conn, agent, Task.EPISODE_CLOSE, episode.id)
                await record_events(conn, agent, [{
                    "memory_id": str(episode.id), "event": "updated",
                    "actor": "history_import", "old_values": {"state": "open"},
                    "new_values": {"state": "closing", "source_key": session.key,
                                   "messages": len(rows)}}])
        except DuplicateError as exc:
            if not exc.refused_by(SOURCE_KEY_INDEX):
                raise  # another record's key: an error, not this session imported already
            return None  # the key was taken meanwhile
        return episode.id
