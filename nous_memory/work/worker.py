"""The work-queue worker: durable deferred work, safe with several workers at once.

An item is claimed with ``FOR UPDATE SKIP LOCKED`` under a lease.  Slow work (LLM,
embeddings) happens with no transaction open; the result is written in one transaction
that first re-checks the lease, so a worker killed at any instant leaves either nothing
or the complete result, never both.  While it works, a worker holds a session lock on a
connection of its own (its presence): when its process dies, the lock goes with the
connection and other workers claim its item at once instead of waiting for the lease.

The lock also goes when the database restarts or cuts the connection while the worker
lives on.  A keeper notices (the connection's end wakes it) and takes the lock again on
a new connection, with backoff while the database is away; for ``PRESENCE_GRACE_S``
after a server start no worker treats a missing lock as death, so a worker that lived
through the restart has time to take its lock back before anyone else takes its item.
While it has no lock a worker claims nothing.  An outage costs one warning and one line
when it ends (``db.outage``); the loops back off quietly in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from ..db import Connection, Database
from ..db.outage import Backoff
from ..errors import ContentionError, DatabaseUnavailableError, loggable
from .queue import LeaseLost, TaskHandler, WorkContext, WorkItem
from .tasks import Task

_log = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
# how long after a server start a missing presence lock proves nothing (the keeper takes
# it again within its backoff cap, a couple of seconds, once the server accepts)
PRESENCE_GRACE_S = 10.0
LOCK_WAIT_S = 5.0

IdleSweep = Callable[[int], Awaitable[int]]


class Worker:
    """Claims items and dispatches each on its task to a handler (see ``queue``)."""

    def __init__(self, db: Database, handlers: Mapping[Task, TaskHandler], *,
                 idle_sweep: IdleSweep | None = None, worker_id: str | None = None,
                 lease_s: float, poll_s: float = 1.0,
                 retry_base_s: float = 5.0, backoff_cap_s: float = 2.0) -> None:
        self._db = db
        self._handlers: dict[str, TaskHandler] = {task.value: h for task, h in handlers.items()}
        self._idle_sweep = idle_sweep
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._lease_s = lease_s
        self._poll_s = poll_s
        self._retry_base_s = retry_base_s
        self._backoff_cap_s = backoff_cap_s
        self._lock: Connection | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._lock_lost = asyncio.Event()
        self._taking = asyncio.Lock()
        # items whose failure could not be recorded (the database was away): recorded
        # as soon as it is back, instead of leaving them running until their lease ends
        self._unrecorded: list[tuple[WorkItem, BaseException]] = []
        # the items being worked on (registered under the claim lock), and whether the
        # database went away since the last claim: a claim's reply lost with its
        # connection may have committed, leaving an item this worker does not know it has
        self._in_flight: set[int] = set()
        self._claiming = asyncio.Lock()
        self._after_outage = False

    @contextlib.asynccontextmanager
    async def presence(self) -> AsyncIterator[None]:
        """Hold this worker's presence lock, kept (taken again after a lost connection)
        for as long as the block runs; nested uses share the outer one."""
        if self._keeper is not None:
            yield
            return
        await self._take_presence()
        self._keeper = asyncio.create_task(self._keep_presence(),
                                           name=f"presence of {self.worker_id}")
        try:
            yield
        finally:
            keeper, self._keeper = self._keeper, None
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            lock, self._lock = self._lock, None
            if lock is not None:
                await lock.close()

    @property
    def present(self) -> bool:
        """Whether this worker holds its presence lock right now."""
        return self._lock is not None and not self._lock.closed

    async def _take_presence(self) -> None:
        async with self._taking:  # the keeper and a claim may both find it lost
            if self.present:
                return
            lost, self._lock = self._lock, None
            if lost is not None:
                await lost.close()
            conn = await self._db.open_session()
            try:
                # a lost session's backend can outlive the client's view of it for a
                # moment: its lock would block this one; give up and try again later
                await asyncio.wait_for(conn.fetchval("worker_present", self.worker_id),
                                       timeout=LOCK_WAIT_S)
            except TimeoutError:
                await conn.close()
                raise DatabaseUnavailableError(
                    f"the presence lock of {self.worker_id} is still held by a lost "
                    f"session") from None
            except BaseException:
                await conn.close()
                raise
            conn.on_lost(self._lock_lost.set)
            self._lock = conn

    async def _keep_presence(self) -> None:
        backoff = Backoff(cap_s=self._backoff_cap_s)
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lock_lost.wait(), timeout=1.0)
            self._lock_lost.clear()
            if self.present:
                continue
            try:
                await self._take_presence()
            except DatabaseUnavailableError:
                self._lock_lost.set()  # try again after the delay
                await backoff.wait()
                continue
            except Exception:
                _log.exception("worker %s could not take its presence lock", self.worker_id)
                self._lock_lost.set()
                await backoff.wait()
                continue
            backoff.reset()
            _log.debug("worker %s holds its presence lock again", self.worker_id)

    async def _ensure_present(self) -> None:
        """Claim nothing without the lock: take it now if the keeper has not yet."""
        if not self.present:
            await self._take_presence()

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set: close idle episodes, drain ready items, wait.  A
        database that is away when it starts is waited for, like one that goes later."""
        backoff = Backoff(cap_s=self._backoff_cap_s)
        while not stop.is_set():
            try:
                async with self.presence():
                    await self._serve(stop)
                return
            except DatabaseUnavailableError:
                await backoff.wait(stop)

    async def _serve(self, stop: asyncio.Event) -> None:
        backoff = Backoff(cap_s=self._backoff_cap_s)
        while not stop.is_set():
            if await self._serve_once(stop):
                backoff.reset()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self._poll_s)
            else:
                await backoff.wait(stop)

    async def _serve_once(self, stop: asyncio.Event) -> bool:
        """One round: the idle sweep, then ready items; False when it must back off."""
        ok = True
        try:
            await self.close_idle()
        except DatabaseUnavailableError:  # said once by the outage tracker
            return False
        except Exception:  # the sweep must never stop the queue
            _log.exception("idle-episode sweep failed")
            ok = False
        try:
            while not stop.is_set() and await self.run_once():
                pass
        except DatabaseUnavailableError:
            return False
        except Exception:  # keep serving; the item itself was already retried
            _log.exception("worker loop error")
            ok = False
        return ok

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
        try:
            await self._ensure_present()
            await self._record_unrecorded()
            await self._db.execute("work_fail_exhausted", MAX_ATTEMPTS)
            row = await self._claim()
        except DatabaseUnavailableError:
            self._after_outage = True
            raise
        if row is None:
            return False
        item = WorkItem(agent_id=row["agent_id"], id=row["id"], task=row["task"],
                        memory_id=row["memory_id"], attempts=row["attempts"],
                        payload=row["payload"], last_try=row["attempts"] >= MAX_ATTEMPTS)
        try:
            await self._process(item)
        finally:
            self._in_flight.discard(item.id)
        return True

    async def _claim(self) -> Mapping[str, Any] | None:
        """Claim one ready item and register it as in flight; after an outage, first put
        back what a claim whose reply was lost may have left running under this worker."""
        async with self._claiming:
            if self._after_outage:
                await self._db.execute("work_release_own", self.worker_id,
                                       sorted(self._in_flight))
                self._after_outage = False
            row = await self._db.fetchrow("work_claim", self._lease_s, self.worker_id,
                                          MAX_ATTEMPTS, PRESENCE_GRACE_S)
            if row is not None:
                self._in_flight.add(row["id"])
            return row

    async def _process(self, item: WorkItem) -> None:
        try:
            handler = self._handlers.get(item.task)
            if handler is None:
                raise LookupError(f"no handler for task {item.task!r} in this worker")
            async with self._heartbeat(item):
                await handler(WorkContext(self._db, item, self.worker_id))
        except LeaseLost as exc:  # expected when a slow worker was overtaken
            _log.info("result of work item %s dropped: %s", item.id, exc)
        except Exception as exc:
            try:
                await self._record_failure(item, exc)
            except DatabaseUnavailableError:
                self._unrecorded.append((item, exc))
                raise

    async def _record_failure(self, item: WorkItem, exc: BaseException) -> None:
        """Put a failed item back (or fail it for good), with its error."""
        contended = isinstance(exc, ContentionError)
        not_its_fault = contended or isinstance(exc, DatabaseUnavailableError)
        # an outage, or another transaction holding what the result needed (an erasure or
        # import of the agent), is not the item's fault: try again soon; a contended
        # attempt does not count at all
        delay = 1.0 if not_its_fault else min(self._retry_base_s * 2 ** (item.attempts - 1),
                                            3600.0)
        state = await self._db.fetchval(
            "work_retry", item.agent_id, item.id, self.worker_id, MAX_ATTEMPTS,
            delay, f"{type(exc).__name__}: {exc}"[:2000], not contended)
        if not_its_fault:
            _log.info("work item %s (%s) put back (%s): now %s", item.id, item.task,
                      type(exc).__name__, state)
            return
        log = _log.warning if state == "pending" else _log.error
        log("work item %s (%s) failed, now %s: %s (the whole error is the item's "
            "last error)", item.id, item.task, state, loggable(exc))

    async def _record_unrecorded(self) -> None:
        while self._unrecorded:
            item, exc = self._unrecorded[0]
            await self._record_failure(item, exc)
            self._unrecorded.pop(0)

    @contextlib.asynccontextmanager
    async def _heartbeat(self, item: WorkItem) -> AsyncIterator[None]:
        """Extend the lease every third of it while the item is being worked on."""

        async def beat() -> None:
            while True:
                await asyncio.sleep(self._lease_s / 3)
                with contextlib.suppress(DatabaseUnavailableError):  # next beat retries
                    await self._db.fetchval("work_extend_lease", item.agent_id, item.id,
                                            self.worker_id, self._lease_s)

        task = asyncio.create_task(beat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
