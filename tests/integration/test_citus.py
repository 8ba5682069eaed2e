"""Ready for Citus (sharded by agent_id), checked on a migrated database: every named
query is routed to one tenant's shards or is a listed cross-tenant query with its reason,
and the schema meets what Citus requires of keys, sequences and triggers.

No Citus server is available to the tests; these are the properties Citus's planner and
DDL checks rely on, read from PostgreSQL's own plans and catalog (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from nous_memory.db import QUERIES
from nous_memory.db.distribution import (
    COORDINATOR_LOCAL,
    CROSS_TENANT_QUERIES,
    DISTRIBUTED,
    DISTRIBUTION_COLUMN,
    citus_script,
)
from tests.integration import citus_catalog, citus_plans


@pytest.fixture
async def conn(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_url)
    await citus_plans.install(connection)
    yield connection
    await connection.close()


async def tenant_tables(conn: asyncpg.Connection) -> set[str]:
    """Distributed tables, and the coordinator-local ones that hold agent_id (the queue):
    a query on those must be scoped too, or listed."""
    local = {r["table_name"] for r in await conn.fetch(
        "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
        "AND column_name = $1", DISTRIBUTION_COLUMN) if r["table_name"] in COORDINATOR_LOCAL}
    return set(DISTRIBUTED) | local


async def verdict(conn: asyncpg.Connection, sql: str, tables: set[str]) -> citus_plans.Verdict:
    plan = await citus_plans.plan_of(conn, sql)
    result = citus_plans.classify(plan, tables)
    # joins Citus must push down are between distributed tables only
    result.colocation_errors = citus_plans.classify(plan, set(DISTRIBUTED)).colocation_errors
    return result


async def test_every_named_query_is_single_tenant_or_a_listed_cross_tenant_one(
        conn: asyncpg.Connection) -> None:
    tables = await tenant_tables(conn)
    unlisted, stale, not_colocated, single = [], [], [], 0
    for name in QUERIES.names():
        sql = QUERIES[name]
        if not citus_plans.is_plannable(sql):
            assert name not in CROSS_TENANT_QUERIES
            continue  # SET LOCAL and the like: no table
        result = await verdict(conn, sql, tables)
        if result.colocation_errors:
            not_colocated.append(f"{name}: {result.colocation_errors}")
        if name in CROSS_TENANT_QUERIES:
            if result.single_tenant:
                stale.append(name)
        elif not result.single_tenant:
            unlisted.append(f"{name}: {result.reasons}")
        elif result.touches_distributed:
            single += 1
    assert not unlisted, ("queries neither scoped to one agent_id nor listed (with the "
                          "reason they are safe) in CROSS_TENANT_QUERIES:\n"
                          + "\n".join(unlisted))
    assert not stale, f"listed as cross-tenant but scoped to one agent: {stale}"
    assert not not_colocated, "joins Citus cannot push down:\n" + "\n".join(not_colocated)
    assert single > 100  # the classifier saw the product's queries, not an empty set
    assert set(CROSS_TENANT_QUERIES) <= set(QUERIES.names())


# Statements the classifier must refuse: each escapes a single tenant another way.
NOT_SINGLE_TENANT = {
    "no agent filter": "SELECT id FROM memories WHERE id = $1",
    "join not on agent_id": "SELECT f.content FROM memories m JOIN facts f "
                            "ON f.memory_id = m.id WHERE m.agent_id = $1",
    "OR escapes the filter": "SELECT id FROM memories WHERE agent_id = $1 OR importance > $2",
    "two tenants": "SELECT f.content FROM memories m JOIN facts f ON f.agent_id = $2 "
                   "AND f.memory_id = m.id WHERE m.agent_id = $1",
    "several agents": "SELECT id FROM memories WHERE agent_id = ANY($1::text[])",
    "EXISTS not on agent_id": "SELECT id FROM memories m WHERE agent_id = $1 AND EXISTS "
                              "(SELECT 1 FROM facts f WHERE f.memory_id = m.id)",
    "update without filter": "UPDATE memories SET importance = 0.5 WHERE id = $1",
    "insert from every agent": "INSERT INTO memory_events (agent_id, memory_id, event) "
                               "SELECT agent_id, id, 'created' FROM memories WHERE id = $1",
    "insert for another agent": "INSERT INTO memory_events (agent_id, memory_id, event) "
                                "SELECT $2, id, 'created' FROM memories WHERE agent_id = $1",
    "unscoped queue claim": "SELECT id FROM work_items WHERE state = 'pending' LIMIT 1",
}
SINGLE_TENANT = {
    "join on agent_id": "SELECT f.content FROM memories m JOIN facts f "
                        "ON f.agent_id = m.agent_id AND f.memory_id = m.id WHERE m.agent_id = $1",
    "correlated": "SELECT m.id, (SELECT count(*) FROM facts f WHERE f.agent_id = m.agent_id "
                  "AND f.memory_id = m.id) FROM memories m WHERE m.agent_id = $1",
    "insert select": "INSERT INTO memory_events (agent_id, memory_id, event) "
                     "SELECT agent_id, id, 'created' FROM memories WHERE agent_id = $1",
}


async def test_classifier_refuses_escapes_and_accepts_scoped_statements(
        conn: asyncpg.Connection) -> None:
    tables = await tenant_tables(conn)
    for name, sql in NOT_SINGLE_TENANT.items():
        result = await verdict(conn, sql, tables)
        assert not result.single_tenant and result.reasons, f"{name} passed as single-tenant"
    for name, sql in SINGLE_TENANT.items():
        result = await verdict(conn, sql, tables)
        assert result.single_tenant, f"{name}: {result.reasons}"


async def test_colocation_check_refuses_cross_shard_joins(conn: asyncpg.Connection) -> None:
    bad = await verdict(conn, "SELECT count(*) FROM memories m JOIN facts f "
                              "ON f.memory_id = m.id", set(DISTRIBUTED))
    good = await verdict(conn, "SELECT count(*) FROM memories m JOIN facts f "
                               "ON f.agent_id = m.agent_id AND f.memory_id = m.id",
                         set(DISTRIBUTED))
    assert bad.colocation_errors and not good.colocation_errors
    assert not good.single_tenant  # a sweep over every agent, but one Citus can run


async def test_schema_meets_citus_rules(conn: asyncpg.Connection) -> None:
    problems = [p for check in citus_catalog.CHECKS for p in await check(conn)]
    assert problems == []


# Each schema change breaks one rule; the check for that rule must see it.
BROKEN_SCHEMA = [
    ("CREATE TABLE notes (agent_id text NOT NULL, id int)", citus_catalog.table_roles),
    ("CREATE UNIQUE INDEX memories_by_id ON memories (id)", citus_catalog.unique_keys),
    ("ALTER TABLE facts ADD FOREIGN KEY (agent_id, source_episode_id) REFERENCES episodes "
     "(agent_id, memory_id) ON DELETE SET NULL (source_episode_id)", citus_catalog.foreign_keys),
    ("ALTER TABLE facts ADD UNIQUE (memory_id); ALTER TABLE decisions ADD FOREIGN KEY "
     "(memory_id) REFERENCES facts (memory_id)", citus_catalog.foreign_keys),
    ("ALTER TABLE job_runs ADD COLUMN agent_id text, ADD COLUMN memory_id uuid, ADD FOREIGN "
     "KEY (agent_id, memory_id) REFERENCES memories (agent_id, id)", citus_catalog.foreign_keys),
    ("ALTER TABLE llm_calls ADD COLUMN n serial", citus_catalog.sequences),
    ("ALTER TABLE llm_calls ADD COLUMN n integer GENERATED ALWAYS AS IDENTITY",
     citus_catalog.sequences),
    ("CREATE FUNCTION touch_all() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
     "UPDATE memories SET access_count = access_count + 1; RETURN NEW; END $$; "
     "CREATE TRIGGER touch AFTER INSERT ON facts FOR EACH ROW EXECUTE FUNCTION touch_all()",
     citus_catalog.triggers),
    ("ALTER TABLE conversation_policies DROP CONSTRAINT conversation_policies_pkey, "
     "ALTER COLUMN agent_id DROP NOT NULL",
     citus_catalog.distribution_columns),
]


class _Undo(Exception):
    """Rolls a schema change back after its check has looked at it."""


async def test_schema_checks_catch(conn: asyncpg.Connection) -> None:
    for ddl, check in BROKEN_SCHEMA:
        assert await check(conn) == []
        with pytest.raises(_Undo):
            async with conn.transaction():  # DDL is transactional: each change is undone
                await conn.execute(ddl)
                assert await check(conn), f"{check.__name__} missed: {ddl}"
                raise _Undo


def test_operator_script_distributes_every_tenant_table_colocated() -> None:
    script = citus_script()
    assert f"SELECT create_distributed_table('memories', '{DISTRIBUTION_COLUMN}');" in script
    for table in DISTRIBUTED[1:]:
        assert (f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}', "
                f"colocate_with => 'memories');") in script
    for table in COORDINATOR_LOCAL:
        assert f"'{table}'" not in script
