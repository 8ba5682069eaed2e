"""Access bookkeeping off the read path: counts gathered in memory, written in batches.

``assemble_context`` and ``expand`` only note which memories they served; a background
task writes them ``delay_s`` later as one UPDATE per agent, so a read never waits for
(or contends on) a row lock.  ``flush()`` writes what is pending now (the store calls it
on close).  Losing a few counts in a crash is the accepted price: they are statistics,
not records.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from uuid import UUID

from ..db import Database
from ..errors import DatabaseUnavailableError

_log = logging.getLogger(__name__)


class AccessLog:
    def __init__(self, db: Database, *, delay_s: float = 1.0) -> None:
        self._db = db
        self.delay_s = delay_s
        self._pending: dict[str, Counter[UUID]] = {}
        self._last: dict[str, datetime] = {}
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def record(self, agent: str, memory_ids: Iterable[UUID]) -> None:
        """Note one access of each id (repeats count twice); never blocks."""
        ids = list(memory_ids)
        if not ids:
            return
        self._pending.setdefault(agent, Counter()).update(ids)
        self._last[agent] = datetime.now(UTC)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._later())

    async def _later(self) -> None:
        await asyncio.sleep(self.delay_s)
        try:
            await self.flush()
        except DatabaseUnavailableError:  # an outage, logged once where it starts
            _log.debug("deferred access-count update waits for the database")
        except Exception:  # statistics must never break the store; logged, kept for later
            _log.warning("deferred access-count update failed", exc_info=True)

    async def flush(self) -> None:
        """Write every pending count now (one statement per agent)."""
        async with self._lock:
            pending, self._pending = self._pending, {}
            last, self._last = self._last, {}
            for agent, counts in pending.items():
                ids = sorted(counts)
                try:
                    await self._db.execute("memories_accessed", agent, ids,
                                           [counts[i] for i in ids], last[agent])
                except Exception:
                    self._pending.setdefault(agent, Counter()).update(counts)
                    self._last.setdefault(agent, last[agent])
                    raise

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.flush()
