"""The suite's own database fixtures: a clone per test is dropped again, or a run leaves
one behind per test (gigabytes for the session's teardown to delete)."""

from __future__ import annotations

from urllib.parse import urlsplit

import asyncpg

from nous_memory.db import EmbeddedServer
from tests.conftest import create_database, drop_database


async def _exists(server: EmbeddedServer, name: str) -> bool:
    admin = await asyncpg.connect(server.dsn("postgres"))
    try:
        return bool(await admin.fetchval(
            "SELECT count(*) FROM pg_database WHERE datname = $1", name))
    finally:
        await admin.close()


async def test_a_cloned_database_is_dropped(pg_server: EmbeddedServer,
                                            template_db: str) -> None:
    dsn = await create_database(pg_server, template_db)
    name = urlsplit(dsn).path.lstrip("/")
    assert await _exists(pg_server, name)
    await drop_database(pg_server, dsn)
    assert not await _exists(pg_server, name)
