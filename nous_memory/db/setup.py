"""Getting a database ready before the pools open: create it on the embedded server,
then migrate it (or only read its schema status), each on a connection of its own."""

from __future__ import annotations

import contextlib
import re

import asyncpg

from ..errors import DatabaseUnavailableError
from .connector import Connection
from .embedded import EmbeddedServer
from .errors import translated
from .migrate import SchemaStatus, migrate, schema_status
from .queries import QUERIES


def redact_dsn(dsn: str) -> str:
    """The DSN without its password, for messages and health output."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", dsn)


async def _connect_raw(dsn: str) -> asyncpg.Connection:
    try:
        with translated():
            return await asyncpg.connect(dsn)
    except DatabaseUnavailableError as exc:
        raise DatabaseUnavailableError(f"cannot connect to {redact_dsn(dsn)}: {exc}") from exc


async def ensure_database(server: EmbeddedServer, name: str) -> None:
    """The embedded server starts with only ``postgres``; create ours on first use."""
    conn = await _connect_raw(server.dsn("postgres"))
    try:
        if await Connection(conn, QUERIES).fetchval("database_exists", name):
            return
        # another process may create it first; an identifier cannot be a bind
        # parameter, and Settings allows [A-Za-z0-9_] only
        with translated(), contextlib.suppress(asyncpg.DuplicateDatabaseError,
                                               asyncpg.UniqueViolationError):
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def prepare_schema(dsn: str, *, embedding_dim: int, embedding_model: str,
                         apply: bool) -> SchemaStatus:
    """Migrate to this version's schema (``apply``), or only report where it stands."""
    conn = await _connect_raw(dsn)
    try:
        if not apply:
            return await schema_status(Connection(conn, QUERIES))
        return await migrate(Connection(conn, QUERIES), embedding_dim=embedding_dim,
                             embedding_model=embedding_model)
    finally:
        await conn.close()
