"""Episodes over REST: lifecycle, errors that leave everything as it was, transcript paging
and the worker the app runs itself (real database, real model, scripted LLM over HTTP)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.api import create_app
from nous_memory.memories.kinds import MAX_MESSAGE_CHARS, MAX_TEXT_CHARS
from nous_memory.testing import ScriptedLLMServer
from tests.conftest import LLMStoreFactory
from tests.integration.http_helpers import asgi_client, fields_of

A = "agent-a"
B = "agent-b"
CLOSE_TIMEOUT_S = 30.0

CHAT = [
    {"role": "user", "name": "Rui", "content": "I need to move the dentist appointment to "
     "Friday at 10.", "metadata": {"turn": 1}},
    {"role": "assistant", "content": "Done: Friday 10:00 with Dr. Costa."},
    {"role": "user", "name": "Rui", "content": "Thanks. Remind me I'm allergic to penicillin."},
]

SCRIPTED_EXTRACTION: dict[str, Any] = {
    "title": "Rescheduling Rui's dentist appointment",
    "summary": "Rui asked to move his dentist appointment with Dr. Costa to Friday at 10:00 "
               "and mentioned his penicillin allergy.",
    "key_points": ["Appointment moved to Friday 10:00"],
    "outcome": "The appointment is on Friday at 10:00.",
    "topics": ["health", "calendar"],
    "facts": [{"content": "Rui is allergic to penicillin", "subject": "Rui",
               "category": "person", "confidence": 0.95}],
    "decisions": [],
    "lessons": [],
}


def url(agent: str, *parts: str) -> str:
    return "/".join([f"/agents/{agent}/episodes", *parts])


@pytest.fixture
def scripted(llm_server: ScriptedLLMServer) -> ScriptedLLMServer:
    return llm_server


@pytest.fixture
async def llm_backed(open_llm_store: LLMStoreFactory) -> AsyncIterator[MemoryStore]:
    async with open_llm_store(llm_max_attempts=1, episode_chunk_tokens=160) as opened:
        yield opened


async def start(http: httpx.AsyncClient, agent: str = A, **body: Any) -> dict[str, Any]:
    response = await http.post(url(agent), json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def wait_closed(http: httpx.AsyncClient, episode_id: str,
                      timeout_s: float = CLOSE_TIMEOUT_S) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        episode: dict[str, Any] = (await http.get(url(A, episode_id))).json()
        if episode["detail"]["state"] == "closed":
            return episode
        if loop.time() > deadline:
            pytest.fail(f"episode still {episode['detail']['state']} after {timeout_s} s")
        await asyncio.sleep(0.2)


# ---------------------------------------------------------------------- lifecycle


async def test_start_append_close_then_worker_summarises(
        llm_backed: MemoryStore, scripted: ScriptedLLMServer) -> None:
    async with asgi_client(create_app(llm_backed)) as http:
        episode = await start(http, title="Dentist", participants=["Rui", "assistant"],
                              user_id="rui", started_at="2025-03-01T09:00:00+01:00")
        ident = episode["id"]
        assert episode["kind"] == "episode" and episode["agent_id"] == A
        assert episode["detail"]["state"] == "open"
        assert episode["detail"]["participants"] == ["Rui", "assistant"]
        assert episode["detail"]["user_id"] == "rui"
        assert (datetime.fromisoformat(episode["detail"]["started_at"])
                == datetime(2025, 3, 1, 8, tzinfo=UTC))

        appended = await http.post(url(A, ident, "messages"), json={"messages": CHAT[:2]})
        assert appended.status_code == 201, appended.text
        first = appended.json()
        assert (first["episode_id"], first["first_seq"], first["last_seq"],
                first["message_count"]) == (ident, 0, 1, 2)
        assert first["tokens"] > 0
        second = (await http.post(url(A, ident, "messages"), json={"messages": CHAT[2:]})).json()
        assert (second["first_seq"], second["last_seq"], second["message_count"]) == (2, 2, 3)

        closing = await http.post(url(A, ident, "close"))
        assert closing.status_code == 202, closing.text
        assert closing.json()["detail"]["state"] == "closing"
        again = await http.post(url(A, ident, "close"))
        assert again.status_code == 202
        assert again.json()["version"] == closing.json()["version"]
        assert (await http.get(url(A, ident))).json()["detail"]["state"] == "closing"
        assert len(scripted.requests) == 0  # closing only queues the work

        scripted.reply_json(SCRIPTED_EXTRACTION)
        assert await llm_backed.worker().drain() == 2  # the close, then its follow-up
        closed = (await http.get(url(A, ident))).json()
        assert closed["detail"]["state"] == "closed"
        assert closed["summary_source"] == "llm"
        assert closed["summary"] == SCRIPTED_EXTRACTION["summary"]
        assert closed["detail"]["facts_state"] == "extracted"
        assert closed["detail"]["message_count"] == 3
        assert len(scripted.requests) == 1
        assert "penicillin" in scripted.requests[0]["messages"][-1]["content"]

        after = await http.post(url(A, ident, "close"))
        assert after.status_code == 202
        assert after.json()["detail"]["state"] == "closed"
        assert after.json()["version"] == closed["version"]
        facts = (await http.get(url(A, ident, "facts"))).json()
        assert [f["summary"] for f in facts] == ["Rui is allergic to penicillin"]
        assert await llm_backed.worker().drain() == 0


async def test_start_body_is_optional_and_checked(client: httpx.AsyncClient,
                                                  store: MemoryStore) -> None:
    response = await client.post(url(A))
    assert response.status_code == 201, response.text
    untitled = response.json()
    assert untitled["detail"]["state"] == "open" and untitled["detail"]["title"] is None
    bad = [({"participants": "Rui"}, ["participants"]),
           ({"title": "x", "kind": "fact"}, ["kind"]),
           ({"started_at": "last tuesday"}, ["started_at"]),
           ({"title": "t" * 501}, ["title"])]
    for body, fields in bad:
        response = await client.post(url(A), json=body)
        assert response.status_code == 422, (body, response.text)
        assert fields_of(response) == fields, body
    malformed = await client.post(url(A), content=b"{nope",
                                  headers={"content-type": "application/json"})
    assert malformed.status_code == 422 and fields_of(malformed) == ["body"]
    assert [str(m.id) for m in (await store.list(A)).items] == [untitled["id"]]  # nothing else


# ---------------------------------------------------------------------- rejected requests


async def test_rejected_requests_change_nothing(client: httpx.AsyncClient,
                                                store: MemoryStore) -> None:
    ident = (await start(client, title="Rejections"))["id"]
    ok = await client.post(url(A, ident, "messages"), json={"messages": CHAT[:1]})
    assert ok.status_code == 201
    before = await store.get_episode(A, ident)

    async def unchanged() -> None:
        assert await store.get_episode(A, ident) == before
        assert [m.content for m in await store.transcript(A, ident)] == [CHAT[0]["content"]]

    too_long = {"messages": [{"role": "user", "content": "ok"},
                             {"role": "user", "content": "x" * (MAX_MESSAGE_CHARS + 1)}]}
    response = await client.post(url(A, ident, "messages"), json=too_long)
    assert response.status_code == 413, response.text
    assert fields_of(response) == ["messages[1].content"]
    await unchanged()

    robot = {"messages": [{"role": "user", "content": "fine"},
                          {"role": "robot", "content": "beep"}]}
    response = await client.post(url(A, ident, "messages"), json=robot)
    assert response.status_code == 422, response.text
    assert fields_of(response) == ["messages[1].role"]
    await unchanged()

    for body, fields in [({"messages": []}, ["messages"]),
                         ({"message": CHAT[:1]}, ["messages", "message"]),
                         ({"messages": "hello"}, ["messages"])]:
        response = await client.post(url(A, ident, "messages"), json=body)
        assert response.status_code == 422, (body, response.text)
        assert fields_of(response) == fields, body
    await unchanged()

    # another agent's episode is not found, whatever the route, and stays untouched
    for method, path in [("POST", url(B, ident, "messages")), ("POST", url(B, ident, "close")),
                         ("GET", url(B, ident)), ("GET", url(B, ident, "messages"))]:
        response = await client.request(method, path, json={"messages": CHAT[1:2]})
        assert response.status_code == 404, (path, response.text)
        assert ident in response.json()["detail"]
    await unchanged()

    # a memory that is not an episode is not an episode
    fact = await store.remember(A, "fact", content="Rui lives in Braga")
    assert (await client.get(url(A, str(fact.id)))).status_code == 404
    assert (await client.post(url(A, str(fact.id), "close"))).status_code == 404
    assert (await client.get(url(A, "not-a-uuid"))).status_code == 422
    await unchanged()

    assert (await client.post(url(A, ident, "close"))).status_code == 202
    closing = await store.get_episode(A, ident)
    late = await client.post(url(A, ident, "messages"), json={"messages": CHAT[1:2]})
    assert late.status_code == 409, late.text
    assert "closing" in late.json()["detail"]
    assert await store.get_episode(A, ident) == closing
    assert len(await store.transcript(A, ident)) == 1


async def test_oversize_memory_text_is_still_422(client: httpx.AsyncClient) -> None:
    """Only the episode-message subclass is a 413; other too-long values stay 422."""
    response = await client.post(f"/agents/{A}/memories",
                                 json={"kind": "fact", "content": "y" * (MAX_TEXT_CHARS + 1)})
    assert response.status_code == 422, response.text
    assert fields_of(response) == ["content"]


# ---------------------------------------------------------------------- transcript


async def test_transcript_pages(client: httpx.AsyncClient) -> None:
    ident = (await start(client, title="Paging"))["id"]
    sent = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}",
             "created_at": f"2025-03-01T10:00:0{i}Z", "metadata": {"i": i}} for i in range(5)]
    sent[0]["name"] = "Rui"
    response = await client.post(url(A, ident, "messages"), json={"messages": sent})
    assert response.status_code == 201, response.text

    seen: list[dict[str, Any]] = []
    starts: list[int] = []
    params: dict[str, int] = {"limit": 2}
    while True:
        page = await client.get(url(A, ident, "messages"), params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        assert body["episode_id"] == ident and body["message_count"] == 5
        starts.append(params.get("from_seq", 0))
        seen += body["messages"]
        if body["next_from_seq"] is None:
            break
        params = {"limit": 2, "from_seq": body["next_from_seq"]}
    assert starts == [0, 2, 4]
    assert [m["seq"] for m in seen] == [0, 1, 2, 3, 4]
    assert [m["content"] for m in seen] == [m["content"] for m in sent]
    assert [m["metadata"] for m in seen] == [{"i": i} for i in range(5)]
    assert [m["role"] for m in seen] == [m["role"] for m in sent]
    assert seen[0]["name"] == "Rui" and seen[1]["name"] is None
    assert seen[3]["created_at"] == "2025-03-01T10:00:03Z"
    assert all(m["tokens"] > 0 for m in seen)

    whole = (await client.get(url(A, ident, "messages"))).json()
    assert [m["seq"] for m in whole["messages"]] == [0, 1, 2, 3, 4]
    assert whole["next_from_seq"] is None
    beyond = (await client.get(url(A, ident, "messages"), params={"from_seq": 9})).json()
    assert beyond["messages"] == [] and beyond["next_from_seq"] is None
    for params, field in [({"limit": 0}, "limit"), ({"limit": 10_001}, "limit"),
                          ({"from_seq": -1}, "from_seq"), ({"from_seq": "x"}, "from_seq")]:
        response = await client.get(url(A, ident, "messages"), params=params)
        assert response.status_code == 422, (params, response.text)
        assert fields_of(response) == [field]


# ---------------------------------------------------------------------- the app's worker


async def _start_and_close(http: httpx.AsyncClient) -> str:
    ident: str = (await start(http, title="Worker check"))["id"]
    response = await http.post(url(A, ident, "messages"), json={"messages": CHAT})
    assert response.status_code == 201
    assert (await http.post(url(A, ident, "close"))).status_code == 202
    return ident


async def test_app_with_a_given_store_runs_a_worker_only_on_request(
        store: MemoryStore) -> None:
    quiet = create_app(store)
    async with quiet.router.lifespan_context(quiet), asgi_client(quiet) as http:
        ident = await _start_and_close(http)
        await asyncio.sleep(2.5)  # a worker would have polled twice by now
        assert (await http.get(url(A, ident))).json()["detail"]["state"] == "closing"

    app = create_app(store, run_worker=True)
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        closed = await wait_closed(http, ident)
        assert closed["summary_source"] == "rule"
        assert closed["summary"].startswith("Worker check.")
        other = await _start_and_close(http)
        assert (await wait_closed(http, other))["detail"]["state"] == "closed"
    # the worker stopped with the app; the caller's store is still open and usable
    assert (await store.get_episode(A, other)).episode.state == "closed"


@pytest.mark.parametrize("turned_off_by", ["setting", "argument"])
async def test_app_that_opens_its_store_runs_the_worker_by_setting(
        store: MemoryStore, turned_off_by: str) -> None:
    off = (create_app(settings=store.settings.with_changes(run_worker_in_serve=False))
           if turned_off_by == "setting" else create_app(settings=store.settings,
                                                         run_worker=False))
    async with off.router.lifespan_context(off), asgi_client(off) as http:
        ident = await _start_and_close(http)
        await asyncio.sleep(2.5)
        assert (await http.get(url(A, ident))).json()["detail"]["state"] == "closing"
        assert off.state.store is not None

    served = create_app(settings=store.settings)  # run_worker_in_serve defaults to true
    async with served.router.lifespan_context(served), asgi_client(served) as http:
        assert (await wait_closed(http, ident))["summary_source"] == "rule"
    assert served.state.store is None  # shut down: worker stopped, then its store closed


# ---------------------------------------------------------------------- auth and docs


KEY_A = "k-a-0123456789abcdef"


async def test_episode_routes_need_a_key_for_the_agent(store: MemoryStore) -> None:
    app = create_app(store, settings=store.settings.with_changes(api_keys=f"{KEY_A}:agent-a"))
    async with asgi_client(app) as http:
        assert (await http.post(url(A))).status_code == 401
        assert (await http.post(url(B), headers={"X-API-Key": KEY_A})).status_code == 403
        made = await http.post(url(A), headers={"X-API-Key": KEY_A}, json={"title": "Keyed"})
        assert made.status_code == 201
        ident = made.json()["id"]
        for path in (url(A, ident), url(A, ident, "messages")):
            assert (await http.get(path)).status_code == 401
        assert (await http.post(url(A, ident, "close"))).status_code == 401
    assert (await store.get_episode(A, ident)).episode.state == "open"


async def test_openapi_documents_episode_routes(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    paths = spec["paths"]
    assert set(paths[url("{agent_id}")]) == {"post"}
    assert set(paths[url("{agent_id}", "{episode_id}")]) == {"get"}
    assert set(paths[url("{agent_id}", "{episode_id}", "messages")]) == {"get", "post"}
    assert "202" in paths[url("{agent_id}", "{episode_id}", "close")]["post"]["responses"]
    append = paths[url("{agent_id}", "{episode_id}", "messages")]["post"]
    assert {"409", "413", "422"} <= set(append["responses"])
    schemas = spec["components"]["schemas"]
    assert append["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/MessageAppend"}
    assert set(schemas["EpisodeStart"]["properties"]) == {"title", "participants", "user_id",
                                                          "started_at"}
    assert schemas["MessageAppend"]["properties"]["messages"]["maxItems"] == 1000
    assert "TranscriptPage" in schemas
