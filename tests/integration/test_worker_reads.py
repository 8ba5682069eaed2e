"""Reads sent to the agent's Citus worker itself (db/worker_reads.py), checked on one
PostgreSQL standing in for the worker: it is reached by its own address, through a pool
of its own, as a worker named by the coordinator's catalog would be.  What Citus itself
does with such a call (its shards, a moved shard) is checked on a real cluster
(docs/scaling.md)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.db import worker_reads
from nous_memory.db.connector import _pool_opener
from nous_memory.db.distribution import DELEGATED_READS
from nous_memory.db.worker_reads import Node, WorkerReads

from .db_helpers import sql
from .test_context import _seed
from .test_delegated_reads import _named_reads, _reads

QUESTION = "where does Mia live?"


async def _this_server(store: MemoryStore) -> Node:
    host = dict(parse_qsl(urlsplit(store.dsn).query))["host"]
    return Node(host, int((await sql(store, "SHOW port"))[0]["port"]))


def _opener(opened: list[str]) -> Any:
    open_pool = _pool_opener()

    async def opener(dsn: str) -> asyncpg.Pool:
        opened.append(dsn)
        return await open_pool(dsn)
    return opener


async def _opened(reads: WorkerReads) -> None:
    """Until the pools being opened in the background are open (or failed)."""
    await asyncio.gather(*list(reads._opening.values()), return_exceptions=True)


async def test_reads_on_the_agents_node_give_what_the_statements_give(
        store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the node's pool is open (in the background: reads meanwhile go through the
    main pool), every read runs there, with the results the statements give, and each
    agent's node is looked up once."""
    await _seed(store)
    monkeypatch.setattr(store.access, "record", lambda agent, ids: None)
    statements = await _reads(store, delegated=False)
    node = await _this_server(store)
    located: list[str] = []

    async def locate(agent: str) -> Node:
        located.append(agent)
        return node

    calls = _named_reads(store, monkeypatch)
    reads = WorkerReads(store.dsn, locate, _opener([]))
    store._db.worker_reads = reads
    store._db.delegated = True
    try:
        await store.recall("a", QUESTION)  # through the main pool; the node's pool opens
        assert "recall_delegated" in calls
        await _opened(reads)
        calls.clear()
        store.recaller.forget_agent_figures()
        on_node = await _reads(store, delegated=True)
        assert (await store.health())["database"]["reads"] == "workers"
    finally:
        store._db.worker_reads = None
        await reads.close()
    assert on_node == statements
    assert not {f"{q}_delegated" for q in DELEGATED_READS} & set(calls)
    assert sorted(located) == ["a", "u"]


