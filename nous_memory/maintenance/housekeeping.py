"""Housekeeping: expired extraction-cache rows, work items whose worker died, and
embeddings made by another model than the configured one (re-embedded in batches, the
model calls outside any transaction)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from pgvector import Vector as PgVector

from ..db import Database
from ..embeddings.cache import EmbeddingCache
from ..work.worker import MAX_ATTEMPTS
from .batches import FIRST_KEY, Batch, BatchHook, JobResult, Sweeps
from .policy import MaintenancePolicy

EXPIRE = Batch(per_agent="expire_extraction_cache",
               whole_table="expire_extraction_cache_all_agents")


class Housekeeping:
    def __init__(self, db: Database, embeddings: EmbeddingCache, policy: MaintenancePolicy
                 ) -> None:
        self._db = db
        self._embeddings = embeddings
        self._policy = policy

    async def run(self, *, now: datetime, dry_run: bool = False,
                  on_batch: BatchHook | None = None) -> JobResult:
        size = self._policy.batch_size
        async with Sweeps.open(self._db, dry_run=dry_run, on_batch=on_batch,
                               policy=self._policy) as sweeps:
            await sweeps.drain_agents("cache_expired", ("expired_cache_agents", now),
                                      EXPIRE, now, size, batch=size)
            await sweeps.drain("work_requeued", "requeue_stuck_work", now, MAX_ATTEMPTS, size,
                               batch=size)
        counts = dict(sweeps.counts)
        model = self._embeddings.model_name
        if dry_run:
            stale = await self._db.fetchrow("count_stale_embeddings", model)
            assert stale is not None
            counts["memories_reembedded"] = stale["memories"]
            counts["chunks_reembedded"] = stale["chunks"]
        else:
            counts["memories_reembedded"] = await self._reembed_memories(model, on_batch)
            counts["chunks_reembedded"] = await self._reembed_chunks(model, on_batch)
        return JobResult(counts=counts, dry_run=dry_run)

    async def _reembed_memories(self, model: str, on_batch: BatchHook | None) -> int:
        return await self._reembed("memories_reembedded", "stale_embeddings_batch",
                                   "reembed_write", ("agent_id", "id", "version"), "summary",
                                   (*FIRST_KEY,), model, on_batch)

    async def _reembed_chunks(self, model: str, on_batch: BatchHook | None) -> int:
        return await self._reembed("chunks_reembedded", "stale_chunk_embeddings_batch",
                                   "reembed_chunks_write", ("agent_id", "episode_id",
                                                            "chunk_no"), "content",
                                   (*FIRST_KEY, -1), model, on_batch)

    async def _reembed(self, step: str, select: str, write: str, keys: tuple[str, ...],
                       text: str, cursor: tuple[Any, ...], model: str,
                       on_batch: BatchHook | None) -> int:
        """Batches in key order.  ``select`` takes the cursor (its length says how many
        of ``keys`` make the sort key), the model and the batch size; the texts are
        embedded outside any transaction; ``write`` takes one array per key column, the
        vectors and the model, and skips rows changed meanwhile."""
        size = self._policy.batch_size
        total = 0
        while True:
            rows = await self._db.fetch(select, *cursor, model, size)
            if rows:
                vectors = await self._embed(rows, text)
                n = await self._db.fetchval(write, *([r[k] for r in rows] for k in keys),
                                            vectors, model)
                total += n
                if on_batch is not None:
                    await on_batch(step, n)
                cursor = tuple(rows[-1][k] for k in keys[:len(cursor)])
            if len(rows) < size:
                return total

    async def _embed(self, rows: list[Any], column: str) -> list[PgVector]:
        """Vectors in row order; texts embedded per agent (the cache is per agent)."""
        by_agent: dict[str, list[int]] = defaultdict(list)
        for i, row in enumerate(rows):
            by_agent[row["agent_id"]].append(i)
        vectors: list[PgVector | None] = [None] * len(rows)
        for agent, indexes in by_agent.items():
            embedded = await self._embeddings.embed_texts(agent, [rows[i][column]
                                                                for i in indexes])
            for i, vector in zip(indexes, embedded, strict=True):
                vectors[i] = PgVector(vector)
        return [v for v in vectors if v is not None]
