"""Getting a database ready before the pools open: create it on the embedded server,
then migrate it (or only read its schema status), each on a connection of its own."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import parse_qs, urlsplit

import asyncpg

from ..errors import DatabaseUnavailableError
from .connector import Connection
from .embedded import EmbeddedServer
from .errors import is_unavailable, translated
from .migrate import SchemaStatus, migrate, schema_status
from .outage import Backoff
from .queries import QUERIES

T = TypeVar("T")
_log = logging.getLogger("nous_memory.db")


def redact_dsn(dsn: str) -> str:
    """The DSN without its password, for messages and health output."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", dsn)


async def _connect_raw(dsn: str) -> asyncpg.Connection:
    """A connection of its own, before the store is open: a database that is not there
    yet is not an outage (nothing was up), so the outage tracker is left out of it."""
    try:
        return await asyncpg.connect(dsn)
    except Exception as exc:
        if is_unavailable(exc):
            raise DatabaseUnavailableError(
                f"cannot connect to {redact_dsn(dsn)}: {exc}") from exc
        with translated():
            raise


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


def dsn_host(dsn: str) -> str:
    """Where a DSN points (host:port, or the socket directory, and the database), for
    one-line messages; never the user or password."""
    parts = urlsplit(dsn)
    socket_dir = parse_qs(parts.query).get("host")
    host = parts.hostname or (socket_dir[0] if socket_dir else "localhost")
    where = f"{host}:{parts.port}" if parts.port else host
    name = parts.path.lstrip("/")
    return f"{where} (database {name})" if name else where


async def probe(dsn: str) -> None:
    """Connect once and let go: is the database there?"""
    conn = await _connect_raw(dsn)
    await conn.close()


async def waiting_for_database(attempt: Callable[[], Awaitable[T]], dsn: str,
                               wait_s: float) -> T:
    """``attempt()``, tried again with backoff while the database is unavailable, for up
    to ``wait_s`` seconds: one log line per failed attempt, then one clear error naming
    the host and the reason.  Other errors (a wrong password, no such database) are not
    waited for."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    backoff = Backoff(base_s=0.5, cap_s=5.0)
    tries = 0
    while True:
        tries += 1
        try:
            return await attempt()
        except DatabaseUnavailableError as exc:
            reason = _reason(exc)
            waited = loop.time() - started
            if waited >= wait_s:
                raise DatabaseUnavailableError(
                    f"cannot reach the database at {dsn_host(dsn)}: {reason}"
                    + (f" (gave up after {waited:.0f} s and {tries} attempts; "
                       f"NOUS_MEMORY_DB_WAIT_S={wait_s:g})" if wait_s > 0 else "")
                ) from exc
            _log.warning("waiting for the database at %s (attempt %d, %.0f of %g s): %s",
                         dsn_host(dsn), tries, waited, wait_s, reason)
            await asyncio.sleep(min(backoff.next_delay(), wait_s - waited))


def _reason(exc: BaseException) -> str:
    """The driver's own words for why, without our prefixes or the DSN."""
    cause: BaseException = exc
    while cause.__cause__ is not None:
        cause = cause.__cause__
    text = str(cause).strip() or type(cause).__name__
    return text.splitlines()[0]
