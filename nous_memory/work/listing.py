"""One agent's view of the work queue: what is waiting, running, done or failed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from ..db import Database


@dataclass(frozen=True, slots=True, kw_only=True)
class QueuedWork:
    """One work item as an owner sees it (its payload stays internal)."""

    id: int
    task: str
    memory_id: UUID
    state: str  # pending | running | done | failed
    attempts: int
    run_after: datetime
    lease_until: datetime | None
    locked_by: str | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentQueue:
    """Counts per (task, state) and the items most worth a look."""

    counts: dict[str, dict[str, int]]
    items: list[QueuedWork]


async def agent_queue(db: Database, agent_id: str, limit: int = 50) -> AgentQueue:
    counts: dict[str, dict[str, int]] = {}
    for row in await db.fetch("work_counts_of_agent", agent_id):
        counts.setdefault(row["task"], {})[row["state"]] = row["n"]
    items = [QueuedWork(**dict(row)) for row in await db.fetch("work_items_of_agent",
                                                               agent_id, limit)]
    return AgentQueue(counts=counts, items=items)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueDepth:
    """Open items of one task in one state, every agent at once, and the oldest's age."""

    task: str
    state: str
    items: int
    oldest_s: float


async def queue_depths(db: Database) -> list[QueueDepth]:
    return [QueueDepth(task=r["task"], state=r["state"], items=r["items"],
                       oldest_s=r["oldest_s"]) for r in await db.fetch("work_queue_depths")]
