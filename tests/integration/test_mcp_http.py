"""``POST /mcp`` is answered ahead of FastAPI's stack: still observed (counted under its
route, a request id, the access line), still under the body limit, and an error before
the MCP SDK answers (a key lookup failing) still gets the REST API's answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import httpx
import pytest
from mcp_types import INVALID_REQUEST
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import ASGIApp, Receive, Scope, Send

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.api.body import MAX_BODY_BYTES
from nous_memory.errors import DatabaseUnavailableError

KEY = "mcp-http-suite-key-0123456789"
VERSION = "2026-07-28"
BASE = "http://127.0.0.1:8000"  # loopback: without keys /mcp checks the Host
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": VERSION}


def call_headers(name: str, **more: str) -> dict[str, str]:
    return {**HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": name, **more}


def tool_call(ident: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}


def requests_counted(text: str, route: str, status: str) -> float:
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples
               if s.name == "nous_memory_http_requests_total"
               and s.labels == {"method": "POST", "route": route, "status": status})


class Seen:
    """A middleware added after ``create_app``: it sees what FastAPI's stack sees."""

    paths: ClassVar[list[str]] = []

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            Seen.paths.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)


@asynccontextmanager
async def serving(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    """The app in-process, its lifespan (the MCP session manager) running."""
    app = create_app(store)
    app.add_middleware(Seen)
    Seen.paths = []
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
        yield client


async def test_a_tool_call_is_answered_ahead_of_the_stack_and_observed(
        store: MemoryStore) -> None:
    await store.remember("alice", "fact", content="Alice grows tomatoes")
    async with serving(store) as http:
        before = (await http.get("/metrics")).text
        answer = await http.post("/mcp", headers=call_headers("memory_search",
                                                              **{"X-Request-ID": "call-1"}),
                                 json=tool_call(7, "memory_search",
                                                {"agent_id": "alice", "query": "garden"}))
        after = (await http.get("/metrics")).text
        refused = await http.get("/mcp", headers=HEADERS)  # no session stream: full stack
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-request-id"] == "call-1"
    body = answer.json()
    assert body["id"] == 7 and "tomatoes" in body["result"]["content"][0]["text"]
    assert requests_counted(after, "/mcp", "200") - requests_counted(before, "/mcp", "200") == 1
    assert "POST /mcp" not in Seen.paths and "GET /metrics" in Seen.paths
    assert refused.status_code == 405 and "GET /mcp" in Seen.paths


async def test_the_body_limit_holds_on_the_short_way(store: MemoryStore) -> None:
    big = json.dumps(tool_call(8, "memory_search", {"agent_id": "alice",
                                                    "query": "x" * MAX_BODY_BYTES}))
    async with serving(store) as http:
        answer = await http.post("/mcp", content=big.encode(), headers=call_headers(
            "memory_search", **{"Content-Type": "application/json"}))
    assert answer.status_code == 413
    assert answer.json()["id"] == 8 and answer.json()["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize(("failure", "status", "detail"), [
    (DatabaseUnavailableError("connection refused"), 503,
     "database unavailable; try again later"),
    (RuntimeError("a bug"), 500, "internal server error")])
async def test_an_error_before_the_sdk_answers_is_the_rest_apis_answer(
        store: MemoryStore, monkeypatch: pytest.MonkeyPatch, failure: Exception,
        status: int, detail: str) -> None:
    """A key that is not the bootstrap one is looked up in the database, per request."""

    async def failing(digest: bytes) -> None:
        raise failure

    monkeypatch.setattr(store.keys, "lookup_digest", failing)
    store.settings = store.settings.with_changes(api_keys=KEY)
    async with serving(store) as client:
        answer = await client.post("/mcp", headers=call_headers(
            "memory_search", Authorization="Bearer some-runtime-key-0123456789"),
                                   json=tool_call(9, "memory_search", {"query": "x"}))
        assert answer.status_code == status and answer.json() == {"detail": detail}
        assert answer.headers.get("retry-after") == ("5" if status == 503 else None)
        assert answer.headers["x-request-id"]
        ok = await client.post("/mcp", headers=call_headers(
            "memory_search", Authorization=f"Bearer {KEY}"), json=tool_call(
            10, "memory_search", {"agent_id": "alice", "query": "x"}))
        assert ok.status_code == 200, ok.text  # the bootstrap key needs no lookup
