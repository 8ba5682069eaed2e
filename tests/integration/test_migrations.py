"""A database created by an older schema.sql, upgraded by the numbered migrations, ends up
with exactly the layout a fresh database gets from today's schema.sql."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from nous_memory.db import QUERIES, Connection, EmbeddedServer, migrate
from nous_memory.db.migrate import schema_version
from nous_memory.embeddings import BUNDLED_MODEL_NAME

from ..conftest import create_database, drop_database

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# each released schema.sql, by version (copied from git when the next version started)
RELEASED = {1: FIXTURES / "schema_v1.sql", 2: FIXTURES / "schema_v2.sql",
            3: FIXTURES / "schema_v3.sql", 4: FIXTURES / "schema_v4.sql",
            5: FIXTURES / "schema_v5.sql", 6: FIXTURES / "schema_v6.sql",
            7: FIXTURES / "schema_v7.sql", 8: FIXTURES / "schema_v8.sql",
            9: FIXTURES / "schema_v9.sql", 10: FIXTURES / "schema_v10.sql",
            11: FIXTURES / "schema_v11.sql", 12: FIXTURES / "schema_v12.sql",
            13: FIXTURES / "schema_v13.sql"}

CATALOG = {
    "columns": """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attgenerated, a.attidentity,
               a.attstorage, a.attcompression
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v') AND a.attnum > 0
          AND NOT a.attisdropped""",
    "constraints": """
        SELECT c.relname, k.conname, k.contype, pg_get_constraintdef(k.oid)
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'""",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "views": "SELECT viewname, definition FROM pg_views WHERE schemaname = 'public'",
    "extensions": "SELECT extname FROM pg_extension",
    # the store's own functions (the extensions' are in public too)
    "functions": """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid),
               pg_get_function_result(p.oid), p.provolatile,
               array_to_string(p.proconfig, ','), p.prosrc
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proname LIKE 'nous\\_%'""",
}


async def _catalog(dsn: str) -> dict[str, set[tuple[Any, ...]]]:
    conn = await asyncpg.connect(dsn)
    try:
        return {name: {tuple(r) for r in await conn.fetch(sql)} for name, sql in CATALOG.items()}
    finally:
        await conn.close()


async def _migrate(dsn: str, dim: int = 384) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        status = await migrate(Connection(conn, QUERIES), embedding_dim=dim,
                               embedding_model=BUNDLED_MODEL_NAME)
    finally:
        await conn.close()
    assert status.version is not None
    return status.version


async def _create_released(dsn: str, version: int, dim: int = 384) -> None:
    """What the release of ``version`` did on an empty database."""
    sql = RELEASED[version].read_text("utf-8").replace("vector(384)", f"vector({dim})")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(sql)
        await conn.execute("INSERT INTO schema_version (version, name) VALUES ($1, 'schema.sql')",
                           version)
        await conn.execute("INSERT INTO store_meta (key, value) VALUES ('embedding_dim', $1), "
                           "('embedding_model', $2)", str(dim), BUNDLED_MODEL_NAME)
    finally:
        await conn.close()


@pytest.fixture
async def two_databases(pg_server: EmbeddedServer) -> AsyncIterator[tuple[str, str]]:
    old, fresh = await create_database(pg_server, None), await create_database(pg_server, None)
    yield old, fresh
    await drop_database(pg_server, old)
    await drop_database(pg_server, fresh)


def test_every_released_version_is_kept() -> None:
    assert set(RELEASED) == set(range(1, schema_version()))


@pytest.mark.parametrize("version", sorted(RELEASED))
async def test_upgraded_database_matches_a_fresh_one(two_databases: tuple[str, str],
                                                     version: int) -> None:
    old, fresh = two_databases
    await _create_released(old, version)
    assert await _migrate(old) == schema_version()
    assert await _migrate(fresh) == schema_version()
    upgraded, created = await _catalog(old), await _catalog(fresh)
    for part in CATALOG:
        assert upgraded[part] - created[part] == set(), part
        assert created[part] - upgraded[part] == set(), part
    assert await _migrate(old) == schema_version()  # idempotent


async def test_upgrade_keeps_the_embedding_dimension(two_databases: tuple[str, str]) -> None:
    """Vector columns a migration adds take the database's dimension, not the default."""
    old, _ = two_databases
    await _create_released(old, 1, dim=16)
    assert await _migrate(old, dim=16) == schema_version()
    conn = await asyncpg.connect(old)
    try:
        types = {r[0] for r in await conn.fetch(
            "SELECT DISTINCT format_type(atttypid, atttypmod) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' "
            "AND format_type(atttypid, atttypmod) LIKE 'vector%'")}
    finally:
        await conn.close()
    assert types == {"vector(16)"}


async def test_upgrade_keeps_a_users_conversations_theirs(
        two_databases: tuple[str, str]) -> None:
    """A conversation started for a user before people existed (v13) is that user's after
    the upgrade, and so are its user turns and what was learned from it."""
    old, _ = two_databases
    await _create_released(old, 13)
    conn = await asyncpg.connect(old)
    try:
        for ident, kind in (("00000000-0000-4000-8000-000000000001", "episode"),
                            ("00000000-0000-4000-8000-000000000002", "fact"),
                            ("00000000-0000-4000-8000-000000000003", "episode")):
            await conn.execute(
                "INSERT INTO memories (agent_id, id, kind, summary, summary_source, "
                "summary_tokens) VALUES ('a', $1, $2, 's', 'template', 1)", ident, kind)
        await conn.execute("INSERT INTO episodes (agent_id, memory_id, user_id) VALUES "
                           "('a', '00000000-0000-4000-8000-000000000001', '  Ana  Lima '), "
                           "('a', '00000000-0000-4000-8000-000000000003', NULL)")
        await conn.execute(
            "INSERT INTO episode_messages (agent_id, episode_id, seq, role, content, tokens) "
            "VALUES ('a', '00000000-0000-4000-8000-000000000001', 0, 'user', 'hi', 1), "
            "('a', '00000000-0000-4000-8000-000000000001', 1, 'assistant', 'hello', 1)")
        await conn.execute(
            "INSERT INTO facts (agent_id, memory_id, content, normalized_hash, "
            "source_episode_id) VALUES ('a', '00000000-0000-4000-8000-000000000002', "
            "'Ana likes tea.', sha256('x'), '00000000-0000-4000-8000-000000000001')")
    finally:
        await conn.close()
    assert await _migrate(old) == schema_version()
    conn = await asyncpg.connect(old)
    try:
        people = dict(await conn.fetch("SELECT id::text, people FROM memories ORDER BY id"))
        persons = [r[0] for r in await conn.fetch(
            "SELECT person FROM episode_messages ORDER BY seq")]
    finally:
        await conn.close()
    assert people == {"00000000-0000-4000-8000-000000000001": ["ana lima"],
                      "00000000-0000-4000-8000-000000000002": ["ana lima"],
                      "00000000-0000-4000-8000-000000000003": []}
    assert persons == ["ana lima", None]
