"""Forgetting an agent: every row of it, in every table, gone in one transaction.

The tables are read from the live catalog (every table with an ``agent_id`` column), not
from a list, so a table added later is erased too.  What remains is a receipt in
``agent_erasures``: a SHA-256 of the agent id, the time, the rows removed per table and
who asked; no content, not even the id.
"""

from __future__ import annotations

import hashlib

from ..db import Database
from ..db.bulk import agent_tables, count_agent_rows, delete_agent_rows
from ..db.contention import again_on_contention
from ..embeddings.cache import EmbeddingCache
from ..errors import ConflictError, NotFoundError
from ..memories.kinds import parse_agent_id
from ..memories.params import parse_actor
from .reports import ErasureReceipt

SWEEPS = 3  # rows a concurrent writer committed meanwhile are swept up again


def agent_sha256(agent_id: str) -> bytes:
    return hashlib.sha256(agent_id.encode("utf-8")).digest()


class Eraser:
    def __init__(self, db: Database, embeddings: EmbeddingCache) -> None:
        self._db = db
        self._embeddings = embeddings

    async def forget(self, agent_id: str, *, actor: str) -> ErasureReceipt:
        agent = parse_agent_id(agent_id)
        actor = parse_actor(actor)
        # a worker still finishing the agent's episodes may deadlock with it
        return await again_on_contention(lambda: self._erase(agent, actor))

    async def _erase(self, agent: str, actor: str) -> ErasureReceipt:
        async with self._db.transaction() as conn:
            await conn.execute("portability_lock_agent", agent)
            tables = await agent_tables(conn)
            counts = {t: await count_agent_rows(conn, t, agent) for t in tables}
            if not any(counts.values()):
                raise NotFoundError("agent", agent)
            for _ in range(SWEEPS):
                await conn.execute("erasure_unlink_agent", agent)
                for table in tables:  # links unlinked, the rest cascades: any order works
                    await delete_agent_rows(conn, table, agent)
                late = {t: await count_agent_rows(conn, t, agent) for t in tables}
                if not any(late.values()):
                    break
                counts = {t: counts[t] + late[t] for t in tables}
            else:
                raise ConflictError(f"agent {agent} kept receiving writes during the erasure; "
                                    "nothing was erased. Stop its writers and retry")
            total = sum(counts.values())
            digest = agent_sha256(agent)
            row = await conn.fetchrow("erasure_record", digest, counts, total, actor)
            assert row is not None
        self._embeddings.forget_agent(agent)
        return ErasureReceipt(audit_id=row["id"], agent_id=agent, agent_sha256=digest.hex(),
                              erased_at=row["erased_at"], counts=counts, total_rows=total,
                              actor=actor)

