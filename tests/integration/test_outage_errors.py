"""A connection cut in the middle of any kind of statement is the store's unavailable
error (503 on REST, a tool error, ``DatabaseUnavailableError`` in Python), never a 500.

Another connection ends the store's backends with ``pg_terminate_backend`` while they
are inside a statement (made to wait on a lock held by the test, or on ``pg_sleep``),
inside and outside transactions, between a transaction's statements and at its commit,
in a savepoint, in a snapshot, on a session of its own, in the scan pool, inside a
server-side cursor, in an import and in a pipelined batch; and then at random under a
mixed REST load.  The product sends no COPY itself (its bulk path is the pipelined
batch); ``db backup`` runs pg_dump, whose COPY is tested with the backups.  Real
PostgreSQL throughout.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from nous_memory import ContentionError, DatabaseUnavailableError, Embedder, MemoryStore
from nous_memory.api import create_app
from nous_memory.db import Database, Queries
from nous_memory.db.bulk import SHAPES, copy_to_stage, create_stage
from nous_memory.db.errors import is_unavailable, translate
from nous_memory.db.outage import OUTAGE
from tests.integration.http_helpers import asgi_client

TEST_QUERIES = """
-- name: t_one
SELECT 1;
-- name: t_slow
SELECT pg_sleep(60);
-- name: t_locked
SELECT count(*) FROM memories;
"""


def _queries() -> Queries:
    from nous_memory.db.queries import package_sources

    return Queries([*package_sources(), ("test", TEST_QUERIES)])


def _name(dsn: str) -> str:
    return urlsplit(dsn).path.lstrip("/")


async def _pids(admin: asyncpg.Connection, dsn: str, *, state: str | None = None,
                like: str = "%", waiting: bool = False) -> list[int]:
    rows = await admin.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() "
        "AND backend_type = 'client backend' AND query LIKE $2 "
        "AND ($3::text IS NULL OR state = $3) AND (NOT $4 OR wait_event_type = 'Lock')",
        _name(dsn), like, state, waiting)
    return [r["pid"] for r in rows]


async def _kill_when(admin: asyncpg.Connection, dsn: str, *, timeout_s: float = 20.0,
                     **match: Any) -> int:
    """Wait for one backend matching ``match``, terminate it, return its pid."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        pids = await _pids(admin, dsn, **match)
        if pids:
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pids[0])
            return pids[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no backend matching {match} within {timeout_s} s")


@pytest.fixture
async def admin(pg_server: Any) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(pg_server.dsn("postgres"))
    yield conn
    await conn.close()


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4)
    assert pool is not None
    scan = await asyncpg.create_pool(database_url, min_size=0, max_size=2)
    assert scan is not None
    database = Database(pool, _queries(), dsn=database_url, scan_pool=scan)
    yield database
    await database.close()


Statement = Callable[[Database], Awaitable[Any]]


async def _outside(db: Database) -> Any:
    return await db.fetchval("t_slow")


async def _in_transaction(db: Database) -> Any:
    async with db.transaction() as conn:
        await conn.fetchval("t_one")
        return await conn.fetchval("t_slow")


async def _in_savepoint(db: Database) -> Any:
    async with db.transaction() as conn, conn.savepoint():
        return await conn.fetchval("t_slow")


async def _in_snapshot(db: Database) -> Any:
    async with db.snapshot() as conn:
        return await conn.fetchval("t_slow")


async def _on_a_session(db: Database) -> Any:
    async with db.session() as conn:
        return await conn.fetchval("t_slow")


async def _in_the_scan_pool(db: Database) -> Any:
    async with db.scanning() as conn:
        return await conn.fetchval("t_slow")


async def _in_a_rehearsal(db: Database) -> Any:
    async with db.rehearsal() as conn:
        return await conn.fetchval("t_slow")


@pytest.mark.parametrize("statement", [_outside, _in_transaction, _in_savepoint,
                                       _in_snapshot, _on_a_session, _in_the_scan_pool,
                                       _in_a_rehearsal],
                         ids=lambda f: f.__name__.strip("_"))
