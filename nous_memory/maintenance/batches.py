"""Batched, resumable set-based sweeps: the engine under every maintenance job.

A sweep runs one named query again and again.  Each call does a bounded batch in SQL
(never a table's worth of rows in Python) and, in a real run, commits on its own, so a
process killed between batches loses at most the batch in flight and a rerun continues
where the work stopped (finished rows no longer match the query).  A dry run does the
same batches inside one transaction that is rolled back: what it reports is exactly
what a real run would have changed, and nothing changes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from ..db import Connection, Database

FIRST_KEY: tuple[str, UUID] = ("", UUID(int=0))  # agent_id is never '' (CHECK)

# called after every committed batch with (step, rows in it); progress, and a test's
# way to kill a run between batches
BatchHook = Callable[[str, int], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    """What one maintenance run did (or, dry, would do): counts per step, and a note
    when it did nothing on purpose (``skipped``: not configured, no LLM ...)."""

    counts: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    skipped: bool = False
    dry_run: bool = False


class Sweeps:
    """Runs the batches of one job; see the module docstring for the two modes."""

    def __init__(self, db: Database, *, dry_run: bool, on_batch: BatchHook | None = None
                 ) -> None:
        self._db = db
        self.dry_run = dry_run
        self._on_batch = on_batch
        self._rehearsal: Connection | None = None
        self.counts: dict[str, int] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, db: Database, *, dry_run: bool, on_batch: BatchHook | None = None
                   ) -> AsyncIterator[Sweeps]:
        sweeps = cls(db, dry_run=dry_run, on_batch=on_batch)
        if not dry_run:
            yield sweeps
            return
        async with db.rehearsal() as conn:
            sweeps._rehearsal = conn
            yield sweeps

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """One batch's transaction (in a dry run: the rehearsal's, rolled back at the end)."""
        if self._rehearsal is not None:
            yield self._rehearsal
            return
        async with self._db.transaction() as conn:
            yield conn

    def add(self, name: str, value: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + int(value)

    async def ranged(self, step: str, query: str, *args: Any, batch: int,
                     agent: str | None = None) -> int:
        """Episodes in key-range batches of ``batch`` rows (of one ``agent``, or all):
        ``query`` takes the range as $1-$4 (lower exclusive, upper inclusive), then
        ``args``, and returns ``n`` (counted as ``step``) and other counts by name."""
        lower: tuple[str, UUID] = (agent, FIRST_KEY[1]) if agent else FIRST_KEY
        total = 0
        while True:
            async with self.transaction() as conn:
                await conn.execute("batch_async_commit")
                await conn.execute("batch_work_mem")
                if agent is None:
                    bound = await conn.fetchrow("episode_key_range", *lower, batch)
                else:
                    bound = await conn.fetchrow("episode_key_range_agent", agent, lower[1],
                                                batch)
                assert bound is not None
                if bound["n"] == 0:
                    return total
                row = await conn.fetchrow(query, *lower, bound["last_agent"],
                                          bound["last_id"], *args)
            assert row is not None
            total += int(row["n"])
            self.add(step, row["n"])
            for column, value in row.items():
                if column != "n" and value is not None:
                    self.add(column, value)
            await self.batch_done(step, int(row["n"]))
            if bound["n"] < batch:
                return total
            lower = (bound["last_agent"], bound["last_id"])

    async def drain(self, step: str, query: str, *args: Any, batch: int) -> int:
        """Batches of a query whose rows stop matching once handled (deletes, state
        changes): repeat until a short batch.  ``query`` returns ``n``."""
        total = 0
        while True:
            async with self.transaction() as conn:
                await conn.execute("batch_async_commit")
                row = await conn.fetchrow(query, *args)
            assert row is not None
            n = int(row["n"])
            total += n
            self._add_row(step, row)
            await self.batch_done(step, n)
            if n < batch:
                return total

    def _add_row(self, step: str, row: Any) -> None:
        self.add(step, row["n"])
        for column, value in row.items():
            if column != "n" and value is not None:
                self.add(f"{step}_{column}", value)

    async def batch_done(self, step: str, n: int) -> None:
        if self._on_batch is not None and n:
            await self._on_batch(step, n)
