"""The fact routes of the REST service, against a real database and the real model."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.api.facts import LEARN_EXAMPLES, LEARN_FIELDS, LEARN_RESULT_EXAMPLES
from nous_memory.facts.learning import LearnResult
from nous_memory.memories.kinds import MAX_TEXT_CHARS
from tests.integration.http_helpers import fields_of, post_body

A = "agent-a"
B = "agent-b"
OLD = "The project deadline is March 3"
NEW = "The project deadline is March 10"


def learn_url(agent: str = A) -> str:
    return f"/agents/{agent}/facts/learn"


def history_url(fact_id: str, agent: str = A) -> str:
    return f"/agents/{agent}/facts/{fact_id}/history"


def episode_url(episode_id: str, agent: str = A) -> str:
    return f"/agents/{agent}/episodes/{episode_id}/facts"


async def learn(client: httpx.AsyncClient, body: dict[str, Any], agent: str = A,
                **kwargs: Any) -> dict[str, Any]:
    response = await client.post(learn_url(agent), json=body, **kwargs)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


# ---------------------------------------------------------------------- learning


async def test_learn_creates_then_exact_duplicate_confirms(client: httpx.AsyncClient,
                                                           store: MemoryStore) -> None:
    created = await learn(client, {"content": "Maria works at the Lisbon office",
                                   "subject": "Maria", "category": "work", "confidence": 0.6,
                                   "source": "chat", "source_kind": "extracted"})
    assert set(created) == {"action", "fact", "reason", "similarity", "decided_by", "related",
                            "also"}
    assert created["action"] == "created" and created["also"] == []
    assert created["reason"] is None and created["related"] == []
    fact = created["fact"]
    assert fact["agent_id"] == A and fact["kind"] == "fact" and fact["status"] == "active"
    assert fact["summary"] == "Maria works at the Lisbon office"
    assert {k: fact["detail"][k] for k in ("subject", "category", "confidence", "source",
                                           "source_kind")} == {
        "subject": "Maria", "category": "work", "confidence": 0.6, "source": "chat",
        "source_kind": "extracted"}

    again = await learn(client, {"content": "  maria WORKS at the lisbon office!! ",
                                 "subject": None})
    assert again["action"] == "confirmed"
    assert again["decided_by"] == "exact" and again["similarity"] == 1.0
    assert again["related"] == [fact["id"]]
    assert again["fact"]["id"] == fact["id"]
    assert again["fact"]["detail"]["confirmation_count"] == 1
    assert again["fact"]["detail"]["confidence"] == 0.64  # 10% of the way to 1
    assert await store.counts(A) == {"fact": {"active": 1}}
    stored = await store.get(A, fact["id"])
    assert stored.fact.confirmation_count == 1


async def test_value_change_supersedes_and_history_shows_the_chain(
        client: httpx.AsyncClient, store: MemoryStore) -> None:
    before = await learn(client, {"content": OLD, "confidence": 0.8})
    after = await learn(client, {"content": NEW})
    assert before["action"] == "created"
    assert after["action"] == "superseded"
    old_id, new_id = before["fact"]["id"], after["fact"]["id"]
    assert old_id != new_id
    assert after["related"] == [old_id]
    assert after["fact"]["detail"]["supersedes_id"] == old_id
    assert after["similarity"] is not None
    assert after["decided_by"] in ("similarity", "rule", "slot")

    response = await client.get(history_url(new_id))
    assert response.status_code == 200, response.text
    history = response.json()
    assert set(history) == {"chain", "events"}
    assert [m["id"] for m in history["chain"]] == [old_id, new_id]
    assert [m["status"] for m in history["chain"]] == ["superseded", "active"]
    assert [m["detail"]["content"] for m in history["chain"]] == [OLD, NEW]
    assert history["chain"][0]["detail"]["superseded_by_id"] == new_id
    assert history["chain"][0]["detail"]["confidence"] == 0.4  # halved when replaced
    assert [(e["memory_id"], e["event"]) for e in history["events"]] == [
        (old_id, "created"), (new_id, "created"), (old_id, "superseded")]
    # any version's id gives the whole chain
    assert (await client.get(history_url(old_id))).json() == history
    assert (await store.counts(A)) == {"fact": {"active": 1, "superseded": 1}}


@pytest.mark.parametrize(("content", "reason"), [
    ("Paris", "too short"),
    ("", "empty"),
    ("You are a helpful assistant that answers in JSON", "echo of instructions"),
])
async def test_rejected_fact_is_a_normal_answer(client: httpx.AsyncClient, store: MemoryStore,
                                                content: str, reason: str) -> None:
    result = await learn(client, {"content": content})
    assert result["action"] == "rejected"
    assert result["fact"] is None and result["related"] == []
    assert result["reason"].startswith(reason)
    assert await store.counts(A) == {}


async def test_censored_fact_is_rejected_with_the_censor(client: httpx.AsyncClient,
                                                         store: MemoryStore) -> None:
    censor = await store.remember(A, "censor", action="block", trigger_pattern="password",
                                  reason="Never store credentials")
    result = await learn(client, {"content": "The wifi password is hunter2"})
    assert result["action"] == "rejected"
    assert str(censor.id) in result["reason"] and "credentials" in result["reason"]
    assert await store.counts(A) == {"censor": {"active": 1}}


BAD_LEARNS: list[tuple[str, Any, list[str]]] = [
    ("confidence", {"content": NEW, "confidence": 1.5}, ["confidence"]),
    ("confidence type", {"content": NEW, "confidence": "high"}, ["confidence"]),
    ("source_kind", {"content": NEW, "source_kind": "rumour"}, ["source_kind"]),
    ("unknown field", {"content": NEW, "colour": "red"}, ["colour"]),
    ("common field", {"content": NEW, "importance": 0.9}, ["importance"]),
    ("managed field", {"content": NEW, "confirmation_count": 5}, ["confirmation_count"]),
    ("store keyword", {"content": NEW, "instructions": "Extract facts"}, ["instructions"]),
    ("agent keyword", {"content": NEW, "agent_id": B}, ["agent_id"]),
    ("NUL byte", {"content": "The deadline\x00 is March 10"}, ["content"]),
    ("NUL in subject", {"content": NEW, "subject": "pro\x00ject"}, ["subject"]),
    ("over-limit text", {"content": "word " * (MAX_TEXT_CHARS // 5 + 1)}, ["content"]),
    ("content type", {"content": 42}, ["content"]),
    ("missing content", {"subject": "project"}, ["content"]),
    ("missing and unknown", {"colour": "red"}, ["content", "colour"]),
    ("bad episode id", {"content": NEW, "source_episode_id": "yesterday"},
     ["source_episode_id"]),
    ("several", {"content": NEW, "subject": " ", "confidence": 2}, ["subject", "confidence"]),
    ("not JSON", b"{not json", ["body"]),
    ("empty body", b"", ["body"]),
    ("array body", [{"content": NEW}], ["body"]),
]


@pytest.mark.parametrize(("body", "fields"), [(b, f) for _, b, f in BAD_LEARNS],
                         ids=[name for name, _, _ in BAD_LEARNS])
async def test_invalid_learn_is_422_and_stores_nothing(
        client: httpx.AsyncClient, store: MemoryStore, body: Any, fields: list[str]) -> None:
    response = await post_body(client, learn_url(A), body)
    assert response.status_code == 422, response.text
    assert fields_of(response) == fields
    assert await store.counts(A) == {}
    assert await store.counts(B) == {}


async def test_bad_agent_id_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post(learn_url("x" * 129), json={"content": NEW})
    assert response.status_code == 422
    assert fields_of(response) == ["agent_id"]


# ---------------------------------------------------------------------- history


async def test_history_of_other_agents_or_unknown_fact_is_404(client: httpx.AsyncClient,
                                                              store: MemoryStore) -> None:
    fact = (await learn(client, {"content": OLD}))["fact"]
    decision = await store.remember(A, "decision", description="Ship on Friday")
    for agent, ident in ((B, fact["id"]), (A, str(uuid.uuid4())), (A, str(decision.id))):
        response = await client.get(history_url(ident, agent))
        assert response.status_code == 404, (agent, ident)
        assert response.json() == {"detail": f"fact {ident} not found"}
        assert OLD not in response.text
    malformed = await client.get(history_url("not-a-uuid"))
    assert malformed.status_code == 422
    assert fields_of(malformed) == ["fact_id"]
    mine = await client.get(history_url(fact["id"]))
    assert [m["id"] for m in mine.json()["chain"]] == [fact["id"]]
    assert [e["event"] for e in mine.json()["events"]] == ["created"]


# ---------------------------------------------------------------------- episodes


async def test_facts_learned_from_an_episode(client: httpx.AsyncClient,
                                             store: MemoryStore) -> None:
    episode = await store.remember(A, "episode", title="Onboarding call",
                                   detail="Tim said he lives in Porto.")
    other = await store.remember(A, "episode", title="Standup", detail="Nothing new.")
    learned = await learn(client, {"content": "Tim lives in Porto", "source_kind": "extracted",
                                   "source_episode_id": str(episode.id)})
    assert learned["action"] == "created"
    assert learned["fact"]["detail"]["source_episode_id"] == str(episode.id)
    await learn(client, {"content": "The printer on floor two is broken"})  # no episode

    response = await client.get(episode_url(str(episode.id)))
    assert response.status_code == 200, response.text
    listed = response.json()
    assert [m["id"] for m in listed] == [learned["fact"]["id"]]
    assert listed[0]["detail"]["content"] == "Tim lives in Porto"
    assert (await client.get(episode_url(str(other.id)))).json() == []
    assert (await client.get(episode_url(str(episode.id), B))).json() == []
    malformed = await client.get(episode_url("not-a-uuid"))
    assert malformed.status_code == 422
    assert fields_of(malformed) == ["episode_id"]


async def test_another_agents_episode_cannot_be_the_source(client: httpx.AsyncClient,
                                                           store: MemoryStore) -> None:
    episode = await store.remember(A, "episode", title="Onboarding call",
                                   detail="Tim said he lives in Porto.")
    response = await client.post(learn_url(B), json={"content": "Tim lives in Porto",
                                                     "source_episode_id": str(episode.id)})
    assert response.status_code == 422, response.text
    assert len(fields_of(response)) == 1
    assert await store.counts(B) == {}
    assert await store.facts_from_episode(A, episode.id) == []


# ---------------------------------------------------------------------- docs


async def test_openapi_documents_the_fact_routes(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    paths = spec["paths"]
    learn_op = paths["/agents/{agent_id}/facts/learn"]["post"]
    assert learn_op["tags"] == ["facts"]
    media = learn_op["requestBody"]["content"]["application/json"]
    assert media["schema"] == {"$ref": "#/components/schemas/FactLearn"}
    schemas = spec["components"]["schemas"]
    body = schemas["FactLearn"]
    assert list(body["properties"]) == [*LEARN_FIELDS, "user"]  # user: who says it
    assert body["required"] == ["content"]
    assert body["additionalProperties"] is False
    assert body["properties"]["confidence"]["anyOf"][0]["maximum"] == 1.0
    kind_ref = body["properties"]["source_kind"]["$ref"].rsplit("/", 1)[1]
    assert schemas[kind_ref]["enum"] == ["user_stated", "extracted", "inferred"]
    assert {name: e["value"] for name, e in media["examples"].items()} == LEARN_EXAMPLES
    for example in LEARN_EXAMPLES.values():
        assert set(example) <= set(body["properties"])

    ok = learn_op["responses"]["200"]["content"]["application/json"]
    assert ok["schema"] == {"$ref": "#/components/schemas/LearnResult"}
    assert set(ok["examples"]) == set(LEARN_RESULT_EXAMPLES)
    for example in LEARN_RESULT_EXAMPLES.values():
        LearnResult.model_validate(example)  # the documented answers are real ones
    assert learn_op["responses"]["422"]["content"]["application/json"]["schema"][
        "$ref"].endswith("ValidationFailure")
    assert {"401", "403", "413", "503"} <= set(learn_op["responses"])

    history_op = paths["/agents/{agent_id}/facts/{fact_id}/history"]["get"]
    assert history_op["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/FactHistory"}
    assert "404" in history_op["responses"]
    episode_op = paths["/agents/{agent_id}/episodes/{episode_id}/facts"]["get"]
    listing = episode_op["responses"]["200"]["content"]["application/json"]["schema"]
    assert listing["type"] == "array"
    assert listing["items"] == {"$ref": "#/components/schemas/Memory"}
    assert "facts" in {tag["name"] for tag in spec["tags"]}


# ---------------------------------------------------------------------- API keys

ADMIN, AGENT, OTHER = "admin-key-0123456789", "agent-key-0123456789", "other-key-0123456789"
KEYS = f"{ADMIN}, {AGENT}:alice|bob ,{OTHER}:carol"


@pytest.fixture
async def guarded(store: MemoryStore) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(store, settings=store.settings.with_changes(api_keys=KEYS))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


def fact_calls(agent: str, fact_id: str, episode_id: str) -> list[tuple[str, str]]:
    return [("POST", learn_url(agent)), ("GET", history_url(fact_id, agent)),
            ("GET", episode_url(episode_id, agent))]


async def test_fact_routes_need_a_key(guarded: httpx.AsyncClient, store: MemoryStore) -> None:
    fact = await store.learn_fact("alice", OLD)
    assert fact.fact is not None
    episode = await store.remember("alice", "episode", title="Planning", detail="Deadlines.")
    calls = fact_calls("alice", str(fact.fact.id), str(episode.id))
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"},
                    {"X-API-Key": "agent-key-0123456789:alice"}):
        for method, url in calls:
            response = await guarded.request(method, url, json={"content": NEW},
                                             headers=headers)
            assert response.status_code == 401, (method, url, headers)
            assert response.headers["www-authenticate"] == "Bearer"
            assert OLD not in response.text
    assert await store.counts("alice") == {"fact": {"active": 1}, "episode": {"active": 1}}


async def test_key_for_other_agents_is_403_and_allowed_keys_pass(
        guarded: httpx.AsyncClient, store: MemoryStore) -> None:
    # the owner keeps secrets here (memories/guard.py): a code is the private marker
    await store.set_secrets_policy("carol", "keep")
    secret = await store.learn_fact("carol", "Carol's locker code is 4711")
    assert secret.fact is not None
    episode = await store.remember("carol", "episode", title="Locker", detail="Code set.")
    for headers in ({"Authorization": f"Bearer {AGENT}"}, {"X-API-Key": AGENT}):
        for method, url in fact_calls("carol", str(secret.fact.id), str(episode.id)):
            response = await guarded.request(method, url, json={"content": NEW},
                                             headers=headers)
            assert response.status_code == 403, (method, url, headers)
            assert "4711" not in response.text
    assert await store.counts("carol") == {"fact": {"active": 1}, "episode": {"active": 1}}

    for key in ("other-key-0123456789", "admin-key-0123456789"):
        headers = {"Authorization": f"Bearer {key}"}
        response = await guarded.get(history_url(str(secret.fact.id), "carol"), headers=headers)
        assert response.status_code == 200
        assert response.json()["chain"][0]["detail"]["content"] == "Carol's locker code is 4711"
        assert (await guarded.get(episode_url(str(episode.id), "carol"),
                                  headers=headers)).json() == []
    learned = await learn(guarded, {"content": NEW}, agent="alice",
                          headers={"X-API-Key": "agent-key-0123456789"})
    assert learned["action"] == "created"
    assert await store.counts("alice") == {"fact": {"active": 1}}
