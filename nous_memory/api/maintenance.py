"""Cold storage over HTTP: ``POST /agents/{agent_id}/memories/{memory_id}/restore``.

The maintenance jobs move old episode detail and transcripts to cold storage; restore
brings them back, verified byte for byte.  A memory with nothing in cold storage is a
409; another agent's id is a 404 like an unknown one.
"""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from .errors import problem_responses
from .routes import AgentId, MemoryId, Store

router = APIRouter(prefix="/agents/{agent_id}/memories", tags=["memories"])


class Restored(BaseModel):
    """What a restore brought back."""

    model_config = ConfigDict(frozen=True)

    id: UUID
    previous_storage: str = Field(description="trimmed, archived or expired")
    detail_chars: int | None = Field(
        None, description="Characters of detail now hot again (null: it had no cold detail)")
    messages: int | None = Field(
        None, description="Transcript messages restored (null: its transcript was hot)")


@router.post("/{memory_id}/restore", summary="Bring an episode back from cold storage",
             responses=problem_responses(401, 403, 404, 409, 422, 503))
async def restore(agent_id: AgentId, memory_id: MemoryId, store: Store) -> Restored:
    """Restores the archived detail and transcript of an episode; the maintenance jobs
    leave it hot afterwards (storage ``restored``)."""
    result = await store.restore(agent_id, memory_id)
    return Restored(id=result.id, previous_storage=result.previous_storage,
                    detail_chars=result.detail_chars, messages=result.messages)
