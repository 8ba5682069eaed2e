"""What the adapters call: every operation both faces of the store offer
(``StoreOperations``), so each adapter runs on ``MemoryStore`` in process or on
``AsyncMemoryClient`` over the service, and mypy checks the store against it here.

The reads and ``learn_fact`` take ``user`` here as the store's do (people/): an adapter
reads for the person it serves (only theirs and what is shared) and a fact it learns
is that person's, so the protocol repeats those signatures with the keyword, equal to
``MemoryStore``'s.  ``StoreOperations`` takes them when the remote client does (the
REST API's ``X-User``); until then an adapter on the client reads as the owner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from ..operations import StoreOperations

if TYPE_CHECKING:  # records only; nothing here loads at run time
    from ..context.model import Context, Extraction
    from ..context.results import Expanded, RecallResult, Upcoming
    from ..facts.results import LearnResult
    from ..memories.kinds import Kind, Status
    from ..memories.records import Page
    from ..store import MemoryStore


class Backend(StoreOperations, Protocol):
    """``StoreOperations`` with the person asking (``user``; None: the owner)."""

    async def learn_fact(self, agent_id: str, content: str, /, *, subject: str | None = None,
                         category: str | None = None, confidence: float | None = None,
                         source: str | None = None, source_episode_id: UUID | str | None = None,
                         source_kind: str = "user_stated",
                         instructions: str | None = None,
                         valid_from: datetime | str | None = None,
                         user: str | None = None) -> LearnResult: ...

    async def recall(self, agent_id: str, query: str, /, *,
                     kinds: Sequence[Kind | str] | None = None, k: int = 10,
                     include_superseded: bool = False,
                     query_embedding: Sequence[float] | None = None,
                     as_of: datetime | str | None = None,
                     current_only: bool = False, user: str | None = None) -> RecallResult: ...

    async def assemble_context(self, agent_id: str, query: str, /, *,
                               budget_tokens: int = ...,
                               sections: Mapping[str, int] | Sequence[str] | None = None,
                               extraction: Extraction | str = ...,
                               query_embedding: Sequence[float] | None = None,
                               as_of: datetime | str | None = None,
                               current_only: bool = False,
                               user: str | None = None) -> Context: ...

    async def expand(self, agent_id: str, memory_id: UUID | str, /, *,
                     user: str | None = None) -> Expanded: ...

    async def upcoming(self, agent_id: str, /, *, days: int = 7,
                       as_of: datetime | str | None = None, limit: int = 50,
                       user: str | None = None) -> Upcoming: ...

    async def list(self, agent_id: str, *, kind: Kind | str | None = None,
                   status: Status | str | Sequence[Status | str] | None = None,
                   created_after: datetime | None = None,
                   created_before: datetime | None = None,
                   limit: int = 50, cursor: str | None = None,
                   tag: str | None = None, user: str | None = None) -> Page: ...


def _store(store: MemoryStore) -> Backend:
    """What mypy checks and nothing calls: the store is a ``Backend``."""
    return store


__all__ = ["Backend"]
