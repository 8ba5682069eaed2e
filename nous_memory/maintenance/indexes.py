"""Indexes of their own for large agents.

Every agent's rows share the HNSW and GIN indexes of ``memories`` and ``episode_chunks``.
Recall reads a large agent through them with its agent filter: HNSW walks a graph of
every agent's vectors and drops the other agents' rows as it goes (pgvector's iterative
scan), so at 100,000 memories among 1.5 million its top 10 agreed with an exact search
only 92-95% of the time (bench/tenancy.py); and GIN intersects each query word with the
agent's entry, a posting list of every row the agent has.

So an agent past ``agent_indexes_min_rows`` (memories or chunks, as recall counts them)
gets four partial indexes, ``WHERE agent_id = '<agent>'``: HNSW and GIN over its memories
and over its chunks.  Recall's statement for a large agent is planned for its agent id,
so the planner sees the predicate hold and reads the agent's own, smaller indexes.  They
are built and dropped CONCURRENTLY (writes go on), one at a time, in a session of their
own with ``agent_indexes_build_memory`` of maintenance_work_mem (an HNSW build that fits
in it is several times faster).  An agent that shrinks below half of the limit or is
erased loses its indexes (the gap stops an agent at the limit from flapping); a build
that failed (an invalid index left by a killed CREATE INDEX CONCURRENTLY) is dropped and
built again.

Every partial index of a table is considered when a statement on it is planned, so at
most ``agent_indexes_max`` agents have their own (the largest first); past that many large
agents, spread them over Citus shard groups of their own (docs/scaling.md).

Index names carry a digest of the agent id, not the id: ``agent_<table>_<leg>_<hex>``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from ..db import Database
from .batches import BatchHook, JobResult
from .policy import MaintenancePolicy

NAME_PATTERN = r"^agent_(mem|chunk)_(vec|text)_[0-9a-f]{16}$"  # also in queries.sql


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexShape:
    """One of the four indexes an agent gets: where, how, and which of its rows."""

    short: str  # the name's middle part
    table: str
    using: str  # the access method and its columns (and build options)
    rows: str  # more of the predicate, after agent_id = '<agent>' ('' for none)


# HNSW over active memories only, as the shared index (archived and superseded rows are
# read through memories_inactive).  A better graph than pgvector's default build
# (ef_construction 64): on bench/tenancy.py, 100,000 memories of one agent, its top 10
# agreed with an exact search 0.967 of the time with ef_construction 128 (at ef_search
# 40 and 100; 1.0 needed ef_search 400) and 1.0 with 200 (at ef_search 40 and 100),
# for 66 s of build at load 4.  A denser graph (m 32) did no better and doubled the
# build time and the cost of every insert.
HNSW = "hnsw (embedding vector_cosine_ops) WITH (ef_construction = 200)"
SHAPES: tuple[IndexShape, ...] = (
    IndexShape(short="mem_vec", table="memories",
               using=HNSW,
               rows=" AND status = 'active'"),
    IndexShape(short="mem_text", table="memories", using="gin (search_tsv)", rows=""),
    IndexShape(short="chunk_vec", table="episode_chunks",
               using=HNSW,
               rows=""),
    IndexShape(short="chunk_text", table="episode_chunks", using="gin (search_tsv)",
               rows=""),
)


def index_name(agent: str, shape: IndexShape) -> str:
    digest = hashlib.sha256(agent.encode("utf-8")).hexdigest()[:16]
    return f"agent_{shape.short}_{digest}"


def index_names(agent: str) -> list[str]:
    return [index_name(agent, shape) for shape in SHAPES]


class AgentIndexes:
    """Creates and drops the large agents' own indexes (the ``indexes`` job's body)."""

    def __init__(self, db: Database, policy: MaintenancePolicy) -> None:
        self._db = db
        self._policy = policy

    async def run(self, *, now: datetime, dry_run: bool = False,
                  on_batch: BatchHook | None = None) -> JobResult:
        del now  # what is large is read from the rows, not from the clock
        limit = self._policy.agent_indexes_min_rows
        sizes = await self._db.fetch("agent_index_candidates", limit // 2,
                                     self._policy.agent_indexes_max)
        present = {row["name"]: row["valid"] for row in
                   await self._db.fetch("agent_indexes_present")}
        wanted: dict[str, tuple[str, IndexShape]] = {}  # index name -> agent, shape
        for row in sizes:
            agent, rows = row["agent_id"], row["rows"]
            names = index_names(agent)
            if rows > limit or any(name in present for name in names):
                wanted.update((name, (agent, shape)) for name, shape in zip(names, SHAPES,
                                                                             strict=True))
        stale = [name for name in present if name not in wanted]
        broken = [name for name, valid in present.items() if not valid and name in wanted]
        missing = [(name, *wanted[name]) for name in wanted
                   if name not in present or name in broken]
        counts = {"agent_indexes_dropped": len(stale) + len(broken),
                  "agent_indexes_created": len(missing),
                  "agents_with_own_indexes": len({agent for agent, _ in wanted.values()})}
        if dry_run:
            return JobResult(counts=counts, dry_run=True)
        await self._drop(stale + broken, on_batch)
        await self._create(missing, on_batch)
        return JobResult(counts=counts)

    async def drop_for(self, agent: str) -> int:
        """Drop an agent's own indexes at once (an erased agent's id must not stay in
        the catalog until the next run); returns how many there were."""
        present = {row["name"] for row in await self._db.fetch("agent_indexes_present")}
        names = [name for name in index_names(agent) if name in present]
        await self._drop(names, None)
        return len(names)

    async def _drop(self, names: list[str], on_batch: BatchHook | None) -> None:
        if not names:
            return
        async with self._db.session() as conn:
            for name in names:
                await conn.execute_built(await conn.fetchval("agent_index_drop_ddl", name))
                if on_batch is not None:
                    await on_batch("agent_indexes_dropped", 1)

    async def _create(self, todo: list[tuple[str, str, IndexShape]],
                      on_batch: BatchHook | None) -> None:
        if not todo:
            return
        async with self._db.session() as conn:
            await conn.fetchval("agent_index_build_settings",
                                self._policy.agent_indexes_build_memory)
            for name, agent, shape in todo:
                await conn.execute_built(await conn.fetchval(
                    "agent_index_create_ddl", name, shape.table, shape.using, agent,
                    shape.rows))
                if on_batch is not None:
                    await on_batch("agent_indexes_created", 1)
