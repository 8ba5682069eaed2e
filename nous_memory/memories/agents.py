"""The agents a store holds, and what each one keeps: counts per kind and storage use."""

from __future__ import annotations

from dataclasses import dataclass

from ..db import Database
from ..errors import InvalidInputError
from .kinds import parse_agent_id

MAX_AGENTS = 1_000


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOverview:
    """One agent at a glance; ``storage`` holds bytes per area (memories, details,
    transcripts, cold_storage) as stored, compressed values counted compressed."""

    agent_id: str
    counts: dict[str, dict[str, int]]  # kind -> status -> memories
    storage: dict[str, int]

    @property
    def total(self) -> int:
        return sum(n for per_status in self.counts.values() for n in per_status.values())

    @property
    def storage_bytes(self) -> int:
        return sum(self.storage.values())


async def known_agents(db: Database, *, limit: int = MAX_AGENTS, after: str = "") -> list[str]:
    """The agents that hold memories, in id order: at most ``limit`` after ``after``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_AGENTS:
        raise InvalidInputError.single("limit", f"must be between 1 and {MAX_AGENTS}")
    query = "known_agents_distributed" if db.distributed else "known_agents"
    return [r["agent_id"] for r in await db.fetch(query, limit, str(after))]


async def agent_overview(db: Database, agent_id: str) -> AgentOverview:
    agent = parse_agent_id(agent_id)
    counts: dict[str, dict[str, int]] = {}
    for r in await db.fetch("count_memories", agent):
        counts.setdefault(r["kind"], {})[r["status"]] = r["n"]
    row = await db.fetchrow("agent_storage", agent)
    storage = {key: int(value) for key, value in dict(row or {}).items()}
    return AgentOverview(agent_id=agent, counts=counts, storage=storage)
