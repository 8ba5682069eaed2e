"""``job_runs`` and the cluster lock: the bookkeeping the scheduler (``jobs/``) needs.

The lock is a session-level advisory lock taken on a connection held for the whole
run: a runner that dies drops its connection and PostgreSQL releases the lock, so a
killed job never blocks the next one.  Several schedulers may run against one database:
whoever does not get the lock, or finds the slot already done, records a skip.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..db import Database


class JobRun(BaseModel):
    """One row of ``job_runs`` (the CLI prints it as JSON)."""

    model_config = ConfigDict(frozen=True)

    id: int
    job: str
    status: str  # running | ok | failed | skipped
    trigger: str  # schedule | catch_up | manual
    dry_run: bool
    started_at: datetime
    slot: datetime | None = None
    finished_at: datetime | None = None
    counts: dict[str, Any] = Field(default_factory=dict)
    note: str | None = None
    error: str | None = None
    runner: str = ""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> JobRun:
        return cls.model_validate({**row, "counts": dict(row["counts"])})


class JobRuns:
    def __init__(self, db: Database) -> None:
        self._db = db

    @contextlib.asynccontextmanager
    async def lock(self, job: str) -> AsyncIterator[bool]:
        """Yields whether this runner got the job's lock (never waits for it).  The lock is
        a session lock on a connection of its own: if the runner dies, so does the lock."""
        async with self._db.session() as conn:
            got = bool(await conn.fetchval("job_lock", job))
            try:
                yield got
            finally:
                if got:
                    await conn.fetchval("job_unlock", job)

    async def abandon_dead(self, job: str) -> int:
        """Mark runs of ``job`` left 'running' by a dead runner as failed (call it while
        holding the job's lock); returns how many."""
        return len(await self._db.fetch("job_runs_abandon", job))

    async def slot_done(self, job: str, slot: datetime) -> bool:
        return bool(await self._db.fetchval("job_slot_done", job, slot))

    async def start(self, job: str, *, slot: datetime | None, trigger: str, dry_run: bool,
                    runner: str, now: datetime) -> int:
        return int(await self._db.fetchval("job_run_start", job, slot, trigger, dry_run,
                                           runner, now))

    async def finish(self, run_id: int, *, status: str, counts: Mapping[str, Any],
                     note: str | None = None, error: str | None = None) -> None:
        await self._db.execute("job_run_finish", run_id, status, dict(counts), note, error)

    async def skip(self, job: str, *, slot: datetime | None, trigger: str, dry_run: bool,
                   runner: str, now: datetime, note: str) -> int:
        return int(await self._db.fetchval("job_run_skip", job, slot, trigger, dry_run,
                                           runner, now, note))

    async def get(self, run_id: int) -> JobRun:
        rows = await self.history(limit=1, run_id=run_id)
        return rows[0]

    async def history(self, *, job: str | None = None, limit: int = 20,
                      run_id: int | None = None) -> list[JobRun]:
        if run_id is not None:
            row = await self._db.fetchrow("job_run_by_id", run_id)
            return [JobRun.from_row(row)] if row is not None else []
        return [JobRun.from_row(r) for r in await self._db.fetch("job_history", job, limit)]
