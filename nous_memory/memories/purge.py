"""Purging a memory: its rows and content gone, its links to others unlinked, its audit
trail kept without content.  One place for the sequence, inside the caller's
transaction: a single delete and a person's erasure (people/) run the same steps."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ..db import Connection
from ..embeddings.cache import EmbeddingCache
from ..errors import NotFoundError


async def purge_rows(conn: Connection, embeddings: EmbeddingCache, agent: str,
                     ident: UUID) -> dict[str, Any]:
    """Purge one memory (the agent's fact lock held); the ``purged`` event to record."""
    await conn.execute("purge_unlink", agent, ident)
    gone = await conn.fetchrow("purge_memory", agent, ident)
    if gone is None:
        raise NotFoundError("memory", ident)
    await conn.execute("purge_memory_leftovers", agent, ident)
    await conn.execute("redact_events", agent, ident)
    await embeddings.forget(conn, agent, gone["embedding_model"], gone["summary"])
    return {"event": "purged", "old_values": None, "new_values": {"kind": gone["kind"]}}
