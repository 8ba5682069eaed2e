"""expand (tier 3) on a real database: every field, history, supersession chain, source
episode with a transcript excerpt, cold storage (rows written directly, as the maintenance jobs
will), refs, agent scoping and the deferred access counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nous_memory import MemoryStore
from nous_memory.errors import InvalidInputError, NotFoundError
from nous_memory.memories.kinds import EpisodeDetail
from tests.integration.db_helpers import sql

MESSAGES = [
    {"role": "user", "name": "Ana", "content": "Hi! Quick question about my travel."},
    {"role": "assistant", "content": "Sure, what do you need?"},
    {"role": "user", "name": "Ana", "content": "My project deadline moved to March 10."},
    {"role": "assistant", "content": "Noted, I will plan around it."},
    {"role": "user", "name": "Ana", "content": "Book me a train to Lisbon on Friday."},
]


async def _closed_episode(store: MemoryStore, agent: str = "a") -> Any:
    episode = await store.start_episode(agent, title="Travel chat")
    await store.append(agent, episode.id, MESSAGES)
    await store.close_episode(agent, episode.id)
    await store.worker().drain()
    return episode


async def test_fact_with_chain_source_episode_and_excerpt(store: MemoryStore) -> None:
    episode = await _closed_episode(store)
    old = await store.learn_fact("a", "The project deadline is March 3")
    new = await store.learn_fact("a", "The project deadline is March 10",
                                 source_episode_id=episode.id, source_kind="extracted")
    assert old.fact is not None and new.fact is not None
    expanded = await store.expand("a", new.fact.id)
    assert expanded.ref == f"fact:{new.fact.id.hex[:8]}"
    assert expanded.memory.fact.content == (
        "The project deadline is March 10")
    assert [m.id for m in expanded.chain] == [old.fact.id, new.fact.id]
    assert [e.event for e in expanded.events] == ["created"]
    assert expanded.source_episode is not None and expanded.source_episode.id == episode.id
    assert expanded.transcript is not None and expanded.transcript.total_messages == 5
    contents = [m.content for m in expanded.transcript.messages]
    assert "My project deadline moved to March 10." in contents
    # the superseded version expands too, by its ref, and shows the same chain
    older = await store.expand("a", f"fact:{old.fact.id.hex[:8]}")
    assert older.memory.status.value == "superseded"
    assert [e.event for e in older.events] == ["created", "superseded"]
    assert [m.id for m in older.chain] == [old.fact.id, new.fact.id]


async def test_archived_detail_and_cold_transcript_are_restored(store: MemoryStore) -> None:
    episode = await _closed_episode(store)
    full = "First part of the story. " * 20 + "The archived ending: Ana booked the train."
    await store.update("a", episode.id, detail=full)
    cut = 100
    # what the trim / archive jobs do: keep the head hot, move the rest and the transcript
    rows = await sql(store, "SELECT seq, role, name, content, tokens, metadata, created_at "
                             "FROM episode_messages WHERE agent_id = 'a' AND episode_id = $1 "
                             "ORDER BY seq", episode.id)
    cold = [dict(r) | {"created_at": r["created_at"].isoformat(),
                       "metadata": json.loads(r["metadata"])} for r in rows]
    await sql(store, "INSERT INTO memory_archive (agent_id, memory_id, part, start_offset, "
                      "content, reason) VALUES ('a', $1, 'detail', $2, $3, 'trim')",
               episode.id, cut, full[cut:])
    await sql(store, "INSERT INTO memory_archive (agent_id, memory_id, part, messages, "
                      "reason) VALUES ('a', $1, 'transcript', $2::jsonb, 'archive')",
               episode.id, json.dumps(cold))
    await sql(store, "UPDATE episodes SET detail = left(detail, $2) "
                      "WHERE agent_id = 'a' AND memory_id = $1", episode.id, cut)
    await sql(store, "DELETE FROM episode_messages WHERE agent_id = 'a'")
    expanded = await store.expand("a", episode.id)
    assert expanded.detail_restored
    assert isinstance(expanded.memory.detail, EpisodeDetail)
    assert expanded.memory.detail.detail == full
    assert {(p.part, p.reason) for p in expanded.archived} == {
        ("detail", "trim"), ("transcript", "archive")}
    assert expanded.transcript is not None and expanded.transcript.from_cold_storage
    assert [m.seq for m in expanded.transcript.messages] == [0, 1, 2, 3, 4]
    assert expanded.transcript.messages[2].content.startswith("My project deadline")


async def test_chunk_ref_shows_the_chunk_s_messages(store: MemoryStore) -> None:
    episode = await _closed_episode(store)
    chunks = await sql(store, "SELECT chunk_no, first_seq FROM episode_chunks "
                               "WHERE agent_id = 'a' ORDER BY chunk_no")
    last = chunks[-1]
    expanded = await store.expand("a", f"episode:{episode.id.hex[:8]}#c{last['chunk_no']}")
    assert expanded.transcript is not None
    assert expanded.transcript.messages[0].seq == last["first_seq"]


async def test_refs_scoping_and_bad_input(store: MemoryStore) -> None:
    fact = await store.remember("a", "fact", content="The office wifi password rotates monthly")
    await store.remember("b", "fact", content="Agent b keeps its own secrets")
    with pytest.raises(NotFoundError):
        await store.expand("b", fact.id)  # another agent's id is simply not found
    with pytest.raises(NotFoundError):
        await store.expand("b", f"fact:{fact.id.hex[:8]}")
    with pytest.raises(NotFoundError):
        await store.expand("a", f"decision:{fact.id.hex[:8]}")  # the kind is part of a ref
    for bad in ("not-an-id", "gossip:1a2b3c4d", ""):
        with pytest.raises(InvalidInputError) as caught:
            await store.expand("a", bad)
        assert caught.value.field == "memory_id"
    await store.delete("a", fact.id)
    with pytest.raises(NotFoundError):
        await store.expand("a", fact.id)


async def test_served_items_count_as_accessed(store: MemoryStore) -> None:
    fact = await store.remember("a", "fact", content="Ana's train leaves at 9:40")
    store.access.delay_s = 60.0  # the deferred write cannot happen during this test
    await store.expand("a", fact.id)
    await store.expand("a", fact.id)
    untouched = await sql(store, "SELECT access_count FROM memories WHERE id = $1", fact.id)
    assert untouched[0]["access_count"] == 0  # not written on the read path
    await store.access.flush()
    after = await sql(store, "SELECT access_count, last_accessed_at, version FROM memories "
                              "WHERE id = $1", fact.id)
    assert after[0]["access_count"] == 2 and after[0]["last_accessed_at"] is not None
    assert after[0]["version"] == 1  # bookkeeping, not a change of the record
