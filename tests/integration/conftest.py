"""Fixtures shared by the REST tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.api import create_app
from tests.integration.http_helpers import asgi_client


@pytest.fixture
async def client(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    """The REST app around the test's store, called in-process."""
    async with asgi_client(create_app(store)) as http:
        yield http
