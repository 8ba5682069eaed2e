"""Store-level maintenance: the work behind the scheduled jobs (``jobs/``).

Everything here is set-based SQL in bounded batches, resumable after a kill, with an
injectable ``now`` and a dry run that reports without changing anything.  ``jobs/``
only decides when to call it, holds the cluster lock and records each run.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from uuid import UUID

from ..db import Database
from ..embeddings.cache import EmbeddingCache
from ..llm import LLMClient
from ..memories.kinds import parse_agent_id
from ..memories.manager import MemoryManager
from ..work.queue import WorkContext
from .backfill import Backfill
from .batches import BatchHook, JobResult
from .compression import Compression
from .housekeeping import Housekeeping
from .indexes import AgentIndexes
from .policy import MaintenancePolicy
from .promotion import CORE_TAG, REVIEW_TAG, run_lifecycle
from .resummarize import Resummarizer
from .slots import read_slots
from .tiering import RestoreResult, Tiering

__all__ = ["CORE_TAG", "REVIEW_TAG", "BatchHook", "JobResult", "Maintenance",
           "MaintenancePolicy", "RestoreResult"]


class Maintenance:
    """One object per store; each method is one job's body."""

    def __init__(self, db: Database, memories: MemoryManager, embeddings: EmbeddingCache,
                 llm: LLMClient | None, policy: MaintenancePolicy) -> None:
        self._db = db
        self.policy = policy
        self.llm_configured = llm is not None
        self._tiering = Tiering(db, policy, llm_configured=llm is not None)
        self._compression = Compression(db, llm, policy)
        self._housekeeping = Housekeeping(db, embeddings, policy)
        self._resummarizer = Resummarizer(db, memories, embeddings, llm)
        self._backfill = Backfill(db, policy, llm_configured=llm is not None)
        self.agent_indexes = AgentIndexes(db, policy)

    async def regenerate_summary(self, ctx: WorkContext) -> None:
        """Runs ``Task.SUMMARY_REGENERATE``, which the trim job queues."""
        await self._resummarizer.process(ctx)

    async def trim(self, *, now: datetime, dry_run: bool = False,
                   agent_id: str | None = None, on_batch: BatchHook | None = None
                   ) -> JobResult:
        return await self._tiering.trim(now=now, dry_run=dry_run, agent_id=agent_id,
                                        on_batch=on_batch)

    async def archive(self, *, now: datetime, dry_run: bool = False,
                      agent_id: str | None = None, ended_before: datetime | None = None,
                      on_batch: BatchHook | None = None) -> JobResult:
        return await self._tiering.archive(now=now, dry_run=dry_run, agent_id=agent_id,
                                           ended_before=ended_before, on_batch=on_batch)

    async def restore(self, agent_id: str, memory_id: UUID | str, *,
                      actor: str | None = None) -> RestoreResult:
        return await self._tiering.restore(agent_id, memory_id, actor=actor)

    async def retention(self, *, now: datetime, dry_run: bool = False,
                        on_batch: BatchHook | None = None) -> JobResult:
        return await self._tiering.retention(now=now, dry_run=dry_run, on_batch=on_batch)

    async def lifecycle(self, *, now: datetime, dry_run: bool = False,
                        on_batch: BatchHook | None = None) -> JobResult:
        return await run_lifecycle(self._db, self.policy, now=now, dry_run=dry_run,
                                   on_batch=on_batch)

    async def compress(self, *, now: datetime, dry_run: bool = False,
                       on_batch: BatchHook | None = None) -> JobResult:
        return await self._compression.run(now=now, dry_run=dry_run, on_batch=on_batch)

    async def housekeeping(self, *, now: datetime, dry_run: bool = False,
                           on_batch: BatchHook | None = None) -> JobResult:
        return await self._housekeeping.run(now=now, dry_run=dry_run, on_batch=on_batch)

    async def indexes(self, *, now: datetime, dry_run: bool = False,
                      on_batch: BatchHook | None = None) -> JobResult:
        return await self.agent_indexes.run(now=now, dry_run=dry_run, on_batch=on_batch)

    async def backfill(self, *, now: datetime, dry_run: bool = False,
                       agent_id: str | None = None, on_batch: BatchHook | None = None
                       ) -> JobResult:
        slots = await read_slots(self._db, None if agent_id is None
                                 else parse_agent_id(agent_id), dry_run=dry_run)
        result = await self._backfill.run(now=now, dry_run=dry_run, agent_id=agent_id,
                                          on_batch=on_batch)
        if not slots["facts_read_for_slots"]:
            return result  # every fact has been read (a store created with slots)
        return dataclasses.replace(result, counts={**result.counts, **slots}, skipped=False)
