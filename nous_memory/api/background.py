"""The work-queue worker inside the API process, for the lifetime of the app.

``serve`` runs one by default (``Settings.run_worker_in_serve``) so that closed episodes
get their summaries without a separate ``nous-memory worker``.  Stopping sets the
worker's stop event and waits for its current item; a worker still busy after
``STOP_GRACE_S`` (a slow LLM call) is cancelled, which is safe: an unfinished item is
claimed again when its lease expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from ..store import MemoryStore

log = logging.getLogger("nous_memory.api")

STOP_GRACE_S = 10.0


@contextlib.asynccontextmanager
async def background_worker(store: MemoryStore, *, enabled: bool, poll_s: float = 1.0,
                            stop_grace_s: float = STOP_GRACE_S
                            ) -> AsyncIterator[asyncio.Task[None] | None]:
    """Run ``store.worker()`` as a task while the block runs (nothing if not ``enabled``);
    the block gets the task (None when disabled), so ``/ready`` can see it is alive."""
    if not enabled:
        yield None
        return
    stop = asyncio.Event()
    worker = store.worker(poll_s=poll_s)
    task = asyncio.create_task(worker.run(stop), name=f"nous-memory worker {worker.worker_id}")
    log.info("work-queue worker %s started", worker.worker_id)
    try:
        yield task
    finally:
        stop.set()
        done, _ = await asyncio.wait({task}, timeout=stop_grace_s)
        if not done:
            log.warning("work-queue worker %s still busy after %.0f s; cancelling it",
                        worker.worker_id, stop_grace_s)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif not task.cancelled() and task.exception() is not None:
            log.error("work-queue worker %s failed", worker.worker_id,
                      exc_info=task.exception())
        log.info("work-queue worker %s stopped", worker.worker_id)


@contextlib.asynccontextmanager
async def background_scheduler(store: MemoryStore, *, enabled: bool) -> AsyncIterator[None]:
    """Run the maintenance scheduler (``jobs``) while the block runs (nothing if not
    ``enabled``); runs in progress at shutdown get its grace time, then are cancelled
    (safe: their committed batches stay and the next run continues)."""
    if not enabled:
        yield
        return
    from jobs import JobScheduler  # the jobs package sits above the library

    scheduler = JobScheduler(store)
    await scheduler.start()
    try:
        yield
    finally:
        await scheduler.stop()
