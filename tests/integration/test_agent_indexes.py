"""Large agents' own indexes: the indexes job builds them past the limit, drops them
below half of it and for an erased agent, rebuilds a failed build, reports a dry run
without changing anything, and quotes any agent id."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from jobs.runner import JobRunner
from nous_memory import MemoryStore
from nous_memory.config import Settings
from nous_memory.embeddings import Embedder
from nous_memory.errors import ConfigurationError
from nous_memory.maintenance.indexes import NAME_PATTERN, index_names
from tests.integration.jobs_helpers import sql

NOW = datetime(2026, 5, 1, tzinfo=UTC)
BIG = "O'Brien \"big\" \\ agent"  # every quoting character PostgreSQL has
SMALL = "small-agent"


@pytest.fixture
async def small_limit_store(database_url: str, embedder: Embedder
                            ) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                agent_indexes_min_rows=6, agent_indexes_build_memory="64MB",
                                recall_exact_scan_max_rows=0) as opened:
        yield opened


async def _present(dsn: str) -> dict[str, tuple[bool, str]]:
    rows = await sql(dsn, """
        SELECT c.relname AS name, i.indisvalid AS valid,
               pg_get_expr(i.indpred, i.indrelid) AS predicate
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relname ~ $1""", NAME_PATTERN)
    return {r["name"]: (r["valid"], r["predicate"]) for r in rows}


async def _write(store: MemoryStore, agent: str, n: int) -> list[str]:
    results = await store.remember_many(agent, [
        {"kind": "fact", "content": f"The user's fact number {i} is about topic {i % 3}",
         "category": "general"} for i in range(n)])
    return [str(r.id) for r in results]


async def test_built_past_the_limit_dropped_below_half(small_limit_store: MemoryStore,
                                                       database_url: str) -> None:
    store = small_limit_store
    ids = await _write(store, BIG, 8)
    await _write(store, SMALL, 3)
    before = await store.recall(BIG, "fact about topic 1", k=5)

    dry = await store.maintenance.indexes(now=NOW, dry_run=True)
    assert dry.counts == {"agent_indexes_dropped": 0, "agent_indexes_created": 4,
                          "agents_with_own_indexes": 1}
    assert await _present(database_url) == {}

    run = await JobRunner(store).run("indexes")
    assert run.counts["agent_indexes_created"] == 4
    present = await _present(database_url)
    assert set(present) == set(index_names(BIG))
    for valid, predicate in present.values():
        assert valid and "agent_id = 'O''Brien \"big\" \\ agent'::text" in predicate
    after = await store.recall(BIG, "fact about topic 1", k=5)
    assert [i.ref for i in after.items] == [i.ref for i in before.items]

    again = await store.maintenance.indexes(now=NOW)  # nothing to do
    assert again.counts["agent_indexes_created"] == again.counts["agent_indexes_dropped"] == 0

    for ident in ids[:4]:  # 4 rows: below the limit, not below half of it: kept
        await store.delete(BIG, ident)
    kept = await store.maintenance.indexes(now=NOW)
    assert kept.counts["agent_indexes_dropped"] == 0
    assert set(await _present(database_url)) == set(index_names(BIG))
    await store.delete(BIG, ids[4])  # 3 rows: half the limit
    dropped = await store.maintenance.indexes(now=NOW)
    assert dropped.counts["agent_indexes_dropped"] == 4
    assert await _present(database_url) == {}


async def test_failed_build_rebuilt_and_erasure_drops(small_limit_store: MemoryStore,
                                                      database_url: str) -> None:
    store = small_limit_store
    await _write(store, BIG, 7)
    await store.maintenance.indexes(now=NOW)
    broken = index_names(BIG)[0]
    # what a CREATE INDEX CONCURRENTLY killed half way leaves behind
    await sql(database_url, "UPDATE pg_index SET indisvalid = false "
                            "WHERE indexrelid = $1::regclass", broken)
    assert not (await _present(database_url))[broken][0]
    rerun = await store.maintenance.indexes(now=NOW)
    assert rerun.counts["agent_indexes_dropped"] == rerun.counts["agent_indexes_created"] == 1
    assert all(valid for valid, _ in (await _present(database_url)).values())

    await store.forget_agent(BIG, actor="test")
    assert await _present(database_url) == {}  # the id left the catalog with the agent


async def test_only_the_largest_agents(database_url: str, embedder: Embedder) -> None:
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                agent_indexes_min_rows=4, agent_indexes_max=1) as store:
        await _write(store, "a-larger", 7)
        await _write(store, "b-large", 6)
        run = await store.maintenance.indexes(now=NOW)
    assert run.counts["agents_with_own_indexes"] == 1
    assert set(await _present(database_url)) == set(index_names("a-larger"))


def test_bad_build_memory_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="agent_indexes_build_memory"):
        Settings(agent_indexes_build_memory="1GB; DROP TABLE memories")
