"""Bringing a memory back over HTTP: ``POST /agents/{agent_id}/memories/{memory_id}/restore``.

A soft-deleted memory comes back from the delete (the owner's undo of a forget; a fact
through the value rule, see ``facts.undelete``).  Otherwise restore brings an episode's
detail and transcript back from cold storage, verified byte for byte, and a memory with
nothing in cold storage is a 409.  Another agent's id is a 404 like an unknown one.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ..memories.kinds import Status
from .errors import problem_responses
from .routes import AgentId, MemoryId, Store

ACTOR = "api"
router = APIRouter(prefix="/agents/{agent_id}/memories", tags=["memories"])


class Restored(BaseModel):
    """What a restore brought back."""

    model_config = ConfigDict(frozen=True)

    id: UUID
    restored_from: Literal["deleted", "cold_storage"] = Field(
        description="deleted: the memory was soft-deleted and is back; cold_storage: an "
                    "episode's detail and transcript are hot again")
    status: str | None = Field(default=None, description="(deleted) its status now")
    previous_status: str | None = Field(
        default=None, description="(deleted) its status before the delete")
    action: str | None = Field(
        default=None, description="(deleted) restored; or, for a fact, how the value rule "
                                  "placed it: confirmed, superseded, replaced or flagged")
    related: list[UUID] = Field(
        default=[], description="(deleted) the facts it was weighed against")
    previous_storage: str | None = Field(
        default=None, description="(cold_storage) trimmed, archived or expired")
    detail_chars: int | None = Field(
        default=None, description="Characters of detail now hot again (null: it had no cold "
                                  "detail)")
    messages: int | None = Field(
        default=None, description="Transcript messages restored (null: its transcript was "
                                  "hot)")


@router.post("/{memory_id}/restore", summary="Bring a deleted memory back, or an episode's "
                                              "cold storage",
             responses=problem_responses(401, 403, 404, 409, 422, 503))
async def restore(agent_id: AgentId, memory_id: MemoryId, store: Store) -> Restored:
    """A soft-deleted memory comes back with the status it had (audited ``restored``; a
    fact through the value rule, so it never stands beside a newer version of itself).
    For any other memory: restores the archived detail and transcript of an episode; the
    maintenance jobs leave it hot afterwards (storage ``restored``)."""
    memory = await store.get(agent_id, memory_id, include_deleted=True)
    if memory.status is Status.DELETED:
        back = await store.restore_deleted(agent_id, memory_id, actor=ACTOR)
        return Restored(id=back.memory.id, restored_from="deleted",
                        status=back.memory.status.value,
                        previous_status=back.previous_status.value, action=back.action.value,
                        related=back.related)
    result = await store.restore(agent_id, memory_id)
    return Restored(id=result.id, restored_from="cold_storage",
                    previous_storage=result.previous_storage,
                    detail_chars=result.detail_chars, messages=result.messages)
