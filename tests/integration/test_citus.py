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
    CITUS_CATALOG_QUERIES,
    COORDINATOR_LOCAL,
    CROSS_TENANT_QUERIES,
    DELEGATED_READS,
    DISTRIBUTED,
    DISTRIBUTION_COLUMN,
    REGISTERED_LOCAL,
    SINGLE_NODE_ONLY,
    citus_script,
)
from tests.integration import citus_catalog, citus_plans, citus_shapes


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
        if name in CITUS_CATALOG_QUERIES:
            continue  # Citus's catalog, on the coordinator (test_schema prepares them)
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
    assert set(REGISTERED_LOCAL) <= set(COORDINATOR_LOCAL)
    for table in COORDINATOR_LOCAL:
        registered = f"SELECT citus_add_local_table_to_metadata('{table}');"
        assert (registered in script) == (table in REGISTERED_LOCAL)
        assert f"table('{table}'" not in script
    assert "citus.propagate_set_commands = %L', current_database(), 'local'" in script
    # the read functions, each distributed by its agent argument beside the tables, after
    # memories exists as a distributed table (their co-location group)
    for function in DELEGATED_READS.values():
        line = (f"SELECT create_distributed_function('{function}'::regproc, "
                f"distribution_arg_name => 'agent', colocate_with => 'memories');")
        assert line in script
        assert script.index(line) > script.index("create_distributed_table('memories'")


# ---------------------------------------------------------------- shapes Citus refuses

async def shape_refusals(conn: asyncpg.Connection, sql: str,
                         funcs: dict[tuple[str, int], str]) -> list[str]:
    tables = await tenant_tables(conn)
    single = (await verdict(conn, sql, tables)).single_tenant \
        if citus_plans.is_plannable(sql) else True
    return citus_shapes.refusals(sql, distributed=set(DISTRIBUTED),
                                 local=set(COORDINATOR_LOCAL), funcs=funcs,
                                 single_tenant=single)


async def test_no_named_query_has_a_shape_citus_refuses(conn: asyncpg.Connection) -> None:
    funcs = await citus_shapes.volatility(conn)
    refused, checked = [], 0
    for name in QUERIES.names():
        if name in SINGLE_NODE_ONLY:
            assert SINGLE_NODE_ONLY[name] in QUERIES.names()
            continue
        if name in CITUS_CATALOG_QUERIES:
            continue
        found = await shape_refusals(conn, QUERIES[name], funcs)
        checked += 1
        if found:
            refused.append(f"{name}: {found}")
    assert not refused, "statements Citus refuses:\n" + "\n".join(refused)
    assert checked > 150


