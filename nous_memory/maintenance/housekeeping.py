"""Housekeeping: expired extraction-cache rows, work items whose worker died, and
embeddings made by another model than the configured one (re-embedded in batches, the
model calls outside any transaction)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any
from uuid import UUID

from pgvector import Vector as PgVector

from ..db import Database
from ..memories import MemoryManager
from ..worker import MAX_ATTEMPTS
from .batches import FIRST_KEY, BatchHook, JobResult, Sweeps
from .policy import MaintenancePolicy


class Housekeeping:
    def __init__(self, db: Database, memories: MemoryManager, policy: MaintenancePolicy
                 ) -> None:
        self._db = db
        self._memories = memories
        self._policy = policy

    async def run(self, *, now: datetime, dry_run: bool = False,
                  on_batch: BatchHook | None = None) -> JobResult:
        size = self._policy.batch_size
        async with Sweeps.open(self._db, dry_run=dry_run, on_batch=on_batch) as sweeps:
            await sweeps.drain("cache_expired", "expire_extraction_cache", now, size,
                               batch=size)
            await sweeps.drain("work_requeued", "requeue_stuck_work", now, MAX_ATTEMPTS, size,
                               batch=size)
        counts = dict(sweeps.counts)
        model = self._memories.model_name
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
        size = self._policy.batch_size
        cursor: tuple[str, UUID] = FIRST_KEY
        total = 0
        while True:
            rows = await self._db.fetch("stale_embeddings_batch", *cursor, model, size)
            if rows:
                vectors = await self._embed(rows, "summary")
                n = await self._db.fetchval(
                    "reembed_write", [r["agent_id"] for r in rows], [r["id"] for r in rows],
                    [r["version"] for r in rows], vectors, model)
                total += n
                if on_batch is not None:
                    await on_batch("memories_reembedded", n)
                cursor = (rows[-1]["agent_id"], rows[-1]["id"])
            if len(rows) < size:
                return total

    async def _reembed_chunks(self, model: str, on_batch: BatchHook | None) -> int:
        size = self._policy.batch_size
        cursor: tuple[str, UUID, int] = (*FIRST_KEY, -1)
        total = 0
        while True:
            rows = await self._db.fetch("stale_chunk_embeddings_batch", *cursor, model, size)
            if rows:
                vectors = await self._embed(rows, "content")
                n = await self._db.fetchval(
                    "reembed_chunks_write", [r["agent_id"] for r in rows],
                    [r["episode_id"] for r in rows], [r["chunk_no"] for r in rows], vectors,
                    model)
                total += n
                if on_batch is not None:
                    await on_batch("chunks_reembedded", n)
                last = rows[-1]
                cursor = (last["agent_id"], last["episode_id"], last["chunk_no"])
            if len(rows) < size:
                return total

    async def _embed(self, rows: list[Any], column: str) -> list[PgVector]:
        """Vectors in row order; texts embedded per agent (the cache is per agent)."""
        by_agent: dict[str, list[int]] = defaultdict(list)
        for i, row in enumerate(rows):
            by_agent[row["agent_id"]].append(i)
        vectors: list[PgVector | None] = [None] * len(rows)
        for agent, indexes in by_agent.items():
            embedded = await self._memories.embed_texts(agent, [rows[i][column]
                                                                for i in indexes])
            for i, vector in zip(indexes, embedded, strict=True):
                vectors[i] = PgVector(vector)
        return [v for v in vectors if v is not None]
