"""The verbs the adapters call, shared by the in-process store and the remote client, so
every adapter runs on either (``MemoryStore`` or ``AsyncMemoryClient``)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from ..context.model import Context
from ..context.results import RecallResult
from ..conversation.results import (
    ConversationSummary,
    MessageChange,
    Prompt,
    SummarizeResult,
)
from ..episodes.results import AppendResult, MessageIn
from ..facts.results import LearnResult
from ..memories.messages import TranscriptMessage
from ..memories.records import Memory, Page

if TYPE_CHECKING:
    from ..client import AsyncMemoryClient
    from ..store import MemoryStore


class Backend(Protocol):
    """What an adapter needs from the store (both faces have these, same signatures)."""

    async def start_episode(self, agent_id: str, /, *, title: str | None = None,
                            participants: Sequence[str] | None = None,
                            user_id: str | None = None) -> Memory: ...

    async def append(self, agent_id: str, episode_id: UUID | str, /,
                     messages: Sequence[Mapping[str, Any] | MessageIn]) -> AppendResult: ...

    async def close_episode(self, agent_id: str, episode_id: UUID | str, /) -> Memory: ...

    async def transcript(self, agent_id: str, episode_id: UUID | str, /, *,
                         from_seq: int = 0, limit: int = ...
                         ) -> builtins.list[TranscriptMessage]: ...

    async def latest_messages(self, agent_id: str, episode_id: UUID | str, /, *,
                              limit: int = ...) -> builtins.list[TranscriptMessage]: ...

    async def delete_message(self, agent_id: str, episode_id: UUID | str, seq: int, /
                             ) -> MessageChange: ...

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

    async def recall(self, agent_id: str, query: str, /, *, kinds: Any = None, k: int = 10,
                     include_superseded: bool = False, query_embedding: Any = None,
                     as_of: Any = None) -> RecallResult: ...

    async def assemble_context(self, agent_id: str, query: str, /, *,
                               budget_tokens: int = ..., sections: Any = None,
                               extraction: Any = ..., query_embedding: Any = None,
                               as_of: Any = None) -> Context: ...

    async def learn_fact(self, agent_id: str, content: str, /, *, subject: str | None = None,
                         category: str | None = None, confidence: float | None = None,
                         source: str | None = None,
                         source_episode_id: UUID | str | None = None,
                         source_kind: str = ..., instructions: str | None = None
                         ) -> LearnResult: ...

    async def remember(self, agent_id: str, kind: Any, /, **fields: Any) -> Memory: ...

    async def get(self, agent_id: str, memory_id: UUID | str, *,
                  include_deleted: bool = False) -> Memory: ...

    async def update(self, agent_id: str, memory_id: UUID | str, /, *,
                     actor: str | None = None, **changes: Any) -> Memory: ...

    async def delete(self, agent_id: str, memory_id: UUID | str, *, purge: bool = False,
                     actor: str | None = None) -> None: ...

    # last: a method named `list` shadows the builtin in later signatures
    async def list(self, agent_id: str, *, kind: Any = None, status: Any = None,
                   created_after: Any = None, created_before: Any = None,
                   limit: int = 50, cursor: str | None = None,
                   tag: str | None = None) -> Page: ...


def _conforms(store: MemoryStore, client: AsyncMemoryClient) -> tuple[Backend, Backend]:
    """Type-checked only: both faces are backends (mypy fails here if one drifts)."""
    return store, client