async def test_a_connection_killed_mid_statement_is_unavailable(
        db: Database, admin: asyncpg.Connection, database_url: str,
        statement: Statement) -> None:
    running = asyncio.create_task(statement(db))
    await _kill_when(admin, database_url, state="active", like="SELECT pg_sleep%")
    with pytest.raises(DatabaseUnavailableError):
        await asyncio.wait_for(running, 20)
    assert await db.fetchval("t_one") == 1  # and the pool serves again at once
    assert not OUTAGE.away


async def test_killed_between_statements_of_a_transaction(
        db: Database, admin: asyncpg.Connection, database_url: str) -> None:
    """Idle in the transaction when cut: the next statement, or the commit, says so."""
    for then_commit in (False, True):
        between = asyncio.Event()
        go_on = asyncio.Event()

        async def work(between: asyncio.Event = between, go_on: asyncio.Event = go_on,
                       commit_only: bool = then_commit) -> None:
            async with db.transaction() as conn:
                await conn.fetchval("t_one")
                between.set()
                await go_on.wait()
                if not commit_only:
                    await conn.fetchval("t_one")

        running = asyncio.create_task(work())
        await between.wait()
        await _kill_when(admin, database_url, state="idle in transaction")
        await asyncio.sleep(0.2)  # the client has seen its socket close, or not yet
        go_on.set()
        with pytest.raises(DatabaseUnavailableError):
            await asyncio.wait_for(running, 20)
    assert await db.fetchval("t_one") == 1


async def test_killed_while_waiting_for_a_lock_inside_a_cursor_read(
        store: MemoryStore, admin: asyncpg.Connection, database_url: str,
        pg_server: Any) -> None:
    """An export reads through server-side cursors in a snapshot; cut while it waits."""
    await store.remember("ana", "fact", content="Ana lives in Porto")
    locker = await asyncpg.connect(database_url)
    try:
        tx = locker.transaction()
        await tx.start()
        await locker.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        out = io.BytesIO()
        running = asyncio.create_task(store.export_agent_to("ana", out))
        await _kill_when(admin, database_url, waiting=True)
        with pytest.raises(DatabaseUnavailableError):
            await asyncio.wait_for(running, 20)
        await tx.rollback()
    finally:
        await locker.close()
    out = io.BytesIO()
    await store.export_agent_to("ana", out)
    assert b"Ana lives in Porto" in out.getvalue()


async def test_killed_during_a_pipelined_batch(
        db: Database, admin: asyncpg.Connection, database_url: str) -> None:
    """The bulk path stages rows in one pipelined statement per batch (``executemany``,
    where COPY cannot carry the codecs); cut halfway through the batch."""
    setup = await asyncpg.connect(database_url)
    try:  # each staged row takes 20 ms, so the batch is still running when it is cut
        await setup.execute("CREATE TABLE t_pipe (agent_id text NOT NULL, n int NOT NULL "
                            "CHECK (pg_sleep(0.02)::text = ''))")
    finally:
        await setup.close()
    shape = dataclasses.replace(SHAPES["memories"], name="t_pipe", columns=("agent_id", "n"))

    async def stage() -> None:
        async with db.transaction() as conn:
            await create_stage(conn, shape)
            await copy_to_stage(conn, shape, [("a", n, n) for n in range(500)])

    running = asyncio.create_task(stage())
    await _kill_when(admin, database_url, state="active", like='INSERT INTO "stage_t_pipe"%')
    with pytest.raises(DatabaseUnavailableError):
        await asyncio.wait_for(running, 20)
    assert await db.fetchval("t_one") == 1


