"""Raw SQL for tests that check or prepare rows the API does not expose."""

from __future__ import annotations

from typing import Any

import asyncpg

from nous_memory import MemoryStore


async def sql(store: MemoryStore, statement: str, *args: Any) -> list[asyncpg.Record]:
    """Run one statement on its own connection (outside the store's pool)."""
    conn = await asyncpg.connect(store.dsn)
    try:
        return list(await conn.fetch(statement, *args))
    finally:
        await conn.close()


async def tables_holding(store: MemoryStore, *needles: str) -> dict[str, list[str]]:
    """{needle: tables with a row whose text (every column, JSON included; vectors left
    out: their digits are noise) holds it, in any case}: the scan a removal must pass."""
    conn = await asyncpg.connect(store.dsn)
    try:
        tables = [r[0] for r in await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "'public' AND table_type = 'BASE TABLE' ORDER BY 1")]
        found: dict[str, list[str]] = {n: [] for n in needles}
        for table in tables:
            columns = [r[0] for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                "'public' AND table_name = $1 AND udt_name NOT IN ('vector', 'tsvector')",
                table)]
            row_text = " || ' ' || ".join(f'coalesce("{c}"::text, \'\')' for c in columns)
            for needle in needles:
                hit = await conn.fetchval(
                    f'SELECT EXISTS (SELECT 1 FROM "{table}" WHERE strpos(lower({row_text}), '
                    'lower($1)) > 0)', needle)
                if hit:
                    found[needle].append(table)
        return {n: t for n, t in found.items() if t}
    finally:
        await conn.close()
