"""What a history import reports: plain records with no I/O, so the remote client
returns the store's own types without loading the database layer."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from pydantic import BaseModel, ConfigDict


class IngestResult(BaseModel):
    """What an import did: sessions imported now, skipped as already there, and the
    episodes it created (in session order)."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    sessions_imported: int
    sessions_skipped: int
    turns_imported: int
    episode_ids: list[UUID]


class IngestStatus(BaseModel):
    """Where an agent's imports stand: sessions imported so far, episodes whose close
    work (chunks, embeddings, facts) is still queued or running, and close work that
    failed for good (the owner's work-queue view says why)."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    sessions: int
    closing: int
    failed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestProgress:
    """Reported after every session: how far the import is."""

    sessions_done: int
    sessions_total: int
    turns_done: int
    skipped: int