async def test_an_import_cut_while_it_waits_leaves_nothing(
        store: MemoryStore, admin: asyncpg.Connection, database_url: str) -> None:
    """An import is one transaction; cut inside it, it is unavailable and imports
    nothing; run again, it imports everything."""
    await store.remember_many("src", [{"kind": "fact", "content": f"garden fact {i}"}
                                      for i in range(30)])
    data = b"".join([chunk async for chunk in store.export_agent("src")])
    locker = await asyncpg.connect(database_url)
    try:
        tx = locker.transaction()
        await tx.start()
        await locker.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        running = asyncio.create_task(store.import_agent(io.BytesIO(data), agent_id="dst"))
        await _kill_when(admin, database_url, waiting=True)
        with pytest.raises(DatabaseUnavailableError):
            await asyncio.wait_for(running, 20)
        await tx.rollback()
    finally:
        await locker.close()
    assert (await store.counts("dst")) == (await store.counts("nobody"))
    await store.import_agent(io.BytesIO(data), agent_id="dst")
    assert (await store.counts("dst")) == (await store.counts("src"))


def test_the_translation_covers_every_lost_connection_error() -> None:
    """Each error a lost or reset connection raises, as the driver raises it."""
    cases: list[BaseException] = [
        asyncpg.InternalClientError("cannot switch to state 15; another operation (2) "
                                    "is in progress"),
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of "
                                            "operation"),
        asyncpg.InterfaceError("connection is closed"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.CrashShutdownError("terminating connection because of crash of another "
                                   "server process"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        ConnectionResetError(104, "Connection reset by peer"),
        BrokenPipeError(32, "Broken pipe"),
        ConnectionRefusedError(111, "Connect call failed"),
        OSError(113, "No route to host"),
        TimeoutError(),
    ]
    for exc in cases:
        assert is_unavailable(exc), exc
        assert isinstance(translate(exc), DatabaseUnavailableError), exc
    assert not is_unavailable(asyncpg.OutdatedSchemaCacheError("cached statement plan is "
                                                               "invalid"))
    assert not is_unavailable(asyncpg.QueryCanceledError("canceling statement due to "
                                                          "statement timeout"))


def test_a_deadlock_or_serialization_failure_is_a_retryable_conflict() -> None:
    """Contention, not an outage and not a server fault: HTTP 409, the call retried as
    it is succeeds."""
    for exc in (asyncpg.DeadlockDetectedError("deadlock detected"),
                asyncpg.SerializationError("could not serialize access due to concurrent "
                                           "update")):
        assert not is_unavailable(exc)
        assert isinstance(translate(exc), ContentionError), exc
        assert "retry" in str(translate(exc))


async def test_rest_under_random_connection_kills_answers_no_500(
        database_url: str, embedder: Embedder, admin: asyncpg.Connection) -> None:
    """A mixed load (facts learned, memories written, episodes started, appended and
    closed, recall, context) while every backend of the database is cut again and again:
    every answer is a success or 503 with Retry-After, and all is well afterwards."""
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                data_dir=Path("/nonexistent-unused")) as store, \
            asgi_client(create_app(store)) as http:
        statuses: list[int] = []
        retry_after: set[str | None] = set()
        stop = asyncio.Event()

        async def client(n: int) -> None:
            rng = random.Random(n)
            agent = f"agent{n % 2}"
            i = 0
            while not stop.is_set():
                i += 1
                kind = rng.randrange(6)
                if kind == 0:
                    r = await http.post(f"/agents/{agent}/facts/learn",
                                        json={"content": f"client {n} learned fact {i}"})
                elif kind == 1:
                    r = await http.post(f"/agents/{agent}/memories", json={
                        "kind": "decision", "description": f"decision {n}.{i}"})
                elif kind == 2:
                    r = await http.post(f"/agents/{agent}/episodes", json={})
                    if r.status_code == 201:
                        ident = r.json()["id"]
                        r = await http.post(f"/agents/{agent}/episodes/{ident}/messages",
                                            json={"messages": [{"role": "user",
                                                                "content": f"hi {i}"}]})
                        statuses.append(r.status_code)
                        r = await http.post(f"/agents/{agent}/episodes/{ident}/close")
                elif kind == 3:
                    r = await http.post(f"/agents/{agent}/recall",
                                        json={"query": "fact", "k": 5})
                elif kind == 4:
                    r = await http.post(f"/agents/{agent}/context",
                                        json={"query": "decision", "budget_tokens": 300})
                else:
                    r = await http.get(f"/agents/{agent}/memories")
                statuses.append(r.status_code)
                if r.status_code == 503:
                    retry_after.add(r.headers.get("retry-after"))

        async def killer() -> int:
            rng = random.Random(7)
            kills = 0
            while not stop.is_set():
                await asyncio.sleep(rng.uniform(0.02, 0.15))
                for pid in await _pids(admin, database_url):
                    kills += bool(await admin.fetchval("SELECT pg_terminate_backend($1)",
                                                       pid))
            return kills

        clients = [asyncio.create_task(client(n)) for n in range(4)]
        killing = asyncio.create_task(killer())
        await asyncio.sleep(12)
        stop.set()
        kills = await killing
        await asyncio.gather(*clients)
        assert kills > 20
        unexpected = [s for s in statuses if s not in (200, 201, 202, 503)]
        assert not unexpected, sorted(set(unexpected))
        assert statuses.count(503) > 0 and retry_after == {"5"}
        assert sum(s < 300 for s in statuses) > 20
        # afterwards (once the client has read the last cut connections' end): it works
        await asyncio.sleep(1.0)
        r = await http.post("/agents/agent0/facts/learn", json={"content": "after the storm"})
        assert r.status_code == 200, r.text


