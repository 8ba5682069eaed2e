"""Fixtures shared by the REST tests."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.db import EmbeddedServer
from nous_memory.testing.pgcontrol import ServerControl
from tests.clusters import cluster_dir
from tests.integration.http_helpers import asgi_client


@pytest.fixture
async def client(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    """The REST app around the test's store, called in-process."""
    async with asgi_client(create_app(store)) as http:
        yield http


@pytest.fixture(params=["table", "agent"])
def sweeps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The jobs' two forms (maintenance/batches.py): every store the test opens after this
    fixture walks the tables in it, the per-agent (Citus) form included on this server.
    Put it before ``store`` in a test's arguments."""
    form = str(request.param)
    monkeypatch.setenv("NOUS_MEMORY_JOB_SWEEPS", form)
    return form


@pytest.fixture(scope="module")
def own_server() -> Iterator[tuple[EmbeddedServer, ServerControl, Path]]:
    """An embedded server of the module's own, to stop and start (outage tests)."""
    data_dir = cluster_dir("nous-outage-pg-")
    server = EmbeddedServer.acquire(data_dir)
    control = ServerControl(server.pgdata, server.dsn())
    try:
        yield server, control, data_dir
    finally:
        control.stop()
        server.release()
        shutil.rmtree(data_dir, ignore_errors=True)


