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
