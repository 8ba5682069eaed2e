"""The context and expand routes of the REST service, and the CLI commands, against a real
database and the real model."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.cli.main import EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, main
from nous_memory.tokens import count_tokens
from tests.integration.http_helpers import fields_of, post_body

A, B = "agent-a", "agent-b"


async def _seed(store: MemoryStore) -> str:
    fact = await store.remember(A, "fact", content="The staging cluster runs PostgreSQL 16")
    await store.remember(A, "decision", description="Upgrade staging before production",
                         outcome="pending")
    await store.remember(B, "fact", content="Agent b's staging cluster secret")
    return str(fact.id)


async def test_context_route(client: httpx.AsyncClient, store: MemoryStore) -> None:
    fact_id = await _seed(store)
    response = await client.post(f"/agents/{A}/context", json={
        "query": "What runs on staging?", "budget_tokens": 300,
        "sections": {"facts": 200, "decisions": 100}, "extraction": "off"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert count_tokens(body["text"]) == body["tokens_used"] <= 300
    assert f"[fact:{fact_id[:8]}]" in body["text"] and "secret" not in body["text"]
    assert {i["section"] for i in body["items"]} <= {"facts", "decisions"}
    assert set(body["timings"]) == {"embed_ms", "candidates_ms", "extraction_ms",
                                    "assemble_ms", "total_ms"}


@pytest.mark.parametrize(("body", "fields"), [
    ({}, ["query"]),
    ({"query": ""}, ["query"]),
    ({"query": "x", "budget_tokens": 5}, ["budget_tokens"]),
    ({"query": "x", "sections": ["facts", "gossip"]}, ["sections.gossip"]),
    ({"query": "x", "extraction": "maybe"}, ["extraction"]),
    ({"query": "x", "k": 5}, ["k"]),
    (b"{not json", None),
])
async def test_context_bad_input_is_422(client: httpx.AsyncClient, body: object,
                                        fields: list[str] | None) -> None:
    response = await post_body(client, f"/agents/{A}/context", body)
    assert response.status_code == 422
    if fields is not None:
        assert fields_of(response) == fields


async def test_expand_route(client: httpx.AsyncClient, store: MemoryStore) -> None:
    fact_id = await _seed(store)
    for target in (fact_id, f"fact:{fact_id[:8]}"):
        response = await client.get(f"/agents/{A}/memories/{target}/expand")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["memory"]["id"] == fact_id and body["ref"] == f"fact:{fact_id[:8]}"
        assert [e["event"] for e in body["events"]] == ["created"]
    assert (await client.get(f"/agents/{B}/memories/{fact_id}/expand")).status_code == 404
    bad = await client.get(f"/agents/{A}/memories/nonsense/expand")
    assert bad.status_code == 422 and fields_of(bad) == ["memory_id"]


async def test_openapi_documents_the_routes(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert "/agents/{agent_id}/context" in schema["paths"]
    assert "/agents/{agent_id}/memories/{memory_id}/expand" in schema["paths"]
    assert "ContextRequest" in schema["components"]["schemas"]


def _cli(database_url: str, *args: str) -> list[str]:
    return ["--database-url", database_url, *args]


async def test_cli_context_and_expand(store: MemoryStore, database_url: str,
                                      capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    fact_id = await _seed(store)
    # the CLI runs its own event loop: call it from a worker thread of this one
    import asyncio

    async def run(*args: str) -> int:
        return await asyncio.to_thread(main, _cli(database_url, *args))

    assert await run("context", "--agent", A, "what runs on staging?", "--budget", "200",
                     "--section", "facts") == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith('<nous-memory kind="context">') and f"[fact:{fact_id[:8]}]" in out
    assert "tokens " in out.splitlines()[-1]
    assert await run("--json", "context", "--agent", A, "staging", "--section",
                     "facts=100", "--extraction", "off") == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["budget_tokens"] == 4000 and data["items"]
    assert await run("expand", "--agent", A, f"fact:{fact_id[:8]}") == EXIT_OK
    out = capsys.readouterr().out
    assert fact_id in out and "content: The staging cluster runs PostgreSQL 16" in out
    assert await run("expand", "--agent", B, fact_id) == EXIT_NOT_FOUND
    assert await run("context", "--agent", A, "x", "--budget", "3") == EXIT_USAGE
    assert "budget_tokens" in capsys.readouterr().err
