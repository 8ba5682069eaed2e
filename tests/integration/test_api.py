"""The REST service against a real database and the real embedding model."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nous_memory import (
    ConfigurationError,
    ConflictError,
    DatabaseError,
    Embedder,
    MemoryStore,
    Settings,
)
from nous_memory.api import MAX_BODY_BYTES, create_app
from nous_memory.memories.kinds import MAX_TEXT_CHARS
from tests.integration.http_helpers import fields_of, post_body

A = "agent-a"
B = "agent-b"

DECISION = {"kind": "decision", "description": "Chose Postgres + pgvector for unified storage",
            "outcome": "success", "confidence": 0.85, "pattern": "Unify to reduce surface area",
            "reasons": ["one backup", "one query language"], "importance": 0.8,
            "tags": ["architecture"]}
DECISION_SUMMARY = ("Chose Postgres + pgvector for unified storage [success] [85% confidence] "
                    "— Pattern: Unify to reduce surface area")

KINDS: list[tuple[dict[str, Any], str, str]] = [
    (DECISION, DECISION_SUMMARY, "template"),
    ({"kind": "fact", "content": "The staging cluster runs PostgreSQL 16", "subject": "staging",
      "confidence": 0.9, "tags": ["infra"]},
     "The staging cluster runs PostgreSQL 16", "template"),
    ({"kind": "episode", "title": "Migrated the billing service",
      "detail": "Moved billing to the new cluster. Two retries were needed.",
      "outcome": "Done with no downtime", "participants": ["ops"]},
     "Migrated the billing service. Moved billing to the new cluster. Two retries were needed. "
     "Outcome: Done with no downtime", "rule"),
    ({"kind": "procedure", "name": "Deploy a hotfix",
      "core_patterns": ["branch from the release tag", "run the smoke tests"],
      "activation_count": 6, "success_count": 5, "effectiveness": 0.9},
     "Deploy a hotfix: branch from the release tag; run the smoke tests [90% effective]",
     "template"),
    ({"kind": "censor", "trigger_pattern": "rm -rf /", "action": "block",
      "reason": "Destroys the host"},
     "BLOCK: rm -rf / — Destroys the host", "template"),
]


def memories_url(agent: str = A, *parts: str) -> str:
    return "/".join([f"/agents/{agent}/memories", *parts])


async def create(client: httpx.AsyncClient, body: dict[str, Any], agent: str = A,
                 **kwargs: Any) -> dict[str, Any]:
    response = await client.post(memories_url(agent), json=body, **kwargs)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


# ---------------------------------------------------------------------- create and read


@pytest.mark.parametrize(("body", "summary", "source"), KINDS,
                         ids=[str(body["kind"]) for body, _, _ in KINDS])
async def test_create_each_kind_and_read_back(client: httpx.AsyncClient, store: MemoryStore,
                                              body: dict[str, Any], summary: str,
                                              source: str) -> None:
    created = await create(client, body)
    assert created["kind"] == body["kind"]
    assert created["agent_id"] == A
    assert created["status"] == "active"
    assert created["version"] == 1
    assert created["summary"] == summary
    assert created["summary_source"] == source
    assert created["tags"] == body.get("tags", [])
    assert created["importance"] == body.get("importance", 0.5)
    detail_in = {k: v for k, v in body.items() if k not in ("importance", "tags")}
    assert {k: created["detail"][k] for k in detail_in} == detail_in

    read = await client.get(memories_url(A, created["id"]))
    assert read.status_code == 200
    assert read.json() == created
    stored = await store.get(A, created["id"])
    assert stored.summary == summary
    assert stored.detail.kind == body["kind"]


async def test_batch_create_is_all_or_nothing(client: httpx.AsyncClient,
                                              store: MemoryStore) -> None:
    items = [body for body, _, _ in KINDS[:3]]
    response = await client.post(memories_url(A, "batch"), json={"items": items})
    assert response.status_code == 201, response.text
    created = response.json()["items"]
    assert [m["kind"] for m in created] == ["decision", "fact", "episode"]
    assert [m["summary"] for m in created] == [s for _, s, _ in KINDS[:3]]
    assert len({m["id"] for m in created}) == 3

    bad = [KINDS[3][0], {**KINDS[1][0], "confidence": 1.5}, {"content": "no kind"}]
    response = await client.post(memories_url(A, "batch"), json={"items": bad})
    assert response.status_code == 422
    assert fields_of(response) == ["items[1].confidence", "items[2].kind"]
    response = await client.post(memories_url(A, "batch"), json={"items": [], "extra": 1})
    assert response.status_code == 422
    assert fields_of(response) == ["extra"]
    response = await client.post(memories_url(A, "batch"), json={"items": "nope"})
    assert fields_of(response) == ["items"]
    assert await store.counts(A) == {"decision": {"active": 1}, "fact": {"active": 1},
                                     "episode": {"active": 1}}


# ---------------------------------------------------------------------- list


async def test_list_pages_with_cursor_and_filters(client: httpx.AsyncClient,
                                                  store: MemoryStore) -> None:
    facts = await store.remember_many(
        A, [{"kind": "fact", "content": f"Fact number {i}"} for i in range(5)])
    decisions = [await store.remember(A, "decision", description=f"Decision {i}")
                 for i in range(2)]
    everything = sorted(facts + decisions, key=lambda m: (m.created_at, m.id), reverse=True)

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        response = await client.get(memories_url(A), params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["items"]) <= 2
        seen += [m["id"] for m in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 4
    assert seen == [str(m.id) for m in everything]

    response = await client.get(memories_url(A), params={"kind": "decision"})
    page = response.json()
    assert {m["id"] for m in page["items"]} == {str(m.id) for m in decisions}
    assert page["next_cursor"] is None

    await store.delete(A, facts[0].id)
    default = (await client.get(memories_url(A), params={"limit": 50})).json()
    assert str(facts[0].id) not in {m["id"] for m in default["items"]}
    assert len(default["items"]) == 6
    deleted = await client.get(memories_url(A), params=[("status", "deleted")])
    assert [m["id"] for m in deleted.json()["items"]] == [str(facts[0].id)]
    both = await client.get(memories_url(A), params=[("status", "deleted"), ("status", "active")])
    assert len(both.json()["items"]) == 7
    # both bounds are exclusive
    later = await client.get(memories_url(A), params={
        "created_after": decisions[0].created_at.isoformat()})
    assert [m["id"] for m in later.json()["items"]] == [str(decisions[1].id)]
    earlier = await client.get(memories_url(A), params={
        "created_before": decisions[0].created_at.isoformat()})
    assert {m["id"] for m in earlier.json()["items"]} == {str(m.id) for m in facts[1:]}


# ---------------------------------------------------------------------- update, delete


async def test_patch_recomputes_summary_and_records_history(client: httpx.AsyncClient) -> None:
    created = await create(client, DECISION)
    url = memories_url(A, created["id"])
    response = await client.patch(url, json={"outcome": "failure", "confidence": 0.4})
    assert response.status_code == 200, response.text
    updated = response.json()
    new_summary = ("Chose Postgres + pgvector for unified storage [failure] [40% confidence] "
                   "— Pattern: Unify to reduce surface area")
    assert updated["summary"] == new_summary
    assert updated["version"] == 2
    assert updated["detail"]["outcome"] == "failure"
    assert updated["detail"]["reasons"] == DECISION["reasons"]
    assert (await client.get(url)).json()["summary"] == new_summary

    history = (await client.get(url + "/history")).json()
    assert [e["event"] for e in history] == ["created", "updated"]
    assert history[1]["old_values"] == {"outcome": "success", "confidence": 0.85,
                                        "summary": DECISION_SUMMARY}
    assert history[1]["new_values"] == {"outcome": "failure", "confidence": 0.4,
                                        "summary": new_summary}
    assert all(e["memory_id"] == created["id"] for e in history)


async def test_soft_delete_then_purge(client: httpx.AsyncClient, store: MemoryStore) -> None:
    created = await create(client, KINDS[1][0])
    url = memories_url(A, created["id"])
    response = await client.delete(url)
    assert response.status_code == 204
    assert response.content == b""
    missing = await client.get(url)
    assert missing.status_code == 404
    assert created["id"] in missing.json()["detail"]
    shown = await client.get(url, params={"include_deleted": "true"})
    assert shown.status_code == 200
    assert shown.json()["status"] == "deleted"
    assert shown.json()["deleted_at"] is not None
    assert (await client.delete(url)).status_code == 404  # already deleted
    events = (await client.get(url + "/history")).json()
    assert [e["event"] for e in events] == ["created", "deleted"]

    assert (await client.delete(url, params={"purge": "true"})).status_code == 204
    assert (await client.get(url, params={"include_deleted": "true"})).status_code == 404
    events = (await client.get(url + "/history")).json()
    assert [e["event"] for e in events] == ["created", "deleted", "purged"]
    assert events[0]["new_values"] is None  # the content is gone from the trail too
    assert await store.counts(A) == {}
    assert (await client.delete(url, params={"purge": "true"})).status_code == 404


# ---------------------------------------------------------------------- tenant isolation


async def test_other_agents_ids_are_not_found(client: httpx.AsyncClient,
                                              store: MemoryStore) -> None:
    created = await create(client, DECISION)
    ident = created["id"]
    unknown = str(uuid.uuid4())
    for memory_id in (ident, unknown):
        url = memories_url(B, memory_id)
        calls = [
            client.get(url),
            client.get(url, params={"include_deleted": "true"}),
            client.patch(url, json={"outcome": "failure"}),
            client.delete(url),
            client.delete(url, params={"purge": "true"}),
            client.get(url + "/history"),
        ]
        for call in calls:
            response = await call
            assert response.status_code == 404
            assert response.json() == {"detail": f"memory {memory_id} not found"}
            assert "Postgres" not in response.text

    assert (await client.get(memories_url(B))).json() == {"items": [], "next_cursor": None}
    assert (await client.get(memories_url(A, ident))).json() == created
    history = (await client.get(memories_url(A, ident, "history"))).json()
    assert [e["event"] for e in history] == ["created"]
    assert await store.counts(B) == {}


# ---------------------------------------------------------------------- invalid input

FACT = {"kind": "fact", "content": "A valid fact"}

BAD_CREATES: list[tuple[str, Any, list[str]]] = [
    ("confidence", {**DECISION, "confidence": 1.5}, ["confidence"]),
    ("unknown kind", {"kind": "opinion", "content": "x"}, ["kind"]),
    ("unknown outcome", {**DECISION, "outcome": "maybe"}, ["outcome"]),
    ("empty content", {"kind": "fact", "content": ""}, ["content"]),
    ("blank content", {"kind": "fact", "content": "   "}, ["content"]),
    ("over-limit text", {"kind": "fact", "content": "x" * (MAX_TEXT_CHARS + 1)}, ["content"]),
    ("NUL byte", {"kind": "fact", "content": "bad\x00byte"}, ["content"]),
    ("unknown field", {**FACT, "colour": "red"}, ["colour"]),
    ("store keyword", {**FACT, "agent_id": B}, ["agent_id"]),
    ("missing kind", {"content": "x"}, ["kind"]),
    ("summary on a fact", {**FACT, "summary": "mine"}, ["summary"]),
    ("several", {"kind": "fact", "content": "", "importance": 2}, ["importance", "content"]),
    ("not JSON", b"{not json", ["body"]),
    ("empty body", b"", ["body"]),
    ("array body", [FACT], ["body"]),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, ["body"]),
]


@pytest.mark.parametrize(("body", "fields"), [(b, f) for _, b, f in BAD_CREATES],
                         ids=[name for name, _, _ in BAD_CREATES])
async def test_invalid_create_is_422_and_stores_nothing(
        client: httpx.AsyncClient, store: MemoryStore, body: Any, fields: list[str]) -> None:
    response = await post_body(client, memories_url(A), body)
    assert response.status_code == 422, response.text
    assert fields_of(response) == fields
    assert await store.counts(A) == {}
    assert await store.counts(B) == {}


async def test_over_limit_text_names_the_limit(client: httpx.AsyncClient) -> None:
    response = await client.post(memories_url(A), json={
        "kind": "fact", "content": "x" * (MAX_TEXT_CHARS + 1)})
    assert response.status_code == 422
    [problem] = response.json()["detail"]
    assert str(MAX_TEXT_CHARS) in problem["reason"]


BAD_CHANGES: list[tuple[str, Any, list[str]]] = [
    ("confidence", {"confidence": 1.5}, ["confidence"]),
    ("kind", {"kind": "fact"}, ["kind"]),
    ("unknown field", {"colour": "red"}, ["colour"]),
    ("actor keyword", {"actor": "mallory", "outcome": "failure"}, ["actor"]),
    ("memory_id keyword", {"memory_id": str(uuid.uuid4())}, ["memory_id"]),
    ("nothing", {}, ["changes"]),
    ("NUL byte", {"pattern": "a\x00b"}, ["pattern"]),
    ("not an object", [1], ["body"]),
]


@pytest.mark.parametrize(("changes", "fields"), [(c, f) for _, c, f in BAD_CHANGES],
                         ids=[name for name, _, _ in BAD_CHANGES])
async def test_invalid_patch_is_422_and_changes_nothing(
        client: httpx.AsyncClient, changes: Any, fields: list[str]) -> None:
    created = await create(client, DECISION)
    url = memories_url(A, created["id"])
    response = await client.patch(url, json=changes)
    assert response.status_code == 422, response.text
    assert fields_of(response) == fields
    assert (await client.get(url)).json() == created
    assert [e["event"] for e in (await client.get(url + "/history")).json()] == ["created"]


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE", "HISTORY"])
async def test_malformed_memory_id_is_422(client: httpx.AsyncClient, store: MemoryStore,
                                          method: str) -> None:
    created = await create(client, FACT)
    url = memories_url(A, "not-a-uuid")
    if method == "HISTORY":
        response = await client.get(url + "/history")
    elif method == "PATCH":
        response = await client.patch(url, json={"content": "changed"})
    else:
        response = await client.request(method, url)
    assert response.status_code == 422
    assert fields_of(response) == ["memory_id"]
    assert (await store.get(A, created["id"])).version == 1


@pytest.mark.parametrize(("params", "field"), [
    ({"limit": 0}, "limit"),
    ({"limit": 501}, "limit"),
    ({"limit": "ten"}, "limit"),
    ({"kind": "opinion"}, "kind"),
    ({"status": "gone"}, "status[0]"),
    ({"created_after": "yesterday"}, "created_after"),
    ({"cursor": "garbage!"}, "cursor"),
])
async def test_bad_list_parameters_are_422(client: httpx.AsyncClient, params: dict[str, Any],
                                           field: str) -> None:
    response = await client.get(memories_url(A), params=params)
    assert response.status_code == 422
    assert fields_of(response) == [field]


async def test_bad_agent_id_is_422(client: httpx.AsyncClient, store: MemoryStore) -> None:
    response = await client.post(memories_url("x" * 129), json=FACT)
    assert response.status_code == 422
    assert fields_of(response) == ["agent_id"]
    response = await client.get(memories_url("a%07b"))
    assert fields_of(response) == ["agent_id"]


async def test_oversize_body_is_413_before_parsing(client: httpx.AsyncClient,
                                                   store: MemoryStore) -> None:
    huge = json.dumps({"kind": "fact", "content": "x" * MAX_BODY_BYTES}).encode()
    response = await client.post(memories_url(A), content=huge,
                                 headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert fields_of(response) == ["body"]
    assert str(MAX_BODY_BYTES) in response.json()["detail"][0]["reason"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for start in range(0, len(huge), 1 << 20):
            yield huge[start:start + (1 << 20)]

    response = await client.post(memories_url(A), content=chunks())
    assert response.status_code == 413
    response = await client.patch(memories_url(A, str(uuid.uuid4())), content=huge)
    assert response.status_code == 413
    # just under the limit is parsed, and then rejected by the store for the text limit
    under = json.dumps({"kind": "fact", "content": "x" * (MAX_BODY_BYTES - 100)}).encode()
    response = await client.post(memories_url(A), content=under)
    assert response.status_code == 422
    assert fields_of(response) == ["content"]
    assert await store.counts(A) == {}


# ---------------------------------------------------------------------- server errors


async def test_server_errors_do_not_leak(client: httpx.AsyncClient, store: MemoryStore,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("syntax error near SELECT secret FROM postgres://u:pw@db")

    async def conflicted(*args: Any, **kwargs: Any) -> Any:
        raise ConflictError("memory kept changing; update not applied")

    monkeypatch.setattr(store, "list", broken)
    monkeypatch.setattr(store, "update", conflicted)
    response = await client.get(memories_url(A))
    assert response.status_code == 500
    assert response.json() == {"detail": "internal server error"}
    response = await client.patch(memories_url(A, str(uuid.uuid4())), json={"content": "x"})
    assert response.status_code == 409
    assert "kept changing" in response.json()["detail"]


async def test_database_down_is_503(store: MemoryStore, database_url: str,
                                    embedder: Embedder) -> None:
    closed = await MemoryStore.connect(database_url=database_url, embedder=embedder,
                                       data_dir=Path("/nonexistent-unused"))
    await closed.close()
    transport = httpx.ASGITransport(app=create_app(closed))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        health = await http.get("/health")
        assert health.status_code == 503
        assert health.json() == {"status": "unavailable", "detail": "cannot reach the database"}
        response = await http.post(memories_url(A), json=FACT)
        assert response.status_code == 503
        assert response.headers["retry-after"]
        assert "database unavailable" in response.json()["detail"]
        assert database_url not in response.text
    assert await store.counts(A) == {}


# ---------------------------------------------------------------------- health and docs


async def test_health(client: httpx.AsyncClient, store: MemoryStore) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    assert body["database"]["schema_version"] == store.schema.version
    assert body["database"]["pgvector_version"]
    assert body["database"]["server_version"]
    assert body["embedding"] == {"model": store.embedder.model_name, "dimension": 384}


async def test_openapi_documents_paths_and_bodies(client: httpx.AsyncClient) -> None:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    assert spec["info"]["title"] == "nous-memory"
    assert "422" in spec["info"]["description"]
    paths = spec["paths"]
    assert set(paths) == {"/health", "/ready", "/metrics", "/keys", "/keys/{name}",
                          "/keys/{name}/rotate", "/agents/{agent_id}/memories",
                          "/agents/{agent_id}/memories/batch",
                          "/agents/{agent_id}/memories/{memory_id}",
                          "/agents/{agent_id}/memories/{memory_id}/history",
                          "/agents/{agent_id}/memories/{memory_id}/restore",
                          "/agents/{agent_id}/facts/learn",
                          "/agents/{agent_id}/facts/{fact_id}/history",
                          "/agents/{agent_id}/episodes/{episode_id}/facts",
                          "/agents/{agent_id}/episodes",
                          "/agents/{agent_id}/episodes/{episode_id}",
                          "/agents/{agent_id}/episodes/{episode_id}/messages",
                          "/agents/{agent_id}/episodes/{episode_id}/close",
                          # working memory
                          "/agents/{agent_id}/episodes/{episode_id}/prompt",
                          "/agents/{agent_id}/episodes/{episode_id}/summary",
                          "/agents/{agent_id}/episodes/{episode_id}/summary/history",
                          "/agents/{agent_id}/episodes/{episode_id}/messages/{seq}",
                          "/agents/{agent_id}/conversation-policy",
                          "/agents/{agent_id}/recall", "/agents/{agent_id}/upcoming",
                          "/agents/{agent_id}/context",
                          "/agents/{agent_id}/memories/{memory_id}/expand",
                          "/agents/{agent_id}/imports",
                          # a whole agent
                          "/agents/{agent_id}/export", "/agents/{agent_id}/import",
                          "/agents/{agent_id}", "/agents/{agent_id}/people/{user}",
                          "/agents/{agent_id}/episodes/{episode_id}/messages/{seq}/forget",
                          "/agents/{agent_id}/secrets-policy"}
    assert set(paths["/agents/{agent_id}/memories/{memory_id}"]) == {"get", "patch", "delete"}
    assert set(paths["/agents/{agent_id}/memories"]) == {"get", "post"}
    create_body = paths["/agents/{agent_id}/memories"]["post"]["requestBody"]
    assert create_body["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/MemoryCreate"}
    schemas = spec["components"]["schemas"]
    union = schemas["MemoryCreate"]
    assert set(union["discriminator"]["mapping"]) == {"decision", "fact", "episode",
                                                      "procedure", "censor"}
    decision = schemas["DecisionCreate"]
    assert decision["properties"]["confidence"]["anyOf"][0]["maximum"] == 1.0
    assert decision["additionalProperties"] is False
    assert "summary" not in decision["properties"]
    assert "summary" in schemas["EpisodeCreate"]["properties"]
    assert "required" not in schemas["DecisionChanges"]
    validation = paths["/agents/{agent_id}/memories"]["get"]["responses"]["422"]
    assert validation["content"]["application/json"]["schema"]["$ref"].endswith(
        "ValidationFailure")
    for ref in union["oneOf"]:
        assert ref["$ref"].rsplit("/", 1)[1] in schemas
    for page, script in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        docs = await client.get(page)
        assert docs.status_code == 200 and f'src="/docs/assets/{script}"' in docs.text
        assert "http" not in docs.text.replace("http-equiv", "")  # no CDN, no web fonts
        policy = docs.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "img-src 'self' data:" in policy
        asset = await client.get(f"/docs/assets/{script}")
        assert asset.status_code == 200 and len(asset.content) > 100_000


# ---------------------------------------------------------------------- API keys

ADMIN, AGENT, OTHER = "admin-key-0123456789", "agent-key-0123456789", "other-key-0123456789"
KEYS = f"{ADMIN}, {AGENT}:alice|bob ,{OTHER}:carol"


@pytest.fixture
async def guarded(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(store, settings=store.settings.with_changes(api_keys=KEYS))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


async def test_missing_or_unknown_key_is_401(guarded: httpx.AsyncClient,
                                             store: MemoryStore) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"},
                    {"Authorization": "Basic admin-key-0123456789"}, {"Authorization": "Bearer "},
                    {"X-API-Key": "ADMIN-KEY"}, {"X-API-Key": "agent-key-0123456789:alice"}):
        response = await guarded.post(memories_url("alice"), json=FACT, headers=headers)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"] == "Bearer"
        assert "admin-key-0123456789" not in response.text
        assert (await guarded.get(memories_url("alice"), headers=headers)).status_code == 401
    assert await store.counts("alice") == {}


async def test_key_for_other_agents_is_403(guarded: httpx.AsyncClient,
                                           store: MemoryStore) -> None:
    memory = await store.remember("carol", "fact", content="Carol's secret")
    for headers in ({"Authorization": f"Bearer {AGENT}"}, {"X-API-Key": AGENT}):
        response = await guarded.post(memories_url("carol"), json=FACT, headers=headers)
        assert response.status_code == 403
        response = await guarded.get(memories_url("carol", str(memory.id)), headers=headers)
        assert response.status_code == 403
        assert "secret" not in response.text
        response = await guarded.delete(memories_url("carol", str(memory.id)), headers=headers)
        assert response.status_code == 403
    assert (await store.get("carol", memory.id)).status == "active"
    assert await store.counts("carol") == {"fact": {"active": 1}}


async def test_allowed_keys_pass(guarded: httpx.AsyncClient) -> None:
    bearer = {"Authorization": "Bearer agent-key-0123456789"}
    created = await create(guarded, FACT, agent="alice", headers=bearer)
    response = await guarded.get(memories_url("alice", created["id"]),
                                 headers={"X-API-Key": "agent-key-0123456789"})
    assert response.status_code == 200
    assert response.json()["summary"] == "A valid fact"
    assert (await guarded.get(memories_url("bob"), headers=bearer)).status_code == 200
    admin = {"Authorization": "Bearer admin-key-0123456789"}
    assert (await guarded.get(memories_url("alice", created["id"]),
                              headers=admin)).status_code == 200
    assert (await guarded.get(memories_url("carol"),
                              headers={"X-API-Key": "other-key-0123456789"})).status_code == 200
    for open_path in ("/health", "/openapi.json", "/docs"):
        assert (await guarded.get(open_path)).status_code == 200
    spec = (await guarded.get("/openapi.json")).json()
    assert set(spec["components"]["securitySchemes"]) == {"BearerKey", "ApiKeyHeader"}


K1, K2 = "k1-0123456789abcdef", "k2-0123456789abcdef"


@pytest.mark.parametrize("keys", ["", "  ", f"{K1},,{K2}", f",{K1}", f"{K1}:", f"{K1}:a||b",
                                  f"{K1},{K1}", "bad key-0123456789", ":agent",
                                  f"{K1}:" + "a" * 129, "k1-too-short", f"{K1},k2"])
def test_invalid_api_keys_setting_fails_at_create_app(keys: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_app(settings=Settings(api_keys=keys, data_dir=Path("/nonexistent-unused")))
    assert "k1" not in str(caught.value)  # messages never echo a key


def test_api_keys_from_environment() -> None:
    settings = Settings.from_env({"NOUS_MEMORY_API_KEYS": f"{K1}:a|a,{K2}"},
                                 data_dir=Path("/nonexistent-unused"))
    assert create_app(settings=settings).title == "nous-memory"
    with pytest.raises(ConfigurationError):
        create_app(settings=Settings.from_env({"NOUS_MEMORY_API_KEYS": f"{K1}:"},
                                              data_dir=Path("/nonexistent-unused")))


# ---------------------------------------------------------------------- lifespan


async def test_given_store_is_not_closed(store: MemoryStore) -> None:
    app = create_app(store)
    async with app.router.lifespan_context(app):
        assert app.state.store is store
    assert (await store.health())["database"]["ok"] is True


async def test_lifespan_opens_and_closes_its_own_store(database_url: str) -> None:
    settings = Settings(database_url=database_url, data_dir=Path("/nonexistent-unused"))
    app = create_app(settings=settings)
    async with app.router.lifespan_context(app):
        opened = app.state.store
        assert isinstance(opened, MemoryStore)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            assert (await http.get("/health")).json()["status"] == "ok"
            await create(http, FACT)
            assert (await http.get(memories_url(A))).json()["items"][0]["summary"] == \
                "A valid fact"
    assert app.state.store is None
    with pytest.raises(DatabaseError):
        await opened.health()