# One statement per shape Citus 13 refused on a running cluster (each the shape of a
# named query that once had it), and beside each a form it plans.
REFUSED_SHAPES = {
    "now() inside COALESCE in an UPDATE's SET":
        "UPDATE episodes SET ended_at = GREATEST(COALESCE(ended_at, last_message_at, now()), "
        "started_at) WHERE agent_id = $1 AND memory_id = $2",
    "a stable function over columns in an UPDATE's SET":
        "UPDATE episode_messages SET edits = edits || jsonb_build_array(jsonb_build_object("
        "'content', content, 'edited_at', now())) WHERE agent_id = $1 AND episode_id = $2",
    "now() in ON CONFLICT DO UPDATE SET":
        "INSERT INTO conversation_policies (agent_id, policy) VALUES ($1, $2) ON CONFLICT "
        "(agent_id) DO UPDATE SET policy = EXCLUDED.policy, updated_at = now()",
    "now() in the WHERE of ON CONFLICT DO UPDATE":
        "INSERT INTO extraction_cache (agent_id, memory_id, query_sha256, max_tokens, content, "
        "source, expires_at) VALUES ($1, $2, $3, 10, 'x', 'rule', $4) ON CONFLICT (agent_id, "
        "memory_id, query_sha256, max_tokens) DO UPDATE SET content = EXCLUDED.content "
        "WHERE extraction_cache.expires_at <= now()",
    "a volatile function in an UPDATE":
        "UPDATE memories SET importance = random() WHERE agent_id = $1",
    "a row lock over a key range (a row comparison, not agent_id = $n)":
        "WITH b AS (SELECT agent_id, memory_id FROM episodes "
        "WHERE (agent_id, memory_id) > ($1::text, $2::uuid) "
        "AND (agent_id, memory_id) <= ($3::text, $4::uuid) FOR UPDATE) "
        "UPDATE episodes e SET storage = 'trimmed' FROM b "
        "WHERE e.agent_id = b.agent_id AND e.memory_id = b.memory_id",
    "a row lock across agents":
        "SELECT m.id FROM memories m JOIN facts f ON f.agent_id = m.agent_id "
        "AND f.memory_id = m.id WHERE f.confirmation_count >= $1 LIMIT 10 "
        "FOR UPDATE OF m SKIP LOCKED",
    "the coordinator's queue beside distributed tables in a write":
        "INSERT INTO work_items (agent_id, task, memory_id, run_after, payload) "
        "SELECT e.agent_id, 'episode_learn', e.memory_id, now(), '{}'::jsonb FROM episodes e "
        "WHERE e.state = 'closed' AND NOT EXISTS (SELECT 1 FROM work_items w "
        "WHERE w.agent_id = e.agent_id AND w.memory_id = e.memory_id) LIMIT $1",
    "ctid":
        "DELETE FROM extraction_cache WHERE ctid = ANY(ARRAY(SELECT ctid FROM "
        "extraction_cache WHERE expires_at < $1 LIMIT $2))",
    "a recursive CTE across agents":
        "WITH RECURSIVE a AS ((SELECT agent_id FROM memories ORDER BY agent_id LIMIT 1) "
        "UNION ALL SELECT (SELECT m.agent_id FROM memories m WHERE m.agent_id > a.agent_id "
        "ORDER BY m.agent_id LIMIT 1) FROM a WHERE a.agent_id IS NOT NULL) "
        "SELECT agent_id FROM a LIMIT $1",
}
PLANNED_SHAPES = {
    "the moment as a parameter":
        "UPDATE episodes SET ended_at = GREATEST(COALESCE(ended_at, last_message_at, "
        "$3::timestamptz), started_at) WHERE agent_id = $1 AND memory_id = $2",
    "now() alone in an UPDATE's SET":
        "UPDATE episode_messages SET deleted_at = now() WHERE agent_id = $1 AND episode_id = $2",
    "the default through EXCLUDED":
        "INSERT INTO conversation_policies (agent_id, policy) VALUES ($1, $2) ON CONFLICT "
        "(agent_id) DO UPDATE SET policy = EXCLUDED.policy, updated_at = EXCLUDED.updated_at",
    "a row lock within one agent":
        "SELECT memory_id FROM episodes WHERE agent_id = $1 AND memory_id > $2 "
        "AND memory_id <= $3 FOR UPDATE",
    "a read-only multi-shard page":
        "SELECT agent_id FROM episodes WHERE agent_id > $1 GROUP BY agent_id "
        "ORDER BY agent_id LIMIT $2",
    "a recursive CTE within one agent":
        "WITH RECURSIVE c AS (SELECT id FROM memories WHERE agent_id = $1 AND id = $2 "
        "UNION ALL SELECT f.memory_id FROM facts f JOIN c ON f.agent_id = $1 "
        "AND f.supersedes_id = c.id) SELECT id FROM c",
}


async def test_shape_check_refuses_what_citus_refused(conn: asyncpg.Connection) -> None:
    funcs = await citus_shapes.volatility(conn)
    for name, sql in REFUSED_SHAPES.items():
        assert await shape_refusals(conn, sql, funcs), f"{name} passed"
    for name, sql in PLANNED_SHAPES.items():
        assert await shape_refusals(conn, sql, funcs) == [], name
