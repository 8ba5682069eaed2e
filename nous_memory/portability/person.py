"""Forgetting one person of an agent (people/): what is theirs alone is purged, and they
leave what they shared with others.

A household or a team keeps its assistant when one of its people leaves.  Every memory
that is that person's alone (their facts, their own conversations with every turn and
chunk, what was learned from them) is purged as a single delete purges it, in one
transaction; the conversations they had with others stay the others' memory, without
the person among their people, and the messages they said there belong to nobody in
particular.  The audit keeps a content-free ``purged`` event per memory.
"""

from __future__ import annotations

from collections import Counter

from ..db import Database
from ..db.audit import record_events
from ..db.contention import again_on_contention
from ..embeddings.cache import EmbeddingCache
from ..memories.kinds import parse_agent_id
from ..memories.params import parse_actor
from ..memories.purge import purge_rows
from ..people import person_key
from .reports import PersonErasure


class PersonEraser:
    def __init__(self, db: Database, embeddings: EmbeddingCache) -> None:
        self._db = db
        self._embeddings = embeddings

    async def forget(self, agent_id: str, user: str, *, actor: str) -> PersonErasure:
        agent = parse_agent_id(agent_id)
        person = person_key(user, "user")
        actor = parse_actor(actor)
        return await again_on_contention(lambda: self._erase(agent, person, actor))

    async def _erase(self, agent: str, person: str, actor: str) -> PersonErasure:
        async with self._db.transaction() as conn:
            await conn.execute("lock_agent_facts", agent)  # never mid-learn_fact
            rows = await conn.fetch("person_memories", agent, person)
            alone = [r["id"] for r in rows if list(r["people"]) == [person]]
            shared = [r["id"] for r in rows if list(r["people"]) != [person]]
            kinds: Counter[str] = Counter()
            events = []
            for ident in alone:
                event = await purge_rows(conn, self._embeddings, agent, ident)
                kinds[event["new_values"]["kind"]] += 1
                events.append({"memory_id": str(ident), "actor": actor, **event})
            await conn.execute("person_leave_messages", agent, person, shared)
            await conn.execute("person_leave_memories", agent, person, shared)
            await record_events(conn, agent, events)
        return PersonErasure(agent_id=agent, purged=dict(kinds), left=len(shared),
                             actor=actor)
