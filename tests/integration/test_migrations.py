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
