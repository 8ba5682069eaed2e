"""Conversations on the facade: episodes and their transcripts, history import, working
memory (the prompt for an open episode's next model call, its rolling summary, message
edits), and restoring or archiving an episode's detail.  A base of ``MemoryStore``
(same public methods, one module per concern), over the services ``wiring.Services``
builds."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from .conversation import (
    ConversationSummary,
    MessageChange,
    Policy,
    Prompt,
    SummarizeResult,
    SummaryRecord,
)
from .episodes.lifecycle import DEFAULT_LATEST, AppendResult, MessageIn
from .episodes.results import MessageErasure
from .history import HistorySession, IngestProgress, IngestResult, IngestStatus
from .maintenance import JobResult, RestoreResult
from .memories.guard import clean
from .memories.messages import TranscriptMessage
from .memories.records import Memory
from .memories.whose import check_theirs
from .wiring import Services


class ConversationView(Services):
    """Episodes', working memory's and cold storage's operations of ``MemoryStore``."""

    # ------------------------------------------------------------------ episodes

    async def start_episode(self, agent_id: str, /, *, title: str | None = None,
                            participants: Sequence[str] | None = None,
                            user_id: str | None = None,
                            started_at: datetime | None = None) -> Memory:
        """Start a conversation episode (state ``open``); ``user_id``: the person it is
        with: it is theirs (people/)."""
        return await self.episodes.start(agent_id, title=title, participants=participants,
                                         user_id=user_id, started_at=started_at)

    async def append(self, agent_id: str, episode_id: UUID | str, /,
                     messages: Sequence[Mapping[str, Any] | MessageIn], *,
                     user: str | None = None) -> AppendResult:
        """Append messages (role, content, name, user, tool_call_id, created_at,
        metadata).  ``user``: the person sending them (people/): the conversation must be
        theirs or shared, and their turns without a ``user`` are theirs."""
        await check_theirs(self._db, agent_id, episode_id, user, "episode_id")
        if user is not None:
            messages = [m if isinstance(m, MessageIn) or m.get("user") is not None
                        or m.get("role") != "user" else {**m, "user": user}
                        for m in messages]
        return await self.episodes.append(agent_id, episode_id, messages)

    async def close_episode(self, agent_id: str, episode_id: UUID | str, /, *,
                            user: str | None = None) -> Memory:
        """Mark the episode ``closing`` and queue its close processing (idempotent)."""
        await check_theirs(self._db, agent_id, episode_id, user, "episode_id")
        return await self.episodes.close(agent_id, episode_id)

    async def ingest(self, agent_id: str,
                     sessions: Sequence[HistorySession | Mapping[str, Any]], /, *,
                     progress: Callable[[IngestProgress], None] | None = None) -> IngestResult:
        """Import past conversations, each session a closed episode (idempotent by session
        key); the worker then processes them like any close."""
        return await self.importer.ingest(agent_id, sessions, progress=progress)

    async def ingest_status(self, agent_id: str, /) -> IngestStatus:
        """How far the agent's imports are: sessions imported, episodes still closing."""
        return await self.importer.status(agent_id)

    async def get_episode(self, agent_id: str, episode_id: UUID | str, /, *,
                          user: str | None = None) -> Memory:
        await check_theirs(self._db, agent_id, episode_id, user, "episode_id")
        return await self.episodes.get(agent_id, episode_id)

    async def transcript(self, agent_id: str, episode_id: UUID | str, /, *, from_seq: int = 0,
                         limit: int = 10_000,
                         user: str | None = None) -> builtins.list[TranscriptMessage]:
        await check_theirs(self._db, agent_id, episode_id, user, "episode_id")
        return await self.episodes.transcript(agent_id, episode_id, from_seq=from_seq,
                                              limit=limit)

    async def latest_messages(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = DEFAULT_LATEST,
                              user: str | None = None) -> builtins.list[TranscriptMessage]:
        """The newest ``limit`` messages of the transcript, oldest first (a session's
        "last N items")."""
        await check_theirs(self._db, agent_id, episode_id, user, "episode_id")
        return await self.episodes.latest(agent_id, episode_id, limit=limit)

    # ------------------------------------------------------------------ working memory

    async def build_prompt(self, agent_id: str, episode_id: UUID | str, /, system: str,
                           budget_tokens: int, *, query: str | None = None,
                           context_tokens: int | None = None, summarize: bool = True,
                           policy: Mapping[str, Any] | None = None) -> Prompt:
        """Chat messages for an open episode's next model call, never over budget: the
        system prompt, the rolling summary, optional context and the newest messages."""
        return await self.conversation.build_prompt(
            agent_id, episode_id, system, budget_tokens, query=query,
            context_tokens=context_tokens, summarize=summarize, overrides=policy)

    async def summarize_conversation(self, agent_id: str, episode_id: UUID | str, /, *,
                                     force: bool = False,
                                     policy: Mapping[str, Any] | None = None
                                     ) -> SummarizeResult:
        """Fold the messages the policy says are due into the rolling summary."""
        return await self.conversation.summarize(agent_id, episode_id, force=force,
                                                 overrides=policy)

    async def conversation_summary(self, agent_id: str, episode_id: UUID | str, /
                                   ) -> ConversationSummary:
        return await self.conversation.summary(agent_id, episode_id)

    async def summary_history(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = 100, offset: int = 0
                              ) -> builtins.list[SummaryRecord]:
        return await self.conversation.history(agent_id, episode_id, limit=limit,
                                               offset=offset)

    async def conversation_policy(self, agent_id: str, /) -> Policy:
        return await self.conversation.policy(agent_id)

    async def set_conversation_policy(self, agent_id: str, /, **knobs: Any) -> Policy:
        return await self.conversation.set_policy(agent_id, knobs)

    async def edit_message(self, agent_id: str, episode_id: UUID | str, seq: int, /,
                           content: str) -> MessageChange:
        """Change a message of an open episode (earlier versions are kept); its secrets
        are kept out as an append's are."""
        if isinstance(content, str):
            content = clean(content, await self.memories.guard.policy(agent_id),
                            "content").text
        return await self.conversation.edit_message(agent_id, episode_id, seq, content)

    async def delete_message(self, agent_id: str, episode_id: UUID | str, seq: int, /
                             ) -> MessageChange:
        """Soft-delete a message of an open episode (its text is kept)."""
        return await self.conversation.delete_message(agent_id, episode_id, seq)

    async def forget_message(self, agent_id: str, episode_id: UUID | str, seq: int, /, *,
                             redact: Sequence[str] | None = None, actor: str = "python"
                             ) -> MessageErasure:
        """Remove one message of an episode, open or closed, and every trace of it.

        Without ``redact`` the message's text goes (a tombstone keeps its place); with
        it, only those strings, each replaced by ``[redacted]``.  What was made from the
        transcript (chunks, the summary) is made again without it; what was learned from
        it (facts, decisions, rolling summaries, cached extractions, audit values) is
        purged.  A trimmed or archived episode is restored from cold storage first."""
        restored = False
        if await self.forgetter.storage(agent_id, episode_id) in ("trimmed", "archived"):
            await self.maintenance.restore(agent_id, episode_id, actor=actor)
            restored = True
        return await self.forgetter.forget(agent_id, episode_id, seq, redact=redact,
                                           actor=actor, restored=restored)

    # ------------------------------------------------------------------ cold storage

    async def restore(self, agent_id: str, memory_id: UUID | str, /, *,
                      actor: str | None = None) -> RestoreResult:
        """Bring a trimmed or archived episode's detail and transcript back from cold
        storage, verified byte for byte; the maintenance jobs then leave it hot."""
        return await self.maintenance.restore(agent_id, memory_id, actor=actor)

    async def archive_episodes(self, agent_id: str, /, *,
                               ended_before: datetime | None = None,
                               now: datetime | None = None) -> JobResult:
        """Archive one agent's closed episodes that ended before ``ended_before``
        (default: all of them, whatever their age), exactly as the archive job does."""
        moment = now or datetime.now(UTC)
        return await self.maintenance.archive(now=moment, agent_id=agent_id,
                                              ended_before=ended_before or moment)