async def test_a_node_out_of_reach_is_left_alone_and_its_reads_answered(
        store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens where the catalog says the agent is: every read answers through
    the main pool, the node is tried once, and again only after its time out."""
    await store.learn_fact("a", "The user's sister Mia lives in Porto.")
    before = [i.text for i in (await store.recall("a", QUESTION)).items]
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    opened: list[str] = []

    async def locate(agent: str) -> Node:
        return Node("127.0.0.1", closed)

    calls = _named_reads(store, monkeypatch)
    clock = [1000.0]
    monkeypatch.setattr(worker_reads.time, "monotonic", lambda: clock[0])
    reads = WorkerReads(store.dsn, locate, _opener(opened))
    store._db.delegated, store._db.worker_reads = True, reads
    try:
        for _ in range(3):
            assert [i.text for i in (await store.recall("a", QUESTION)).items] == before
            await _opened(reads)
        assert len(opened) == 1 and opened[0].startswith(f"postgresql://postgres:@127.0.0.1:"
                                                         f"{closed}/")
        assert calls.count("recall_delegated") == 3
        clock[0] += worker_reads.DOWN_S + 1
        await store.recall("a", QUESTION)
        await _opened(reads)
        assert len(opened) == 2
    finally:
        store._db.worker_reads, store._db.delegated = None, False
        await reads.close()


async def test_a_node_refusing_the_login_leaves_its_reads_to_the_main_pool(
        store: MemoryStore) -> None:
    """A node that answers but will not let the store in (here: no such database) is
    as unusable as one out of reach: the reads answer, none fails."""
    await store.learn_fact("a", "The user's sister Mia lives in Porto.")
    before = [i.text for i in (await store.recall("a", QUESTION)).items]
    node = await _this_server(store)
    parts = urlsplit(store.dsn)
    elsewhere = parts._replace(path="/no_such_database").geturl()

    async def locate(agent: str) -> Node:
        return node

    reads = WorkerReads(elsewhere, locate, _opener([]))
    store._db.delegated, store._db.worker_reads = True, reads
    try:
        for _ in range(2):
            assert [i.text for i in (await store.recall("a", QUESTION)).items] == before
            await _opened(reads)
        assert reads._down_until and not reads._pools
    finally:
        store._db.worker_reads, store._db.delegated = None, False
        await reads.close()


async def test_an_error_of_the_statement_itself_is_raised_not_hidden(
        store: MemoryStore) -> None:
    """On a working connection, a failing statement is an error to report, not a node to
    route around: it is raised, and the node stays in use."""
    node = await _this_server(store)

    async def locate(agent: str) -> Node:
        return node

    reads = WorkerReads(store.dsn, locate, _opener([]))
    try:
        assert await reads.fetch("SELECT $1::text AS agent", "a") is None  # opening
        await _opened(reads)
        assert [r["agent"] for r in await reads.fetch("SELECT $1::text AS agent", "a")
                or []] == ["a"]
        with pytest.raises(asyncpg.DivisionByZeroError):
            await reads.fetch("SELECT 1 / 0 WHERE $1::text IS NOT NULL", "a")
        assert not reads._down_until
    finally:
        await reads.close()


async def test_with_every_connection_busy_a_read_goes_through_the_coordinator(
        store: MemoryStore) -> None:
    """A read does not queue behind the node's busy connections: it is answered through
    the main pool, and the node stays in use."""
    node = await _this_server(store)

    async def locate(agent: str) -> Node:
        return node

    reads = WorkerReads(store.dsn, locate, _opener([]))
    try:
        await reads.fetch("SELECT $1::text AS agent", "a")
        await _opened(reads)
        pool = reads._pools[node]
        held = [await pool.acquire() for _ in range(worker_reads.POOL_SIZE)]
        assert await reads.fetch("SELECT $1::text AS agent", "a") is None
        for conn in held:
            await pool.release(conn)
        assert await reads.fetch("SELECT $1::text AS agent", "a") is not None
        assert not reads._down_until
    finally:
        await reads.close()


async def test_a_nodes_connections_hold_every_read_prepared_before_their_first_request(
        store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read function prepares its statement once per session (and, on Citus, per shard
    group): the node's connections do it as they open, recall's statement planned, so a
    request finds them ready and adds none."""
    await _seed(store)
    monkeypatch.setattr(store.access, "record", lambda agent, ids: None)
    node = await _this_server(store)

    async def locate(agent: str) -> Node:
        return node

    calls = _named_reads(store, monkeypatch)
    reads = WorkerReads(store.dsn, locate, _opener([]))
    store._db.worker_reads = reads
    store._db.delegated = True
    prepared = ("SELECT name, generic_plans FROM pg_prepared_statements "
                "WHERE name LIKE 'nous\\_%' ORDER BY name")
    try:
        await store.recall("a", QUESTION)  # through the main pool; the node's pool opens
        await _opened(reads)
        pool = reads._pools[node]
        held = [await pool.acquire() for _ in range(worker_reads.POOL_SIZE)]
        before = [[tuple(r) for r in await conn.fetch(prepared)] for conn in held]
        for conn in held:
            await pool.release(conn)
        for statements in before:
            names = [name for name, _ in statements]
            assert sorted(n.split("_local_")[0] for n in names) == sorted(
                f"nous_{q}" for q in DELEGATED_READS)
            assert dict(statements)[next(n for n in names if n.startswith(
                "nous_recall_local_"))] == 1  # planned (generic, as the function asks)
        for _ in range(worker_reads.POOL_SIZE):  # each connection serves requests in turn
            others = [await pool.acquire() for _ in range(worker_reads.POOL_SIZE - 1)]
            try:
                calls.clear()
                await store.recall("a", QUESTION)  # its reads one after another
                assert not {f"{q}_delegated" for q in DELEGATED_READS} & set(calls)
                # (two reads at once: one may find no free connection and go through
                # the main pool)
                await store.assemble_context("a", QUESTION)
            finally:
                for conn in others:
                    await pool.release(conn)
        held = [await pool.acquire() for _ in range(worker_reads.POOL_SIZE)]
        after = [[name for name, _ in await conn.fetch(prepared)] for conn in held]
        for conn in held:
            await pool.release(conn)
        assert after == [[name for name, _ in statements] for statements in before]
    finally:
        store._db.worker_reads = None
        await reads.close()
