"""Regression tests for defects found in review (each failed before its fix)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from nous_memory import InvalidInputError, MemoryStore
from nous_memory.facts.learning import LearnAction
from nous_memory.memories.kinds import EpisodeState, SummarySource
from nous_memory.testing import ScriptedLLMServer
from nous_memory.work.worker import MAX_ATTEMPTS


async def _sql(store: MemoryStore, sql: str, *args: Any) -> Any:
    conn = await asyncpg.connect(store.dsn)
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


@pytest.mark.parametrize(("old", "new"), [
    ("My favourite colour is blue", "My favourite colour is green"),
    ("User prefers tea in the morning", "User prefers coffee in the morning"),
])
async def test_swapped_value_is_never_confirmed_away(store: MemoryStore, old: str,
                                                     new: str) -> None:
    await store.learn_fact("a", old)
    result = await store.learn_fact("a", new)
    assert result.action is LearnAction.CREATED  # kept, flagged: the new value survives
    assert result.fact is not None and len(result.fact.fact.conflicts_with) == 1
    active = (await store.list("a", kind="fact", status="active")).items
    assert sorted(m.summary for m in active) == sorted([old, new])


async def test_deleted_idle_episode_does_not_stall_the_worker(store: MemoryStore) -> None:
    ghost = await store.start_episode("a", started_at=datetime.now(UTC) - timedelta(hours=2))
    await store.delete("a", ghost.id)
    live = await store.start_episode("a", title="Live")
    await store.append("a", live.id, [{"role": "user", "content": "Hello there, worker."}])
    await store.close_episode("a", live.id)
    stop = asyncio.Event()
    task = asyncio.create_task(store.worker(poll_s=0.05).run(stop))
    for _ in range(1200):  # up to a minute on a slow machine; exits once closed
        if (await store.get_episode("a", live.id)).episode.state is EpisodeState.CLOSED:
            break
        await asyncio.sleep(0.05)
    stop.set()
    await task
    assert (await store.get_episode("a", live.id)).episode.state is EpisodeState.CLOSED


async def test_exhausted_expired_lease_fails_and_close_requeues(store: MemoryStore) -> None:
    episode = await store.start_episode("a", title="Crashy")
    await store.append("a", episode.id, [{"role": "user", "content": "This one kills workers."}])
    await store.close_episode("a", episode.id)
    await _sql(store, "UPDATE work_items SET state = 'running', attempts = $1, "
               "lease_until = now() - interval '1 minute', locked_by = 'dead'", MAX_ATTEMPTS)
    assert await store.worker().drain() == 0
    (row,) = await _sql(store, "SELECT state FROM work_items")
    assert row["state"] == "failed"
    await store.close_episode("a", episode.id)  # closing again re-queues it
    assert await store.worker().drain() == 2  # the close, then its follow-up
    closed = await store.get_episode("a", episode.id)
    assert closed.episode.state is EpisodeState.CLOSED


async def test_last_attempt_closes_without_the_llm(llm_store: MemoryStore,
                                                   llm_server: ScriptedLLMServer) -> None:
    episode = await llm_store.start_episode("a", title="Unlucky")
    await llm_store.append("a", episode.id, [{"role": "user", "content": "Please summarise."}])
    await llm_store.close_episode("a", episode.id)
    await _sql(llm_store, "UPDATE work_items SET attempts = $1", MAX_ATTEMPTS - 1)
    assert await llm_store.worker().drain() == 2  # the close, then its follow-up
    closed = await llm_store.get_episode("a", episode.id)
    assert closed.episode.state is EpisodeState.CLOSED
    assert closed.summary_source is SummarySource.RULE
    assert len(llm_server.requests) == 0


async def test_llm_output_with_nul_and_huge_text_is_cleaned(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    episode = await llm_store.start_episode("a")
    await llm_store.append("a", episode.id, [{"role": "user", "content": "Talk to me."}])
    await llm_store.close_episode("a", episode.id)
    llm_server.reply_json({"title": "Bad\x00title " + "x" * 2000, "summary": "Sum\x00mary.",
                           "topics": ["t\x00"], "facts": [], "decisions": []})
    assert await llm_store.worker().drain() == 2  # the close, then its follow-up
    closed = await llm_store.get_episode("a", episode.id)
    assert closed.summary == "Summary."
    assert "\x00" not in (closed.episode.title or "")
    assert len(closed.episode.title or "") <= 500


async def test_update_persists_every_field_and_rehashes(store: MemoryStore) -> None:
    fact = await store.remember("a", "fact", content="User lives in Berlin Germany")
    await store.update("a", fact.id, source_kind="inferred", content="User lives in Paris France")
    again = await store.get("a", fact.id)
    assert again.fact.source_kind == "inferred"
    result = await store.learn_fact("a", "User lives in Berlin Germany")
    assert result.fact is not None
    assert result.action is not LearnAction.CONFIRMED or result.fact.id != fact.id
    episode = await store.remember("a", "episode", title="Call")
    await store.update("a", episode.id, user_id="u1", topics=["x"], key_points=["y"])
    stored = (await store.get("a", episode.id)).episode
    assert (stored.user_id, stored.topics, stored.key_points) == ("u1", ["x"], ["y"])


async def test_episode_state_is_managed(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError) as info:
        await store.remember("a", "episode", title="x", state="closing")
    assert info.value.field == "state"
    episode = await store.start_episode("a")
    with pytest.raises(InvalidInputError):
        await store.update("a", episode.id, state="closed")


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+05:00"])
async def test_timestamps_that_cannot_be_read_back_are_refused(store: MemoryStore,
                                                               stamp: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        await store.remember("a", "episode", title="t", started_at=stamp)
    assert info.value.field == "started_at"
    assert await store.counts("a") == {}


async def test_bad_list_and_transcript_arguments_are_field_errors(store: MemoryStore) -> None:
    page = await store.list("a", created_after="2024-01-01")  # ISO text is accepted
    assert page.items == []
    for bad in ({"created_after": [5]}, {"created_before": "yesterday"}, {"limit": "5"}):
        with pytest.raises(InvalidInputError) as info:
            await store.list("a", **bad)  # type: ignore[arg-type]
        assert info.value.field == next(iter(bad))
    episode = await store.start_episode("a")
    with pytest.raises(InvalidInputError) as info:
        await store.transcript("a", episode.id, from_seq=2**40)
    assert info.value.field == "from_seq"
    with pytest.raises(InvalidInputError) as info:
        await store.append("a", episode.id, [{"role": "user", "content": "x",
                                              "metadata": {"v": float("nan")}}])
    assert info.value.field == "messages[0].metadata"
    with pytest.raises(InvalidInputError) as info:
        await store.start_episode("a", participants="bob")  # type: ignore[arg-type]
    assert info.value.field == "participants"


async def test_foreign_key_errors_name_the_field(store: MemoryStore) -> None:
    other = await store.remember("b", "episode", title="B's episode")
    with pytest.raises(InvalidInputError) as info:
        await store.learn_fact("a", "Tim lives in Porto", source_episode_id=other.id)
    assert info.value.field == "source_episode_id"
    assert "b" not in info.value.reason.split()
    with pytest.raises(InvalidInputError) as info:
        await store.learn_fact("a", "", confidence=1.5)
    assert info.value.field == "confidence"


async def test_concurrent_first_opens_of_a_new_database(pg_server: Any,
                                                        tmp_path: Any) -> None:
    from nous_memory.testing import FakeEmbedder

    data_dir = pg_server.pgdata.parent

    async def open_once() -> None:
        async with MemoryStore.open(data_dir=data_dir, database_name="fresh_concurrent",
                                    embedder=FakeEmbedder()):
            pass

    await asyncio.gather(*(open_once() for _ in range(4)))
