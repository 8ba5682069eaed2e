"""What an episode taught the store: the facts and decisions learned from it."""

from __future__ import annotations

from uuid import UUID

from ..db import Database
from ..memories.kinds import parse_agent_id
from ..memories.params import parse_memory_id
from ..memories.records import Memory


async def learned_from(db: Database, agent_id: str, episode_id: UUID | str) -> list[Memory]:
    """Facts, then decisions, whose ``source_episode_id`` is this episode."""
    agent = parse_agent_id(agent_id)
    ident = parse_memory_id(episode_id, "episode_id")
    return [Memory.from_row(r) for r in await db.fetch("memories_learned_from_episode",
                                                       agent, ident)]
