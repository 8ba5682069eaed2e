"""Batched, resumable set-based sweeps: the engine under every maintenance job.

A sweep runs one named query again and again.  Each call does a bounded batch in SQL
(never a table's worth of rows in Python) and, in a real run, commits on its own, so a
process killed between batches loses at most the batch in flight and a rerun continues
where the work stopped (finished rows no longer match the query).  A dry run does the
same batches inside one transaction that is rolled back: what it reports is exactly
what a real run would have changed, and nothing changes.

Two forms of the same sweep.  On a single PostgreSQL a sweep is one
pass over the whole table in primary-key order, so its cost follows the rows, not how
many agents hold them.  On Citus (detected: ``Database.distributed``) it works one agent
at a time: a read-only list of the agents with work, then each agent's batches, every
one scoped by ``agent_id = $1`` and so routed to the agent's shard group, where its row
locks and modifying CTEs run as on one PostgreSQL (docs/scaling.md).  Setting
``job_sweeps`` to "table" or "agent" forces either form.

Up to ``job_workers`` batches run at once, each in its own transaction on its own
connection: the table form's key-ranged batches hold disjoint keys (one reader hands them
out in key order; its drains, whose batches are not disjoint, run one at a time), the
per-agent form's lanes hold different agents.  A kill then loses at most the batches in
flight, one per lane, and the counts are those of the batches that committed.  A dry run
has one transaction, so one lane.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from ..config import JobSweeps
from ..db import Connection, Database
from .policy import MaintenancePolicy

FIRST_KEY: tuple[str, UUID] = ("", UUID(int=0))  # agent_id is never '' (CHECK)
AGENT_PAGE = 1000  # agents read per page of a sweep's agent list

# called after every committed batch with (step, rows in it); progress, and a test's
# way to kill a run between batches
BatchHook = Callable[[str, int], Awaitable[None]]
# run after a ranged batch in its transaction with (connection, agent, the batch's row):
# more counts by name (the trim queues the work its batch found)
AfterBatch = Callable[[Connection, str, Mapping[str, Any]], Awaitable[Mapping[str, int]]]
# a unit of a sweep's work, run in one lane; its result is the rows it handled
Work = Coroutine[Any, Any, int]


def sweeps_per_agent(form: JobSweeps, *, distributed: bool) -> bool:
    """Whether a job's sweeps run agent by agent (see the module docstring)."""
    return form == "agent" or (form == "auto" and distributed)


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """One batch statement in its two forms: ``per_agent`` takes the agent as $1 before
    the rest, ``whole_table`` (for a single PostgreSQL) takes the rest alone, then
    ``table_args``."""

    per_agent: str
    whole_table: str
    table_args: tuple[Any, ...] = ()


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

    def __init__(self, db: Database, *, dry_run: bool, on_batch: BatchHook | None = None,
                 policy: MaintenancePolicy | None = None) -> None:
        self._db = db
        self.dry_run = dry_run
        form: JobSweeps = policy.sweeps if policy is not None else "auto"
        self.per_agent = sweeps_per_agent(form, distributed=db.distributed)
        self.workers = 1 if dry_run or policy is None else policy.workers
        self._stopped = False  # a lane failed: the others stop after their batch
        self._on_batch = on_batch
        self._rehearsal: Connection | None = None
        self.counts: dict[str, int] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, db: Database, *, dry_run: bool, on_batch: BatchHook | None = None,
                   policy: MaintenancePolicy | None = None) -> AsyncIterator[Sweeps]:
        """The sweeps of one job run; ``policy`` gives their form and lanes (without one:
        the form for the database, one lane)."""
        sweeps = cls(db, dry_run=dry_run, on_batch=on_batch, policy=policy)
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

    async def agents(self, query: str, *args: Any) -> AsyncIterator[str]:
        """The agents a sweep has work for, in id order: ``query`` takes ``args``, then
        the last agent of the previous page and the page size."""
        after = FIRST_KEY[0]
        while True:
            async with self.transaction() as conn:
                rows = await conn.fetch(query, *args, after, AGENT_PAGE)
            for row in rows:
                yield row["agent_id"]
            if len(rows) < AGENT_PAGE:
                return
            after = rows[-1]["agent_id"]

    async def ranged(self, step: str, query: Batch, *args: Any, batch: int,
                     agent: str | None = None, after: AfterBatch | None = None) -> int:
        """Episodes in key-range batches of ``batch`` rows: of one ``agent``, or of every
        agent (in the sweep's form).  The per-agent statement takes the agent and the
        memory_id range as $1-$3 (lower exclusive, upper inclusive), the whole-table one
        the batch's keys as two arrays and the first and last agent among them; then
        ``args``.  Each returns ``n`` (counted as ``step``) and other counts by name;
        ``after`` runs in a per-agent statement's transaction (the whole-table one does
        its work itself)."""
        if agent is not None:
            return await self._ranged_agent(step, query.per_agent, args, batch, agent, after)
        if not self.per_agent:
            return await self.in_lanes(self._table_batches(step, query, args, batch, after))

        async def each_agent() -> AsyncGenerator[Work, None]:
            async for each in self.agents("episode_agents"):
                yield self._ranged_agent(step, query.per_agent, args, batch, each, after)

        return await self.in_lanes(each_agent())

    async def in_lanes(self, works: AsyncGenerator[Work, None]) -> int:
        """Runs ``works`` (taken in order) in up to ``workers`` lanes at once; their total.
        After a failure no new work starts and a lane stops after the batch it is in (a
        unit of work may hold many: an agent's), so the batches in flight commit and are
        reported (a failed run's counts are what it committed); then the first failure
        is raised as itself, the later ones noted on it."""
        if self.workers == 1:
            total = 0
            try:
                async for work in works:
                    total += await work
            finally:
                await works.aclose()
            return total
        lanes = asyncio.Semaphore(self.workers)
        done: list[int] = []
        failures: list[Exception] = []
        running: set[asyncio.Task[None]] = set()

        async def lane(work: Work) -> None:
            try:
                done.append(await work)
            except Exception as exc:
                failures.append(exc)
                self._stopped = True
            finally:
                lanes.release()

        try:
            while not failures:
                await lanes.acquire()  # a lane is free before the next work is read
                if failures:
                    break
                try:
                    work = await anext(works)
                except StopAsyncIteration:
                    break
                if failures:  # a lane failed while the work was being read
                    work.close()
                    break
                task = asyncio.create_task(lane(work))
                running.add(task)
                task.add_done_callback(running.discard)
        except Exception as exc:  # the source of the work failed: the lanes finish first
            failures.append(exc)
            self._stopped = True
        except BaseException:  # cancelled (the run is being stopped): so are the lanes
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise
        finally:
            await works.aclose()
        await asyncio.gather(*running)
        if failures:
            first = failures[0]
            for later in failures[1:]:
                first.add_note(f"another lane failed too: {type(later).__name__}: {later}")
            raise first
        return sum(done)

    async def _table_batches(self, step: str, query: Batch, args: tuple[Any, ...],
                             batch: int, after: AfterBatch | None
                             ) -> AsyncGenerator[Work, None]:
        """One pass in key order: the next ``batch`` keys, read in a transaction of their
        own, then their batch (a later batch re-reads each row under its lock, so keys
        read before another batch committed are as good as fresh)."""
        lower = FIRST_KEY
        while True:
            async with self.transaction() as conn:
                keys = await conn.fetchrow("episode_keys", *lower, batch)
            assert keys is not None
            if keys["n"] == 0:
                return
            agents, ids = keys["agents"], keys["ids"]
            start = lower[1] if lower[0] == agents[0] else FIRST_KEY[1]
            yield self._table_batch(step, query, args, (agents, ids, start), after)
            if keys["n"] < batch:
                return
            lower = (agents[-1], ids[-1])

    async def _table_batch(self, step: str, query: Batch, args: tuple[Any, ...],
                           keys: tuple[list[str], list[UUID], UUID],
                           after: AfterBatch | None) -> int:
        """A batch inside one agent runs the per-agent statement (the planner estimates
        its memory_id range exactly), one that spans agents the whole-table statement
        over its keys (``keys``: the agents, the ids, the exclusive lower id)."""
        agents, ids, start = keys
        more: Mapping[str, int] = {}
        async with self.transaction() as conn:
            await conn.execute("batch_async_commit")
            await conn.execute("batch_work_mem")
            if agents[0] == agents[-1]:
                row = await conn.fetchrow(query.per_agent, agents[0], start, ids[-1], *args)
                assert row is not None
                more = await after(conn, agents[0], row) if after is not None else {}
            else:
                await conn.execute("batch_custom_plans")
                await conn.execute("batch_index_scans")
                row = await conn.fetchrow(query.whole_table, agents, ids, agents[0],
                                          agents[-1], *args, *query.table_args)
                assert row is not None
        total = self._count(step, row, more)
        await self.batch_done(step, total)
        return total

    async def _ranged_agent(self, step: str, query: str, args: tuple[Any, ...], batch: int,
                            agent: str, after: AfterBatch | None) -> int:
        lower = FIRST_KEY[1]
        total = 0
        while not self._stopped:
            async with self.transaction() as conn:
                await conn.execute("batch_async_commit")
                await conn.execute("batch_work_mem")
                bound = await conn.fetchrow("episode_key_range_agent", agent, lower, batch)
                assert bound is not None
                if bound["n"] == 0:
                    return total
                row = await conn.fetchrow(query, agent, lower, bound["last_id"], *args)
                assert row is not None
                more = await after(conn, agent, row) if after is not None else {}
            total += self._count(step, row, more)
            await self.batch_done(step, int(row["n"]))
            if bound["n"] < batch:
                return total
            lower = bound["last_id"]
        return total

    def _count(self, step: str, row: Mapping[str, Any], more: Mapping[str, int]) -> int:
        """Adds a ranged batch's counts; its ``n``."""
        self.add(step, row["n"])
        for column, value in [*row.items(), *more.items()]:
            if column != "n" and isinstance(value, int):
                self.add(column, value)
        return int(row["n"])

    async def drain_agents(self, step: str, agents: tuple[str, *tuple[Any, ...]],
                           query: Batch, *args: Any, batch: int) -> int:
        """``drain`` of every agent's rows.  Per agent: for each agent listed by ``agents``
        (a query and its arguments), the agent as $1 before ``args``, so each batch stays
        in one agent; over the whole table: ``query.whole_table`` with ``args``."""
        self.add(step, 0)
        if not self.per_agent:
            return await self.drain(step, query.whole_table, *args, *query.table_args,
                                    batch=batch)

        async def each_agent() -> AsyncGenerator[Work, None]:
            async for agent in self.agents(*agents):
                yield self.drain(step, query.per_agent, agent, *args, batch=batch)

        return await self.in_lanes(each_agent())

    async def drain(self, step: str, query: str, *args: Any, batch: int) -> int:
        """Batches of a query whose rows stop matching once handled (deletes, state
        changes): repeat until a short batch.  ``query`` returns ``n``."""
        total = 0
        while not self._stopped:
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
        return total

    def _add_row(self, step: str, row: Any) -> None:
        self.add(step, row["n"])
        for column, value in row.items():
            if column != "n" and value is not None:
                self.add(f"{step}_{column}", value)

    async def batch_done(self, step: str, n: int) -> None:
        if self._on_batch is not None and n:
            await self._on_batch(step, n)
