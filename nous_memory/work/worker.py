"""The work-queue worker: durable deferred work, safe with several workers at once.

An item is claimed with ``FOR UPDATE SKIP LOCKED`` under a lease.  Slow work (LLM,
embeddings) happens with no transaction open; the result is written in one transaction
that first re-checks the lease, so a worker killed at any instant leaves either nothing
(the item is claimed again when its lease expires) or the complete result, never both.
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
from .queue import LeaseLost, TaskHandler, WorkContext, WorkItem

_log = logging.getLogger(__name__)

MAX_ATTEMPTS = 6

IdleSweep = Callable[[int], Awaitable[int]]


class Worker:
    """Claims items and dispatches each on its task to a handler (see ``queue``)."""

    def __init__(self, db: Database, handlers: Mapping[str, TaskHandler], *,
                 idle_sweep: IdleSweep | None = None, worker_id: str | None = None,
                 lease_s: float = 300.0, poll_s: float = 1.0,
                 retry_base_s: float = 5.0) -> None:
        self._db = db
        self._handlers = dict(handlers)
        self._idle_sweep = idle_sweep
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._lease_s = lease_s
        self._poll_s = poll_s
        self._retry_base_s = retry_base_s

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set: close idle episodes, drain ready items, wait."""
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
        while done < limit and await self.run_once():
            done += 1
        return done

    async def close_idle(self, limit: int = 100) -> int:
        """Close open episodes that went idle (the sweep given at construction)."""
        return 0 if self._idle_sweep is None else await self._idle_sweep(limit)

    async def run_once(self) -> bool:
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
            log("work item %s (%s) failed, now %s: %s", item.id, item.task, state, exc)
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
