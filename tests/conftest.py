"""Shared fixtures: one embedded PostgreSQL per session, a template database with the
schema applied once, and a fresh clone of it for every test that touches SQL."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from nous_memory import Embedder, MemoryStore, OnnxEmbedder
from nous_memory.config import default_model_cache_dir
from nous_memory.db import QUERIES, Connection, EmbeddedServer, migrate
from nous_memory.embeddings import BUNDLED_MODEL_NAME
from nous_memory.testing import ScriptedLLMServer
from tests.clusters import cluster_dir
from tests.speed import mark_slow

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEMPLATE_DB = "nous_template"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_slow(items)  # the slow tier, listed with reasons in tests/speed.py
_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedServer]:
    # not under pytest's basetemp: concurrent pytest runs rotate (delete) old basetemps;
    # in RAM where there is room (tests/clusters.py says why)
    data_dir = cluster_dir("nous-test-pg-")
    server = EmbeddedServer.acquire(data_dir)
    yield server
    server.release()
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
async def template_db(pg_server: EmbeddedServer) -> str:
    admin = await asyncpg.connect(pg_server.dsn("postgres"))
    try:
        # This throwaway cluster need not survive a crash of the machine: without fsync,
        # the checkpoint each clone (STRATEGY FILE_COPY) forces costs a fraction of a
        # second instead of 1-1.5 s on a busy disk, every test with a database. A killed
        # server still recovers (its WAL is in the page cache), so kill tests are unchanged.
        await admin.execute("ALTER SYSTEM SET fsync = off")
        await admin.execute("SELECT pg_reload_conf()")
        await admin.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}"')
        await admin.execute(f'CREATE DATABASE "{TEMPLATE_DB}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(pg_server.dsn(TEMPLATE_DB))
    try:
        await migrate(Connection(conn, QUERIES), embedding_dim=384,
                      embedding_model=BUNDLED_MODEL_NAME)
    finally:
        await conn.close()
    return TEMPLATE_DB


async def create_database(server: EmbeddedServer, template: str | None) -> str:
    """A new empty (template=None) or cloned database; returns its DSN."""
    name = f"t{os.getpid()}_{next(_counter)}"
    admin = await asyncpg.connect(server.dsn("postgres"))
    try:
        clause = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
        await admin.execute(f'CREATE DATABASE "{name}"{clause}')
    finally:
        await admin.close()
    return server.dsn(name)


async def drop_database(server: EmbeddedServer, dsn: str) -> None:
    # the path, not the tail after the last "/": that is in the socket directory of
    # ?host=..., which named no database, so no clone was dropped and a run left a
    # thousand databases (about 10 GB) behind for the teardown to delete
    name = urlsplit(dsn).path.lstrip("/")
    admin = await asyncpg.connect(server.dsn("postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def database_url(pg_server: EmbeddedServer, template_db: str) -> AsyncIterator[str]:
    """A fresh database with the current schema, dropped after the test."""
    dsn = await create_database(pg_server, template_db)
    yield dsn
    await drop_database(pg_server, dsn)


@pytest.fixture
async def empty_database_url(pg_server: EmbeddedServer) -> AsyncIterator[str]:
    """A fresh database with nothing in it (for migration tests)."""
    dsn = await create_database(pg_server, None)
    yield dsn
    await drop_database(pg_server, dsn)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real bundled all-MiniLM-L6-v2 on the default backend (ONNX Runtime), loaded
    once per session (exported first if this machine has no export yet)."""
    model = OnnxEmbedder(cache_dir=default_model_cache_dir())
    model.warm_up()
    return model


@pytest.fixture
async def store(database_url: str,
                embedder: Embedder) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                data_dir=Path("/nonexistent-unused")) as opened:
        yield opened


@pytest.fixture
async def llm_server() -> AsyncIterator[ScriptedLLMServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (the real openai client talks to it)."""
    async with ScriptedLLMServer() as server:
        yield server


LLMStoreFactory = Callable[..., AbstractAsyncContextManager[MemoryStore]]


@pytest.fixture
def open_llm_store(database_url: str, embedder: Embedder,
                   llm_server: ScriptedLLMServer) -> LLMStoreFactory:
    """``async with open_llm_store(**settings) as store``: LLM = the scripted server."""

    def factory(**overrides: Any) -> AbstractAsyncContextManager[MemoryStore]:
        settings: dict[str, Any] = {"llm_max_attempts": 2, "episode_chunk_tokens": 30}
        return MemoryStore.open(database_url=database_url, embedder=embedder,
                                llm_base_url=llm_server.base_url, llm_model="scripted",
                                **(settings | overrides))

    return factory


@pytest.fixture
async def llm_store(open_llm_store: LLMStoreFactory) -> AsyncIterator[MemoryStore]:
    """A store whose LLM is the scripted server (two attempts per call, small chunks)."""
    async with open_llm_store() as opened:
        yield opened
