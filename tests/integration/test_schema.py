"""schema.sql is the source of truth: the typed rows (and their drift check), the detail
models, the named queries and the migration runner are all checked against a database
built from it."""

from __future__ import annotations

import asyncpg
import pytest

from nous_memory import MemoryStore, PgvectorMissingError
from nous_memory.db import QUERIES, Connection, migrate
from nous_memory.db.distribution import CITUS_CATALOG_QUERIES
from nous_memory.db.drift import expected_tables, schema_drift
from nous_memory.db.migrate import migrations, schema_status, schema_version
from nous_memory.db.models import TABLE_MODELS
from nous_memory.embeddings import BUNDLED_MODEL_NAME
from nous_memory.errors import EmbeddingMismatchError, SchemaError
from nous_memory.memories.kinds import DETAIL_MODELS
from nous_memory.testing import FakeEmbedder


async def _live_columns(conn: asyncpg.Connection, table: str) -> dict[str, tuple[str, bool]]:
    rows = await conn.fetch(
        "SELECT column_name, udt_name, is_nullable = 'YES' AS nullable "
        "FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1",
        table)
    return {r["column_name"]: (r["udt_name"], r["nullable"]) for r in rows}


async def test_typed_rows_match_live_schema(store: MemoryStore) -> None:
    """db/models.py pictures every table of a database built from schema.sql exactly."""
    assert await store.schema_drift() == []
    live = {r["table_name"] for r in await store._db.fetch("catalog_columns")}
    assert live == set(expected_tables()) and len(live) == len(TABLE_MODELS)


async def test_drift_names_every_hand_made_change(empty_database_url: str) -> None:
    conn = await asyncpg.connect(empty_database_url)
    try:
        wrapped = Connection(conn, QUERIES)
        await migrate(wrapped, embedding_dim=384, embedding_model=BUNDLED_MODEL_NAME)
        assert await schema_drift(wrapped) == []
        await conn.execute("""
            ALTER TABLE facts DROP COLUMN subject;
            ALTER TABLE embedding_cache ALTER COLUMN model TYPE varchar(200);
            ALTER TABLE llm_calls ALTER COLUMN model DROP NOT NULL;
            ALTER TABLE llm_calls ADD COLUMN extra integer;
            ALTER TABLE store_meta DROP CONSTRAINT store_meta_pkey;
            CREATE TABLE stray (x integer);
            DROP TABLE job_runs;
            CREATE SCHEMA elsewhere;
            CREATE TABLE elsewhere.memories (x integer);
            DROP VIEW memory_records;""")
        assert await schema_drift(wrapped) == [
            "embedding_cache.model is varchar, expected text",
            "facts.subject is missing",
            "table job_runs is missing",
            "llm_calls.model is nullable, expected NOT NULL",
            "llm_calls.extra is not known to this version",
            "store_meta has primary key (), expected (key)",
            "table stray is not known to this version",
            "view memory_records is missing",
        ]
    finally:
        await conn.close()


async def test_detail_models_cover_their_tables(database_url: str) -> None:
    """Every detail table column is a field of the kind's model and the reverse."""
    tables = {"decision": "decisions", "fact": "facts", "episode": "episodes",
              "procedure": "procedures", "censor": "censors"}
    conn = await asyncpg.connect(database_url)
    try:
        for kind, model in DETAIL_MODELS.items():
            live = set(await _live_columns(conn, tables[kind.value]))
            internal = {"agent_id", "memory_id", "normalized_hash"}
            assert live - internal == set(model.model_fields), kind
    finally:
        await conn.close()


async def test_every_named_query_prepares(store: MemoryStore) -> None:
    """A typo in queries.sql fails here, not in production.  The queries of Citus's own
    catalog get as far as the first table only Citus has."""
    async with store._db.acquire() as conn:
        for name in QUERIES.names():
            if name in CITUS_CATALOG_QUERIES:
                with pytest.raises(asyncpg.UndefinedTableError, match='"pg_dist_'):
                    await conn.raw.prepare(QUERIES[name])
                continue
            await conn.raw.prepare(QUERIES[name])


async def test_migrate_fresh_database_then_idempotent(empty_database_url: str) -> None:
    conn = await asyncpg.connect(empty_database_url)
    try:
        wrapped = Connection(conn, QUERIES)
        first = await migrate(wrapped, embedding_dim=384, embedding_model=BUNDLED_MODEL_NAME)
        assert first.version == schema_version() == first.expected_version
        second = await migrate(wrapped, embedding_dim=384, embedding_model=BUNDLED_MODEL_NAME)
        assert second == first
        assert await conn.fetchval("SELECT count(*) FROM schema_version") == 1
    finally:
        await conn.close()


async def test_schema_for_another_dimension(empty_database_url: str) -> None:
    conn = await asyncpg.connect(empty_database_url)
    try:
        status = await migrate(Connection(conn, QUERIES), embedding_dim=8,
                               embedding_model="tiny")
        assert status.embedding_dim == 8
        typmod = await conn.fetchval(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memories'::regclass "
            "AND attname = 'embedding'")
        assert typmod == 8
    finally:
        await conn.close()


