"""The durable work queue's records: what a task handler receives and how work is queued.

A handler is an async callable taking a :class:`WorkContext`.  It does its slow work
(LLM, embeddings) with no transaction open, then writes its result inside
``async with ctx.commit() as conn:``, which completes the item in the same transaction
only while this worker still holds the lease.  ``ctx.skip()`` completes an item that
has nothing left to do (a duplicate, or its memory was deleted).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from ..db import Connection, Database
from ..db.contention import again_on_contention
from ..db.outage import Backoff
from ..errors import ConflictError, DatabaseUnavailableError
from .tasks import Task

COMMIT_WAIT_S = 60.0  # well inside a lease, which the heartbeat keeps extending
# how long a result waits for the agent's lock (held through an erasure or an import's
# merge) before the item goes back to the queue, so one agent cannot hold up the worker
COMMIT_LOCK_WAIT_MS = 10_000
CONTENTION_RETRIES = 2


class LeaseLost(ConflictError):
    """Another worker took the item over (our lease expired); our result is dropped."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkItem:
    agent_id: str
    id: int
    task: str  # a Task value, or the name of a task this version no longer has
    memory_id: UUID
    attempts: int
    payload: Mapping[str, Any] = field(default_factory=dict)
    last_try: bool = False  # the final attempt: prefer a degraded result to a failure


class WorkContext:
    """One claimed item, and the only way to finish it."""

    def __init__(self, db: Database, item: WorkItem, worker_id: str) -> None:
        self._db = db
        self.item = item
        self.worker_id = worker_id

    @asynccontextmanager
    async def commit(self) -> AsyncIterator[Connection]:
        """A transaction that completes the item; raises :class:`LeaseLost` if overtaken.

        It takes the agent's fact lock before any row, as fact decisions, imports and
        erasures do: a result written while the agent is being erased waits for the
        erasure (and then finds its item gone) instead of deadlocking with it; for at
        most ``COMMIT_LOCK_WAIT_MS``, after which it raises ``ContentionError``."""
        item = self.item
        async with self._db.transaction() as conn:
            await conn.fetchval("work_commit_lock_wait", f"{COMMIT_LOCK_WAIT_MS}ms")
            await conn.execute("lock_agent_facts", item.agent_id)
            if await conn.fetchval("work_complete", item.agent_id, item.id,
                                   self.worker_id) is None:
                raise LeaseLost(f"lease on work item {item.id} lost")
            yield conn

    async def commit_when_possible(self, write: Callable[[Connection], Awaitable[None]], *,
                                   wait_s: float = COMMIT_WAIT_S) -> None:
        """Run ``write`` in :meth:`commit`, again while the database is away (up to
        ``wait_s``) and a few times when another transaction held what it needed: a
        result that cost an LLM call is not thrown away because the database restarted
        just before it was written, or chose it as a deadlock's victim.  Safe to repeat:
        a failed commit wrote nothing, and one that went through before the connection
        was lost completed the item, so the repeat finds it done (:class:`LeaseLost`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s

        async def while_away() -> None:
            backoff = Backoff(cap_s=2.0)
            while True:
                try:
                    async with self.commit() as conn:
                        await write(conn)
                    return
                except DatabaseUnavailableError:
                    if loop.time() >= deadline:
                        raise
                    await backoff.wait()

        # past its retries, a ContentionError puts the item back in the queue
        await again_on_contention(while_away, attempts=CONTENTION_RETRIES + 1)

    async def skip(self) -> None:
        """Complete the item without a result (nothing left to do)."""
        await self._db.fetchval("work_complete", self.item.agent_id, self.item.id,
                                self.worker_id)


TaskHandler = Callable[[WorkContext], Awaitable[None]]


async def enqueue(conn: Connection | Database, agent_id: str, task: Task, memory_id: UUID, *,
                  delay_s: float = 0.0, dedup_key: str = "",
                  payload: Mapping[str, Any] | None = None) -> None:
    """Queue ``task`` for a memory; a no-op while an open item with the same key exists."""
    await conn.execute("work_enqueue", agent_id, task, memory_id, delay_s, dedup_key,
                       dict(payload or {}))
