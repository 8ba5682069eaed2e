"""The work-queue worker: durable deferred work, safe with several workers at once.

An item is claimed with ``FOR UPDATE SKIP LOCKED`` under a lease.  Slow work (LLM,
embeddings) happens with no transaction open; the result is written in one transaction
that first re-checks the lease, so a worker killed at any instant leaves either nothing
or the complete result, never both.  While it works, a worker holds a session lock on a
connection of its own (its presence): when its process dies, the lock goes with the
connection and other workers claim its item at once instead of waiting for the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from ..db import Database
from ..errors import loggable
from .queue import LeaseLost, TaskHandler, WorkContext, WorkItem
from .tasks import Task

_log = logging.getLogger(__name__)

MAX_ATTEMPTS = 6

IdleSweep = Callable[[int], Awaitable[int]]


class Worker:
    """Claims items and dispatches each on its task to a handler (see ``queue``)."""

    def __init__(self, db: Database, handlers: Mapping[Task, TaskHandler], *,
                 idle_sweep: IdleSweep | None = None, worker_id: str | None = None,
                 lease_s: float = 300.0, poll_s: float = 1.0,
                 retry_base_s: float = 5.0) -> None:
        self._db = db
        self._handlers: dict[str, TaskHandler] = {task.value: h for task, h in handlers.items()}
        self._idle_sweep = idle_sweep
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._lease_s = lease_s
        self._poll_s = poll_s
        self._retry_base_s = retry_base_s
        self._present = False

    @contextlib.asynccontextmanager
    async def presence(self) -> AsyncIterator[None]:
        """Hold this worker's presence lock (nested uses share the outer one)."""
        if self._present:
            yield
            return
        async with self._db.session() as conn:
            await conn.fetchval("worker_present", self.worker_id)
            self._present = True
            try:
                yield
            finally:
                self._present = False

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set: close idle episodes, drain ready items, wait."""
        async with self.presence():
            await self._serve(stop)

    async def _serve(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.close_idle()
            except Exception:  # the sweep must never stop the queue
                _log.exception("idle-episode sweep failed")
            try:
                while not stop.is_set() and await self.run_once():
                    pass
            except Exception:  # keep serving; the item itself was already retried
                _log.exception("worker loop error")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self._poll_s)

    async def drain(self, limit: int = 10_000) -> int:
        """Process ready items until none is left (or ``limit``); returns how many."""
        done = 0
        async with self.presence():
            while done < limit and await self.run_once():
                done += 1
        return done

    async def close_idle(self, limit: int = 100) -> int:
        """Close open episodes that went idle (the sweep given at construction)."""
        return 0 if self._idle_sweep is None else await self._idle_sweep(limit)

    async def run_once(self) -> bool:
        """Claim and process one ready item; False when none is ready."""
        async with self.presence():
            return await self._run_one()

    async def _run_one(self) -> bool:
        await self._db.execute("work_fail_exhausted", MAX_ATTEMPTS)
        row = await self._db.fetchrow("work_claim", self._lease_s, self.worker_id,
                                      MAX_ATTEMPTS)
        if row is None:
            return False
        item = WorkItem(agent_id=row["agent_id"], id=row["id"], task=row["task"],
                        memory_id=row["memory_id"], attempts=row["attempts"],
                        payload=row["payload"], last_try=row["attempts"] >= MAX_ATTEMPTS)
        try:
            handler = self._handlers.get(item.task)
            if handler is None:
                raise LookupError(f"no handler for task {item.task!r} in this worker")
            async with self._heartbeat(item):
                await handler(WorkContext(self._db, item, self.worker_id))
        except LeaseLost as exc:  # expected when a slow worker was overtaken
            _log.info("result of work item %s dropped: %s", item.id, exc)
        except Exception as exc:
            delay = min(self._retry_base_s * 2 ** (item.attempts - 1), 3600.0)
            state = await self._db.fetchval(
                "work_retry", item.agent_id, item.id, self.worker_id, MAX_ATTEMPTS,
                delay, f"{type(exc).__name__}: {exc}"[:2000])
            log = _log.warning if state == "pending" else _log.error
            log("work item %s (%s) failed, now %s: %s (the whole error is the item's "
                "last error)", item.id, item.task, state, loggable(exc))
        return True

    @contextlib.asynccontextmanager
    async def _heartbeat(self, item: WorkItem) -> AsyncIterator[None]:
        """Extend the lease every third of it while the item is being worked on."""

        async def beat() -> None:
            while True:
                await asyncio.sleep(self._lease_s / 3)
                await self._db.fetchval("work_extend_lease", item.agent_id, item.id,
                                        self.worker_id, self._lease_s)

        task = asyncio.create_task(beat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
