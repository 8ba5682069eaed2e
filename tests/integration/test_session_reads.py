"""What a session backend reads from working memory: the transcript without deleted
messages, the newest N messages, each prompt message's stored metadata, a window that
follows the caller's budget, and a rule fold that keeps what every message named."""

from __future__ import annotations

from typing import Any

import httpx

from nous_memory import MemoryStore

AGENT = "session-reads"

# a 40-turn trip-planning chat: the early turns name people and places that matter
EARLY = [
    "My sister Beatrice lives in Lisbon and works at the Gulbenkian museum.",
    "Book the Alfama guesthouse that Tomasz recommended for the first night.",
    "We decided to take the night train from Madrid to Lisbon on the 14th.",
]


def trip(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        said = EARLY[i] if i < len(EARLY) else (
            f"For day {i}, what should we do around museum number {i % 7 + 20}?")
        messages.append({"role": "user", "content": said})
        messages.append({"role": "assistant",
                         "content": f"Noted for day {i}: visit the museum number {i % 7 + 20} "
                                    f"in the morning, then lunch by {i % 5 + 11} o'clock."})
    return messages


async def _episode(store: MemoryStore, messages: list[dict[str, Any]]) -> str:
    episode = await store.start_episode(AGENT, title="reads")
    await store.append(AGENT, episode.id, messages)
    return str(episode.id)


async def test_deleted_messages_leave_every_read(store: MemoryStore,
                                                 client: httpx.AsyncClient) -> None:
    episode = await _episode(store, [{"role": "user", "content": f"message {i}"}
                                     for i in range(6)])
    await store.delete_message(AGENT, episode, 5)
    await store.delete_message(AGENT, episode, 2)
    assert [m.seq for m in await store.transcript(AGENT, episode)] == [0, 1, 3, 4]
    assert [m.seq for m in await store.latest_messages(AGENT, episode, limit=3)] == [1, 3, 4]
    base = f"/agents/{AGENT}/episodes/{episode}/messages"
    page = (await client.get(base)).json()
    assert [m["seq"] for m in page["messages"]] == [0, 1, 3, 4]
    assert page["next_from_seq"] is None and page["message_count"] == 6
    latest = await client.get(base, params={"last": 2})
    assert latest.status_code == 200
    assert [m["content"] for m in latest.json()["messages"]] == ["message 3", "message 4"]
    # a full page whose next message was deleted still says where to go on
    paged = (await client.get(base, params={"limit": 2})).json()
    assert [m["seq"] for m in paged["messages"]] == [0, 1] and paged["next_from_seq"] == 2


async def test_latest_refuses_bad_counts_by_name(store: MemoryStore,
                                                 client: httpx.AsyncClient) -> None:
    episode = await _episode(store, [{"role": "user", "content": "hello"}])
    base = f"/agents/{AGENT}/episodes/{episode}/messages"
    for params, field in (({"last": 0}, "limit"), ({"last": 10_001}, "limit"),
                          ({"last": 2, "from_seq": 1}, "last")):
        response = await client.get(base, params=params)
        assert response.status_code == 422, (params, response.text)
        assert response.json()["detail"][0]["field"] == field


async def test_prompt_parts_carry_each_message_metadata(store: MemoryStore) -> None:
    item = {"type": "function_call", "call_id": "c1", "name": "weather",
            "arguments": '{"city": "Lisbon"}'}
    episode = await _episode(store, [
        {"role": "user", "content": "Weather in Lisbon?", "metadata": {"item": {"n": 1}}},
        {"role": "assistant", "content": "", "metadata": {
            "item": item, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "weather", "arguments": '{"city": "Lisbon"}'}}]}},
        {"role": "tool", "content": "21 C and sunny", "tool_call_id": "c1"}])
    prompt = await store.build_prompt(AGENT, episode, "Be brief.", 2000)
    assert len(prompt.parts) == len(prompt.messages) == 4
    assert [p.part for p in prompt.parts] == ["system", "message", "message", "message"]
    assert [p.seq for p in prompt.parts] == [None, 0, 1, 2]
    assert prompt.parts[1].metadata == {"item": {"n": 1}}
    assert prompt.parts[2].metadata["item"] == item
    assert "metadata" not in prompt.messages[2]  # the chat messages stay as an API takes them
    assert prompt.messages[2]["tool_calls"][0]["id"] == "c1"


async def test_the_window_follows_the_budget_unless_named(store: MemoryStore) -> None:
    messages = [{"role": "user", "content": f"Short note {i} about the garden."}
                for i in range(16)]
    quiet = {"mode": "rule", "trigger_messages": 0, "trigger_words": 0}
    episode = await _episode(store, messages)
    # ~200 tokens of messages in a 1000-token budget: nothing to fold yet
    prompt = await store.build_prompt(AGENT, episode, "Be brief.", 1000, policy=quiet)
    assert prompt.summarized is not None and prompt.summarized.folded == 0
    assert prompt.tail_messages == 16 and prompt.dropped_messages == 0
    # with the old default window (8192) named, the same budget folds at once
    other = await _episode(store, messages)
    named = await store.build_prompt(AGENT, other, "Be brief.", 1000,
                                     policy={**quiet, "window_tokens": 8192})
    assert named.summarized is not None and named.summarized.folded > 0


async def test_a_long_rule_summary_keeps_every_early_name(store: MemoryStore) -> None:
    episode = await _episode(store, trip(40))
    await store.summarize_conversation(AGENT, episode, force=True,
                                       policy={"mode": "rule", "protect_tail": 2,
                                               "window_tokens": 4096})
    summary = await store.conversation_summary(AGENT, episode)
    assert summary.watermark_seq == 77 and len(summary.text) <= 1638  # 10% of the window
    for name in ("Beatrice", "Lisbon", "Gulbenkian", "Alfama", "Tomasz", "Madrid"):
        assert name in summary.text, name
    assert "museum number" in summary.text  # the newest turns are there too
    entities = summary.facets.entities
    assert {"Beatrice", "Lisbon", "Tomasz", "Madrid"} <= set(entities)
    assert not any(e[0].isdigit() for e in entities), entities
    assert any("decided" in d for d in summary.facets.decisions)
