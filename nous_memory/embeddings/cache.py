"""Embeddings through the per-agent cache: a text is embedded once per agent and model.

Facts are restated, summaries re-embedded after an edit is undone, and an assistant
asks the same question turn after turn; the model call is the slow part of every
write, so each text's vector is kept under the SHA-256 of the text
(``embedding_cache``, written inside the caller's write transaction) and repeated
queries are also answered from this process (``query_cache``).  Keyed by agent: one
agent's cache never tells another what was written or asked.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from pgvector import Vector as PgVector

from ..db import Connection, Database
from .base import Embedder, Vector, embed_checked
from .query_cache import QueryCache


def text_digest(text: str) -> bytes:
    """SHA-256 of the UTF-8 text: the key of cached embeddings (and of fact hashes)."""
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class Embedded:
    vectors: list[Vector]
    fresh: dict[bytes, Vector]  # computed now, to be cached in the write transaction


class EmbeddingCache:
    """The store's one way to embed text; every method is scoped to one agent."""

    def __init__(self, db: Database, embedder: Embedder) -> None:
        self._db = db
        self._embedder = embedder
        self.recent_queries = QueryCache()

    @property
    def model_name(self) -> str:
        return self._embedder.model_name

    @property
    def dimension(self) -> int:
        return self._embedder.dimension

    async def embed(self, agent: str, texts: list[str]) -> Embedded:
        """One cache lookup, one model call for the misses; nothing is written (the
        caller stores ``fresh`` with :meth:`save` in its write transaction)."""
        digests = [text_digest(t) for t in texts]
        cached: dict[bytes, Vector] = {
            bytes(r["text_sha256"]): _as_array(r["embedding"])
            for r in await self._db.fetch("embedding_cache_lookup", agent,
                                          self._embedder.model_name, list(set(digests)))
        }
        missing: dict[bytes, str] = {}
        for digest, text in zip(digests, texts, strict=True):
            if digest not in cached:
                missing.setdefault(digest, text)
        fresh: dict[bytes, Vector] = {}
        if missing:
            vectors = await embed_checked(self._embedder, list(missing.values()))
            fresh = dict(zip(missing, vectors, strict=True))
        return Embedded([cached.get(d, fresh.get(d)) for d in digests],  # type: ignore[misc]
                        fresh)

    async def embed_texts(self, agent: str, texts: list[str]) -> list[Vector]:
        """Embeddings through the cache (nothing is written; for callers that store them)."""
        return (await self.embed(agent, texts)).vectors if texts else []

    async def embed_query(self, agent: str, text: str) -> Vector:
        """One query's embedding: the recent queries of this process, else the
        database cache, else the model; a miss is cached (one statement, after the
        model call: no transaction is held while embedding)."""
        vector = self.recent_queries.get(agent, text)
        if vector is not None:
            return vector
        embedded = await self.embed(agent, [text])
        if embedded.fresh:
            async with self._db.acquire() as conn:
                await self.save(conn, agent, embedded)
        self.recent_queries.put(agent, text, embedded.vectors[0])
        return embedded.vectors[0]

    async def query_vector(self, agent: str, text: str) -> Vector:
        """The hot read path's query embedding: the recent queries of this process,
        else the model (no database round trip)."""
        vector = self.recent_queries.get(agent, text)
        if vector is None:
            (vector,) = await embed_checked(self._embedder, [text])
            self.recent_queries.put(agent, text, vector)
        return vector

    async def save(self, conn: Connection, agent: str, embedded: Embedded) -> None:
        """Store freshly computed embeddings, inside the caller's write transaction."""
        if embedded.fresh:
            await conn.execute("embedding_cache_store", agent, self._embedder.model_name,
                               list(embedded.fresh),
                               [PgVector(v) for v in embedded.fresh.values()])

    async def forget(self, conn: Connection, agent: str, model: str | None,
                     text: str) -> None:
        """A purged text leaves the cache, in the database (when it was embedded, by
        ``model``) and in this process."""
        if model:
            await conn.execute("embedding_cache_forget", agent, model, text_digest(text))
        self.recent_queries.forget(agent, text)

    def forget_agent(self, agent: str) -> None:
        """An erased agent's queries leave this process (its rows go with the agent)."""
        self.recent_queries.forget_agent(agent)


def _as_array(value: Any) -> Vector:
    """The pgvector codec decodes to its own Vector type; the store works with ndarrays."""
    array: Vector = value.to_numpy() if isinstance(value, PgVector) else np.asarray(
        value, dtype=np.float32)
    return array
