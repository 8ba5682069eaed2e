"""Export, import and forgetting an agent over REST: streamed JSON Lines out, a streamed
body in (bounded, never buffered whole), errors naming the line, and the API keys'
agent scoping."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.api import create_app
from tests.integration.http_helpers import asgi_client, fields_of
from tests.integration.portability_helpers import chunks_of, table_counts

KEY, SCOPED = "portability-admin-key", "portability-alice-key"


async def fill(store: MemoryStore, agent: str) -> None:
    await store.remember_many(agent, [
        {"kind": "fact", "content": "Tim prefers Celsius"},
        {"kind": "decision", "description": "Chose Postgres"}])
    episode = await store.start_episode(agent, title="chat")
    await store.append(agent, episode.id, [{"role": "user", "content": "Hello there"}])


@pytest.fixture
async def small_limit_client(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(store, settings=store.settings.with_changes(api_import_max_bytes=3_000))
    async with asgi_client(app) as http:
        yield http


async def test_export_import_and_forget(client: httpx.AsyncClient, store: MemoryStore) -> None:
    await fill(store, "alice")
    exported = await client.get("/agents/alice/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-ndjson"
    assert 'filename="nous-memory-alice.jsonl"' in exported.headers["content-disposition"]
    lines = exported.content.splitlines()
    assert json.loads(lines[0])["nous_memory_export"]["agent_id"] == "alice"
    assert json.loads(lines[-1])["end"]["rows"] == len(lines) - 2

    imported = await client.post("/agents/bob/import", content=chunks_of(exported.content, 500),
                                 headers={"content-type": "application/x-ndjson"})
    assert imported.status_code == 200, imported.text
    body = imported.json()
    assert body["agent_id"] == "bob" and body["source_agent_id"] == "alice"
    assert body["inserted"]["memories"] == 3 and body["inserted"]["episode_messages"] == 1
    again = await client.post("/agents/bob/import", content=exported.content)
    assert again.status_code == 200 and not any(again.json()["inserted"].values())

    changed = exported.content.replace(b'"Tim prefers Celsius"', b'"Tim prefers Kelvin"')
    refused = await client.post("/agents/carol/import", content=changed)
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["field"] == f"line {len(lines)}"
    assert "checksum" in refused.json()["detail"][0]["reason"]
    bad_line = lines[1].replace(b'"importance":0.5', b'"importance":"high"')
    bad = await client.post("/agents/carol/import",
                            content=b"\n".join([lines[0], bad_line, *lines[2:]]) + b"\n")
    assert bad.status_code == 422
    assert fields_of(bad) == ["line 2 (memories.importance)"]
    assert await store.counts("carol") == {}

    await store.update("bob", (await store.list("bob", kind="fact")).items[0].id,
                       content="Tim now prefers Fahrenheit")
    conflict = await client.post("/agents/bob/import", content=exported.content)
    assert conflict.status_code == 409 and "memories" in conflict.json()["detail"]

    forgotten = await client.delete("/agents/alice")
    assert forgotten.status_code == 200
    receipt = forgotten.json()
    assert receipt["agent_id"] == "alice" and receipt["actor"] == "api"
    assert receipt["counts"]["memories"] == 3 and receipt["total_rows"] > 3
    assert (await client.delete("/agents/alice")).status_code == 404
    assert (await client.get("/agents/alice/export")).status_code == 404
    assert (await client.get("/agents/bob/memories")).json()["items"]  # bob untouched


async def test_import_body_is_bounded_while_it_streams(
        small_limit_client: httpx.AsyncClient, store: MemoryStore) -> None:
    await fill(store, "alice")
    exported = (await small_limit_client.get("/agents/alice/export")).content
    assert len(exported) > 3_000
    before = await table_counts(store.dsn)
    declared = await small_limit_client.post("/agents/bob/import", content=exported)
    assert declared.status_code == 413  # the declared length, refused before reading
    streamed = await small_limit_client.post("/agents/bob/import",
                                             content=chunks_of(exported, 1_000))
    assert streamed.status_code == 413  # no length declared: counted while read
    assert fields_of(streamed) == ["body"] and "3000" in streamed.json()["detail"][0]["reason"]
    assert await table_counts(store.dsn) == before


async def test_keys_scope_export_import_and_forget(store: MemoryStore) -> None:
    await fill(store, "alice")
    await fill(store, "carol")
    keys = f"{KEY},{SCOPED}:alice"
    app = create_app(store, settings=store.settings.with_changes(api_keys=keys))
    async with asgi_client(app) as http:
        assert (await http.get("/agents/alice/export")).status_code == 401
        mine = {"X-API-Key": SCOPED}
        data = (await http.get("/agents/alice/export", headers=mine)).content
        assert (await http.get("/agents/carol/export", headers=mine)).status_code == 403
        assert (await http.post("/agents/carol/import", content=data,
                                headers=mine)).status_code == 403
        assert (await http.delete("/agents/carol", headers=mine)).status_code == 403
        assert await store.counts("carol")
        assert (await http.delete("/agents/alice", headers=mine)).status_code == 200
        restored = await http.post("/agents/alice/import", content=data, headers=mine)
        assert restored.status_code == 200 and restored.json()["inserted"]["memories"] == 3