async def test_a_tool_call_while_the_database_is_cut_is_a_tool_error(
        store: MemoryStore, admin: asyncpg.Connection, database_url: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """An agent's tool call meets the outage: a tool error saying so (the agent may try
    again), no traceback in the log."""
    from nous_memory.tools import ToolBox

    box = ToolBox(store, agent_id="ana")
    locker = await asyncpg.connect(database_url)
    try:
        tx = locker.transaction()
        await tx.start()
        await locker.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        calling = asyncio.create_task(box.call("memory_search", {"query": "Porto", "k": 3}))
        await _kill_when(admin, database_url, waiting=True)
        result = await asyncio.wait_for(calling, 20)
        await tx.rollback()
    finally:
        await locker.close()
    assert result.is_error and "unavailable" in result.text
    assert result.data == {"error": {"type": "unavailable", "message": "database unavailable"}}
    assert not any(r.exc_info for r in caplog.records)


async def test_a_claim_cut_by_an_outage_leaves_nothing_running_under_a_live_worker(
        store: MemoryStore, admin: asyncpg.Connection, database_url: str) -> None:
    """A claim may commit and lose its reply with its connection: the item is then running
    under a worker that is alive (its presence lock held, so no other worker overtakes
    it) and that does not know it has the item.  After an outage, the worker's next claim
    puts back what it holds and is not working on."""
    episode = await store.start_episode("ana", title="harbour")
    await store.append("ana", episode.id, [{"role": "user", "content": "I moved to Porto."}])
    await store.close_episode("ana", episode.id)
    worker = store.worker()
    async with worker.presence():
        raw = await asyncpg.connect(database_url)
        try:
            # what the lost claim committed: the item running under this worker
            claimed = await raw.fetchval(
                "UPDATE work_items SET state = 'running', attempts = 1, locked_by = $1, "
                "lease_until = now() + interval '300 seconds' WHERE agent_id = 'ana' "
                "AND state = 'pending' RETURNING id", worker.worker_id)
            assert claimed is not None
            async with raw.transaction():
                await raw.execute("LOCK TABLE work_items IN SHARE MODE")
                running = asyncio.create_task(worker.run_once())
                await _kill_when(admin, database_url, like="%UPDATE work_items%",
                                 waiting=True)
                with pytest.raises(DatabaseUnavailableError):
                    await running
            assert await worker.run_once()  # the item put back, then claimed and run
            row = await raw.fetchrow("SELECT state, attempts FROM work_items WHERE id = $1",
                                     claimed)
        finally:
            await raw.close()
    assert row is not None and row["state"] == "done" and row["attempts"] == 1
