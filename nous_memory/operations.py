"""The operations a memory store offers, one shape each: ``MemoryStore`` (in process)
and ``AsyncMemoryClient`` (over the REST service) both satisfy ``StoreOperations``, and
``nous_memory.conformance`` makes mypy check it, so a signature that drifts in either
fails the type check.  Code typed against ``StoreOperations`` runs on both.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol
from uuid import UUID

if TYPE_CHECKING:  # records only; nothing here loads at run time
    from .context.model import Context, Extraction
    from .context.results import Expanded, RecallResult, Upcoming
    from .conversation.policy import Policy
    from .conversation.results import (
        ConversationSummary,
        MessageChange,
        Prompt,
        SummarizeResult,
        SummaryRecord,
    )
    from .episodes.results import AppendResult, MessageErasure, MessageIn
    from .facts.results import FactHistory, LearnResult
    from .history.results import IngestProgress, IngestResult, IngestStatus
    from .history.sessions import HistorySession
    from .memories.kinds import Kind, Status
    from .memories.messages import TranscriptMessage
    from .memories.records import Memory, MemoryEvent, Page
    from .portability.reports import ErasureReceipt, ExportSummary, ImportSummary


class StoreOperations(Protocol):
    """Every operation both the store and the remote client offer (see ``MemoryStore``
    for what each does)."""

    async def health(self) -> dict[str, Any]: ...

    async def remember(self, agent_id: str, kind: Kind | str, /, **fields: Any) -> Memory: ...

    async def remember_many(self, agent_id: str,
                            items: Sequence[Mapping[str, Any]]) -> builtins.list[Memory]: ...

    async def get(self, agent_id: str, memory_id: UUID | str, *,
                  include_deleted: bool = False) -> Memory: ...

    async def update(self, agent_id: str, memory_id: UUID | str, /, *,
                     actor: str | None = None, **changes: Any) -> Memory: ...

    async def delete(self, agent_id: str, memory_id: UUID | str, *, purge: bool = False,
                     actor: str | None = None) -> None: ...

    async def history(self, agent_id: str, memory_id: UUID | str) -> builtins.list[MemoryEvent]: ...

    async def learn_fact(self, agent_id: str, content: str, /, *, subject: str | None = None,
                         category: str | None = None, confidence: float | None = None,
                         source: str | None = None, source_episode_id: UUID | str | None = None,
                         source_kind: str = "user_stated",
                         instructions: str | None = None,
                         valid_from: datetime | str | None = None) -> LearnResult: ...

    async def fact_history(self, agent_id: str, fact_id: UUID | str) -> FactHistory: ...

    async def facts_from_episode(self, agent_id: str,
                                 episode_id: UUID | str) -> builtins.list[Memory]: ...

    async def start_episode(self, agent_id: str, /, *, title: str | None = None,
                            participants: Sequence[str] | None = None,
                            user_id: str | None = None,
                            started_at: datetime | None = None) -> Memory: ...

    async def append(self, agent_id: str, episode_id: UUID | str, /,
                     messages: Sequence[Mapping[str, Any] | MessageIn]) -> AppendResult: ...

    async def close_episode(self, agent_id: str, episode_id: UUID | str, /) -> Memory: ...

    async def get_episode(self, agent_id: str, episode_id: UUID | str, /) -> Memory: ...

    async def transcript(self, agent_id: str, episode_id: UUID | str, /, *, from_seq: int = 0,
                         limit: int = 10_000) -> builtins.list[TranscriptMessage]: ...

    async def latest_messages(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = ...) -> builtins.list[TranscriptMessage]: ...

    async def ingest(self, agent_id: str,
                     sessions: Sequence[HistorySession | Mapping[str, Any]], /, *,
                     progress: Callable[[IngestProgress], None] | None = None
                     ) -> IngestResult: ...

    async def ingest_status(self, agent_id: str, /) -> IngestStatus: ...

    async def recall(self, agent_id: str, query: str, /, *,
                     kinds: Sequence[Kind | str] | None = None, k: int = 10,
                     include_superseded: bool = False,
                     query_embedding: Sequence[float] | None = None,
                     as_of: datetime | str | None = None,
                     current_only: bool = False) -> RecallResult: ...

    async def assemble_context(self, agent_id: str, query: str, /, *,
                               budget_tokens: int = ...,
                               sections: Mapping[str, int] | Sequence[str] | None = None,
                               extraction: Extraction | str = ...,
                               query_embedding: Sequence[float] | None = None,
                               as_of: datetime | str | None = None,
                               current_only: bool = False) -> Context: ...

    async def expand(self, agent_id: str, memory_id: UUID | str, /) -> Expanded: ...

    async def upcoming(self, agent_id: str, /, *, days: int = 7,
                       as_of: datetime | str | None = None, limit: int = 50) -> Upcoming: ...

    def export_agent(self, agent_id: str, /) -> AsyncIterable[bytes]: ...

    async def export_agent_to(self, agent_id: str, out: BinaryIO, /) -> ExportSummary: ...

    async def import_agent(self, source: AsyncIterable[bytes] | BinaryIO, /, *,
                           agent_id: str | None = None, allow_other_model: bool = False,
                           dry_run: bool = False) -> ImportSummary: ...

    async def forget_agent(self, agent_id: str, /, *, actor: str = "python") -> ErasureReceipt: ...

    async def build_prompt(self, agent_id: str, episode_id: UUID | str, /, system: str,
                           budget_tokens: int, *, query: str | None = None,
                           context_tokens: int | None = None, summarize: bool = True,
                           policy: Mapping[str, Any] | None = None) -> Prompt: ...

    async def summarize_conversation(self, agent_id: str, episode_id: UUID | str, /, *,
                                     force: bool = False,
                                     policy: Mapping[str, Any] | None = None
                                     ) -> SummarizeResult: ...

    async def conversation_summary(self, agent_id: str, episode_id: UUID | str, /
                                   ) -> ConversationSummary: ...

    async def summary_history(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = 100, offset: int = 0
                              ) -> builtins.list[SummaryRecord]: ...

    async def conversation_policy(self, agent_id: str, /) -> Policy: ...

    async def set_conversation_policy(self, agent_id: str, /, **knobs: Any) -> Policy: ...

    async def edit_message(self, agent_id: str, episode_id: UUID | str, seq: int, /,
                           content: str) -> MessageChange: ...

    async def delete_message(self, agent_id: str, episode_id: UUID | str, seq: int, /
                             ) -> MessageChange: ...

    async def forget_message(self, agent_id: str, episode_id: UUID | str, seq: int, /, *,
                             redact: Sequence[str] | None = None, actor: str = "python"
                             ) -> MessageErasure: ...

    async def list(self, agent_id: str, *, kind: Kind | str | None = None,
                   status: Status | str | Sequence[Status | str] | None = None,
                   created_after: datetime | None = None,
                   created_before: datetime | None = None,
                   limit: int = 50, cursor: str | None = None,
                   tag: str | None = None) -> Page: ...
