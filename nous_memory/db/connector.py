"""asyncpg pools with the pgvector and JSON codecs; a small verb API over named queries.

The main pool's connections keep no session state.  An optional second, scan pool serves
the one statement that must never be planned per call (a small agent's recall): its
sessions are set up once, when each connection opens, so a call needs no transaction and
no settings round trip.  It is for direct or session-mode connections: a transaction-mode
pooler would hand its sessions to other clients."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from ..errors import NousMemoryError
from .distribution import DELEGATED_READS
from .errors import is_unavailable, translated
from .outage import QuietPoolLog
from .queries import QUERIES, Queries
from .worker_reads import (
    COMMAND_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    POOL_SIZE,
    Locate,
    Node,
    PoolFactory,
    WorkerReads,
    pointable,
)

logging.getLogger("asyncpg.pool").addFilter(QuietPoolLog(is_unavailable))
_log = logging.getLogger(__name__)

PREPARE_TIMEOUT_S = 60.0  # a worker's type lookup and plans, at connection open
WARM_UP_S = 30.0  # the most a worker connection spends preparing its shard groups' reads
WARM_CANDIDATES = 20_000  # made-up agents searched for one per shard group (queries.sql)


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _init_scan_connection(conn: asyncpg.Connection) -> None:
    await _init_connection(conn)
    await conn.execute(QUERIES["scan_session_settings"])


async def _no_session_reset(conn: asyncpg.Connection) -> None:
    """Pool release without asyncpg's full reset (RESET ALL, unlock all, ...: one more
    round trip on every read).  Main-pool connections keep no session state: settings are
    SET LOCAL, locks are transaction locks, session locks use ``Database.session``; the
    scan pool's settings are its purpose.  An unfinished transaction is still rolled back
    (asyncpg does that before calling this)."""
    del conn


class Connection:
    """One checked-out connection (inside or outside a transaction); same verbs as Database."""

    def __init__(self, conn: asyncpg.Connection, queries: Queries) -> None:
        self.raw = conn
        self._queries = queries

    async def fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        with translated():
            rows: list[asyncpg.Record] = await self.raw.fetch(self._queries[name], *args)
            return rows

    async def fetchrow(self, name: str, *args: Any) -> asyncpg.Record | None:
        with translated():
            row: asyncpg.Record | None = await self.raw.fetchrow(self._queries[name], *args)
            return row

    async def fetchval(self, name: str, *args: Any) -> Any:
        with translated():
            return await self.raw.fetchval(self._queries[name], *args)

    async def execute(self, name: str, *args: Any) -> str:
        with translated():
            status: str = await self.raw.execute(self._queries[name], *args)
            return status

    async def execute_built(self, statement: str) -> str:
        """A statement PostgreSQL built itself (a named query's ``format()`` with %I and %L
        quoting): DDL, which takes no parameters.  Never text from anywhere else."""
        with translated():
            status: str = await self.raw.execute(statement)
            return status

    async def fetch_built(self, statement: str) -> list[asyncpg.Record]:
        """A query PostgreSQL built itself (a named query's ``format()`` with %I quoting),
        taking no parameters.  Never text from anywhere else."""
        with translated():
            rows: list[asyncpg.Record] = await self.raw.fetch(statement)
            return rows

    @property
    def closed(self) -> bool:
        """Whether the connection is gone (closed here, or lost: the server went away)."""
        closed: bool = self.raw.is_closed()
        return closed

    def on_lost(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when the connection ends, whoever ends it."""
        self.raw.add_termination_listener(lambda _conn: callback())

    async def close(self) -> None:
        """Close a connection of its own (``Database.open_session``); a lost one is only
        let go."""
        if self.raw.is_closed():
            return
        try:
            with translated():
                await self.raw.close(timeout=5)
        except NousMemoryError:
            self.raw.terminate()

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        """A nested transaction: an error inside undoes only its own statements."""
        with translated():
            async with self.raw.transaction():
                yield


class Database:
    """The pools.  Every statement is a named query from ``queries.sql``."""

    def __init__(self, pool: asyncpg.Pool, queries: Queries = QUERIES, *,
                 dsn: str | None = None, scan_pool: asyncpg.Pool | None = None,
                 distributed: bool = False, delegated: bool = False,
                 worker_reads: WorkerReads | None = None) -> None:
        self._pool = pool
        self._queries = queries
        self._dsn = dsn
        self._scan_pool = scan_pool
        # a Citus coordinator (docs/scaling.md): no generic plans (Citus picks an agent's
        # shard from the bound agent_id), so no scan pool either
        self.distributed = distributed
        # and its read functions distributed by agent: reads go through ``read``
        self.delegated = distributed and delegated
        # which calls them on the agent's worker itself, where it can
        self.worker_reads = worker_reads if self.delegated else None

    @classmethod
    async def connect(cls, dsn: str, *, min_size: int = 1, max_size: int = 10,
                      scan_pool: bool = True, worker_reads: bool = True) -> Database:
        """The main pool and, unless ``scan_pool`` is false, the scan pool (at most
        ``max_size`` connections each; the scan pool opens its first one when first
        used).  On a Citus coordinator whose read functions are distributed, unless
        ``worker_reads`` is false, reads go to the agent's worker (``worker_reads.py``)
        through a pool per worker."""
        with translated():
            pool = await asyncpg.create_pool(
                dsn, min_size=min_size, max_size=max_size, init=_init_connection,
                reset=_no_session_reset,
            )
            assert pool is not None
            scanning: asyncpg.Pool | None = None
            try:
                distributed = bool(await pool.fetchval(QUERIES["citus_installed"]))
                delegated = distributed and bool(await pool.fetchval(
                    QUERIES["citus_reads_delegated"], list(DELEGATED_READS.values())))
                if scan_pool and not distributed:
                    scanning = await asyncpg.create_pool(
                        dsn, min_size=0, max_size=max_size, init=_init_scan_connection,
                        reset=_no_session_reset,
                    )
            except BaseException:
                await pool.close()
                raise
        direct = None
        if delegated and worker_reads and pointable(dsn):
            direct = WorkerReads(dsn, _locator(pool), _pool_opener())
        return cls(pool, dsn=dsn, scan_pool=scanning, distributed=distributed,
                   delegated=delegated, worker_reads=direct)

    @property
    def read_route(self) -> str:
        """Where the read path's statements run: ``statements`` (as named queries, on one
        PostgreSQL or through a Citus coordinator), ``coordinator`` (their functions,
        handed whole to the agent's worker by the coordinator) or ``workers`` (their
        functions, called on the agent's worker directly)."""
        if not self.delegated:
            return "statements"
        return "coordinator" if self.worker_reads is None else "workers"

    def pool_connections(self) -> dict[str, int]:
        """The main pool's connections in use and idle (for /metrics)."""
        size, idle = self._pool.get_size(), self._pool.get_idle_size()
        return {"in_use": size - idle, "idle": idle, "max": self._pool.get_max_size()}

    @property
    def has_scan_pool(self) -> bool:
        return self._scan_pool is not None

    async def close(self) -> None:
        try:
            if self._scan_pool is not None:
                await self._scan_pool.close()
        finally:
            try:
                if self.worker_reads is not None:
                    await self.worker_reads.close()
            finally:
                await self._pool.close()

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[Connection]:
        with translated():
            async with self._pool.acquire() as conn:
                yield Connection(conn, self._queries)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A connection inside one transaction; keep it short (no model calls inside)."""
        with translated():
            async with self._pool.acquire() as conn, conn.transaction():
                yield Connection(conn, self._queries)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Connection]:
        """A read-only transaction that sees one moment throughout (repeatable read):
        a long read, such as an export, stays consistent while others write."""
        with translated():
            async with self._pool.acquire() as conn, conn.transaction(
                    isolation="repeatable_read", readonly=True):
                yield Connection(conn, self._queries)

    @asynccontextmanager
    async def scanning(self) -> AsyncIterator[Connection]:
        """A connection of the scan pool, outside any transaction: its session plans every
        statement generically and never scans a table sequentially (``queries.sql``,
        ``scan_session_settings``).  Only for statements written for that."""
        if self._scan_pool is None:
            raise RuntimeError("this Database was built without a scan pool: no scanning()")
        with translated():
            async with self._scan_pool.acquire() as conn:
                yield Connection(conn, self._queries)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Connection]:
        """A connection of its own, outside the pool, closed afterwards: for session state
        such as an advisory lock held across transactions (closing releases it)."""
        conn = await self.open_session()
        try:
            yield conn
        finally:
            await conn.close()

    async def open_session(self) -> Connection:
        """A connection of its own, outside the pool; the caller closes it (``session``
        does).  For session state kept for as long as a process runs."""
        if self._dsn is None:
            raise RuntimeError("this Database was built without a DSN: no session()")
        with translated():
            conn = await asyncpg.connect(self._dsn)
            try:
                await _init_connection(conn)
            except BaseException:
                conn.terminate()
                raise
        return Connection(conn, self._queries)

    @asynccontextmanager
    async def rehearsal(self) -> AsyncIterator[Connection]:
        """A transaction that is always rolled back: a dry run does the real work in it,
        so what it reports is exactly what a real run would change."""
        with translated():
            async with self._pool.acquire() as conn:
                tx = conn.transaction()
                await tx.start()
                try:
                    yield Connection(conn, self._queries)
                finally:
                    await tx.rollback()

    async def fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        async with self.acquire() as conn:
            return await conn.fetch(name, *args)

    async def fetchrow(self, name: str, *args: Any) -> asyncpg.Record | None:
        async with self.acquire() as conn:
            return await conn.fetchrow(name, *args)

    async def fetchval(self, name: str, *args: Any) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchval(name, *args)

    async def execute(self, name: str, *args: Any) -> str:
        async with self.acquire() as conn:
            return await conn.execute(name, *args)

    async def read(self, name: str, *args: Any) -> list[asyncpg.Record]:
        """One of the read path's statements (``DELEGATED_READS``), outside a transaction:
        on a Citus cluster with the read functions distributed, its function, which the
        coordinator hands whole to the agent's worker; elsewhere the statement."""
        if self.delegated and name in DELEGATED_READS:
            name = f"{name}_delegated"
            if self.worker_reads is not None:  # (a Citus worker: not what OUTAGE watches)
                with translated(reports=False):
                    rows = await self.worker_reads.fetch(self._queries[name], *args)
                if rows is not None:
                    return rows
        return await self.fetch(name, *args)


def _locator(pool: asyncpg.Pool) -> Locate:
    """The agent's node, read from the coordinator's catalog (``citus_agent_node``)."""
    async def locate(agent: str) -> Node | None:
        with translated():
            row = await pool.fetchrow(QUERIES["citus_agent_node"], agent)
        return None if row is None else Node(row["nodename"], row["nodeport"])
    return locate


def _pool_opener() -> PoolFactory:
    async def open_pool(dsn: str) -> asyncpg.Pool:
        # its connections are kept (not replaced after so many queries or so long idle,
        # asyncpg's defaults): opening one takes seconds (the type lookup, the shard
        # groups' reads), which the read that found it closed would wait for; an idle
        # node's whole pool is closed instead (worker_reads.IDLE_CLOSE_S)
        pool = await asyncpg.create_pool(
            dsn, min_size=POOL_SIZE, max_size=POOL_SIZE, init=_init_worker_connection,
            reset=_no_session_reset, timeout=CONNECT_TIMEOUT_S,
            command_timeout=COMMAND_TIMEOUT_S, max_queries=2**62,
            max_inactive_connection_lifetime=0)
        assert pool is not None
        return pool
    return open_pool


async def _init_worker_connection(conn: asyncpg.Connection) -> None:
    """A worker's connection prepares the reads it will serve: the driver learns their
    types now, in the background, not in a request."""
    await _init_connection(conn)
    reads = [await conn.prepare(QUERIES[f"{name}_delegated"], timeout=PREPARE_TIMEOUT_S)
             for name in DELEGATED_READS]
    await _prepare_shard_groups(conn, reads)


async def _prepare_shard_groups(conn: asyncpg.Connection,
                               reads: list[asyncpg.prepared_stmt.PreparedStatement]) -> None:
    """Run each read once for every shard group on this node (with a made-up agent of
    that group and no other argument: it finds nothing), so that the session holds each
    group's prepared statement, recall's planned, before its first request.  A read
    function prepares its statement once per session and shard group; left to the
    requests, a new connection's first call for each group pays the planning (about 3 ms
    for recall's statement), which is most calls while an agent's connections are young.
    On a node without Citus the one statement per read is prepared.  Best effort, within
    ``WARM_UP_S``: what is not prepared here is prepared by its first request."""
    deadline = time.monotonic() + WARM_UP_S
    try:
        agents = (["nous-warm"] if not await conn.fetchval(
            QUERIES["citus_installed"], timeout=PREPARE_TIMEOUT_S) else
            [row["agent"] for row in await conn.fetch(
                QUERIES["citus_local_shard_agents"], WARM_CANDIDATES,
                timeout=PREPARE_TIMEOUT_S)])
    except (asyncpg.PostgresError, TimeoutError) as exc:
        _log.warning("listing a Citus worker's shard groups failed (%s: %s); the first "
                     "request of each prepares its reads", type(exc).__name__, exc)
        return
    failed: Exception | None = None
    for agent in agents:
        for read in reads:
            left = deadline - time.monotonic()
            if left <= 0 or conn.is_closed():
                return
            try:
                await read.fetch(agent, *[None] * (len(read.get_parameters()) - 1),
                                 timeout=min(left, PREPARE_TIMEOUT_S))
            except (asyncpg.PostgresError, TimeoutError) as exc:
                failed = failed or exc
    if failed is not None:
        _log.warning("preparing a read of a Citus worker connection failed (%s: %s); its "
                     "first request prepares it", type(failed).__name__, failed)
