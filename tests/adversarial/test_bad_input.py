"""Input an attacker or a careless client sends: every case is a 4xx naming the field,
never a 5xx or a dropped connection, and nothing stored changes."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest

from nous_memory import InvalidInputError, MemoryStore
from tests.integration.http_helpers import fields_of

A = "mallory"
LONE = "\ud800"  # a lone UTF-16 surrogate: valid in JSON, not in UTF-8 or PostgreSQL


def raw_json(value: object) -> bytes:
    """JSON text with the surrogate escaped, as a client would send it."""
    return json.dumps(value, ensure_ascii=True).encode()


async def post(client: httpx.AsyncClient, url: str, body: object) -> httpx.Response:
    return await client.post(url, content=raw_json(body),
                             headers={"content-type": "application/json"})


async def test_lone_surrogates_are_422_naming_the_field(client: httpx.AsyncClient,
                                                        store: MemoryStore) -> None:
    episode = await store.start_episode(A, title="chat")
    await store.append(A, episode.id, [{"role": "user", "content": "hello there"}])
    base = f"/agents/{A}"
    cases: list[tuple[str, str, object, str]] = [
        ("POST", f"{base}/memories", {"kind": "fact", "content": f"x{LONE}y"}, "content"),
        ("POST", f"{base}/recall", {"query": f"what {LONE}"}, "query"),
        ("POST", f"{base}/context", {"query": LONE}, "query"),
        ("POST", f"{base}/episodes/{episode.id}/prompt",
         {"system": f"be brief{LONE}", "budget_tokens": 500}, "system"),
        ("POST", f"{base}/episodes/{episode.id}/prompt",
         {"system": "be brief", "budget_tokens": 500, "query": LONE}, "query"),
        ("POST", f"{base}/episodes/{episode.id}/messages",
         {"messages": [{"role": "user", "content": "hi", "metadata": {LONE: 1}}]},
         "messages[0].metadata.\\ud800"),
        ("POST", f"{base}/episodes/{episode.id}/messages",
         {"messages": [{"role": "user", "content": "hi", "metadata": {"k": LONE}}]},
         "messages[0].metadata.k"),
        ("PATCH", f"{base}/episodes/{episode.id}/messages/0", {"content": LONE}, "content"),
    ]
    for method, url, body, field in cases:
        response = await client.request(method, url, content=raw_json(body),
                                        headers={"content-type": "application/json"})
        assert response.status_code == 422, (url, body, response.text)
        assert fields_of(response) == [field], (url, response.text)
    transcript = await store.transcript(A, episode.id)
    assert [m.content for m in transcript] == ["hello there"]  # nothing stored changed
    assert (await store.list(A, kind="fact")).items == []


async def test_cursor_and_offset_out_of_range_are_422(client: httpx.AsyncClient,
                                                      store: MemoryStore) -> None:
    episode = await store.start_episode(A, title="chat")
    forged = base64.urlsafe_b64encode(
        b"0001-01-01T00:00:00+05:00|00000000-0000-0000-0000-000000000000").decode()
    response = await client.get(f"/agents/{A}/memories", params={"cursor": forged})
    assert response.status_code == 422 and fields_of(response) == ["cursor"], response.text
    response = await client.get(f"/agents/{A}/episodes/{episode.id}/summary/history",
                                params={"offset": str(2**63)})
    assert response.status_code == 422 and fields_of(response) == ["offset"], response.text
    with pytest.raises(InvalidInputError) as caught:
        await store.summary_history(A, episode.id, offset=2**63)
    assert caught.value.problems[0].field == "offset"


async def test_catastrophic_regex_cannot_stall_the_server(client: httpx.AsyncClient,
                                                          store: MemoryStore) -> None:
    """With Python's backtracking engine this pattern and query take minutes; in RE2
    they are linear.  The wait_for is a hang detector, not a speed target."""
    response = await post(client, f"/agents/{A}/memories",
                          {"kind": "censor", "trigger_pattern": "/(a+)+$/", "action": "warn",
                           "reason": "testing nested quantifiers"})
    assert response.status_code == 201, response.text
    query = "a" * 40 + "!"
    context = await asyncio.wait_for(store.assemble_context(A, query), timeout=30)
    assert "WARN" not in context.text  # the pattern does not match a text ending in "!"
    learned = await asyncio.wait_for(store.learn_fact(A, "a" * 40 + "! is a long shout"),
                                     timeout=30)
    assert learned.action == "created"
    matched = await store.assemble_context(A, "aaaa")
    assert "WARN: /(a+)+$/" in matched.text  # and it still works as a censor


@pytest.mark.parametrize(("pattern", "reason"), [
    ("/(a)\\1/", "RE2"), ("/(?<=a)b/", "RE2"), ("/[/", "RE2"),
    ("/" + "a" * 501 + "/", "longer than 500 characters (got 501)")])
async def test_unusable_regex_triggers_are_refused_when_written(
        client: httpx.AsyncClient, store: MemoryStore, pattern: str, reason: str) -> None:
    response = await post(client, f"/agents/{A}/memories",
                          {"kind": "censor", "trigger_pattern": pattern, "action": "block",
                           "reason": "r"})
    assert response.status_code == 422, response.text
    assert fields_of(response) == ["trigger_pattern"]
    assert reason in response.json()["detail"][0]["reason"]
    assert (await store.list(A, kind="censor")).items == []


async def test_the_python_api_raises_typed_errors_for_lone_surrogates(
        store: MemoryStore) -> None:
    episode = await store.start_episode(A, title="chat")
    await store.append(A, episode.id, [{"role": "user", "content": "hello there"}])
    calls = [
        ("messages[0].metadata", store.append(A, episode.id, [
            {"role": "user", "content": "x", "metadata": {"k": LONE}}])),
        ("messages[0].metadata", store.append(A, episode.id, [
            {"role": "user", "content": "x", "metadata": {LONE: 1}}])),
        ("system", store.build_prompt(A, episode.id, f"sys{LONE}", 500)),
        ("query", store.build_prompt(A, episode.id, "sys", 500, query=LONE)),
        ("query", store.recall(A, f"q{LONE}")),
        ("query", store.assemble_context(A, f"q{LONE}")),
        ("content", store.learn_fact(A, f"Ana likes tea{LONE}")),
        ("content", store.edit_message(A, episode.id, 0, LONE)),
        ("tags.0", store.remember(A, "fact", content="x", tags=[f"t{LONE}"])),
    ]
    for field, call in calls:
        with pytest.raises(InvalidInputError) as caught:
            await call
        assert caught.value.problems[0].field == field
    assert [m.content for m in await store.transcript(A, episode.id)] == ["hello there"]