async def test_embedder_of_other_dimension_is_refused(database_url: str) -> None:
    with pytest.raises(EmbeddingMismatchError, match="384"):
        async with MemoryStore.open(database_url=database_url,
                                    embedder=FakeEmbedder(dimension=512)):
            pass


async def test_database_newer_than_code_is_refused(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("INSERT INTO schema_version (version, name) VALUES ($1, 'future')",
                           schema_version() + 1)
        with pytest.raises(SchemaError, match="newer"):
            await migrate(Connection(conn, QUERIES), embedding_dim=384,
                          embedding_model=BUNDLED_MODEL_NAME)
    finally:
        await conn.close()


async def test_missing_pgvector_is_reported(empty_database_url: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A server without pgvector gets a clear message instead of an SQL error."""
    original = Connection.fetchval

    async def no_vector(self: Connection, name: str, *args: object) -> object:
        if name == "pgvector_available":
            return False
        return await original(self, name, *args)

    monkeypatch.setattr(Connection, "fetchval", no_vector)
    conn = await asyncpg.connect(empty_database_url)
    try:
        with pytest.raises(PgvectorMissingError, match="pgvector"):
            await migrate(Connection(conn, QUERIES), embedding_dim=384,
                          embedding_model=BUNDLED_MODEL_NAME)
        assert (await schema_status(Connection(conn, QUERIES))).version is None
    finally:
        await conn.close()


def test_migration_files_line_up_with_schema_version() -> None:
    assert [m.version for m in migrations()] == list(range(2, schema_version() + 1))


async def test_pool_connections_come_back_clean(database_url: str) -> None:
    """Released connections skip asyncpg's full reset, so nothing may leak through them:
    an unfinished transaction is rolled back, transaction settings end with it, and a
    session lock lives on a connection of its own that closing releases."""
    from nous_memory.db import Database

    db = await Database.connect(database_url, min_size=1, max_size=1)
    try:
        async with db.acquire() as conn:
            await conn.raw.execute("BEGIN; SET LOCAL work_mem = '77MB'")
            assert conn.raw.is_in_transaction()
        async with db.acquire() as conn:  # the same (only) connection
            assert not conn.raw.is_in_transaction()
            assert await conn.raw.fetchval("SHOW work_mem") != "77MB"
        async with db.session() as held:
            assert await held.fetchval("job_lock", "pool-test")
            async with db.acquire() as other:
                assert not await other.fetchval("job_lock", "pool-test")
        async with db.acquire() as conn:  # the session closed: its lock is gone
            assert await conn.fetchval("job_lock", "pool-test")
            await conn.fetchval("job_unlock", "pool-test")
    finally:
        await db.close()


async def test_only_the_scan_pool_plans_generically_without_seq_scans(database_url: str) -> None:
    """A small agent's recall runs on the scan pool, whose sessions are set up when each
    connection opens; the main pool's sessions keep the server's defaults."""
    from nous_memory.db import Database

    db = await Database.connect(database_url, min_size=1, max_size=1)
    try:
        for _ in range(2):  # a reused scan connection keeps its setup
            async with db.scanning() as conn:
                assert not conn.raw.is_in_transaction()
                assert await conn.raw.fetchval("SHOW plan_cache_mode") == "force_generic_plan"
                assert await conn.raw.fetchval("SHOW enable_seqscan") == "off"
        async with db.acquire() as conn:
            assert await conn.raw.fetchval("SHOW plan_cache_mode") == "auto"
            assert await conn.raw.fetchval("SHOW enable_seqscan") == "on"
    finally:
        await db.close()


async def test_every_foreign_key_is_indexed(store: MemoryStore) -> None:
    """Deleting a referenced row (a purge, forgetting an agent) looks up the rows that
    point at it; without an index on the referencing columns each delete scans a table."""
    async with store._db.acquire() as conn:
        keys = await conn.raw.fetch(
            "SELECT conrelid::regclass::text AS tab, conname, conkey FROM pg_constraint "
            "WHERE contype = 'f' AND connamespace = 'public'::regnamespace")
        indexes = await conn.raw.fetch(
            "SELECT indrelid::regclass::text AS tab, indkey::int2[] AS cols, indisunique "
            "FROM pg_index WHERE indrelid::regclass::text NOT LIKE 'pg_%'")

    def serves(index: asyncpg.Record, key: asyncpg.Record) -> bool:
        """The index leads with the key's columns (a unique index with some of them)."""
        cols, wanted = list(index["cols"]), set(key["conkey"])
        lead = cols if index["indisunique"] and len(cols) < len(wanted) else \
            cols[:len(wanted)]
        return index["tab"] == key["tab"] and set(lead) <= wanted and \
            len(lead) == min(len(cols), len(wanted))

    unindexed = [k["conname"] for k in keys if not any(serves(i, k) for i in indexes)]
    assert unindexed == []
