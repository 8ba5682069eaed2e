"""The domain calls behind the inspector: the possible-conflict queue and its decisions,
purge erasing cold storage too, tag filters, LLM usage by day, the agent's work queue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nous_memory import ConflictError, InvalidInputError, MemoryStore, NotFoundError
from nous_memory.llm import CallOutcome, LLMCall, PostgresCallRecorder
from nous_memory.memories.records import Memory

A = "agent-a"
B = "agent-b"


async def flagged_pair(store: MemoryStore, agent: str = A) -> tuple[Memory, Memory]:
    first = await store.learn_fact(agent, "Tim's manager is Priya")
    second = await store.learn_fact(agent, "Tim's manager is Daniel")
    assert first.fact is not None and second.fact is not None
    assert second.related == [first.fact.id], second
    return first.fact, second.fact


async def test_queue_lists_each_flagged_pair_once(store: MemoryStore) -> None:
    priya, daniel = await flagged_pair(store)
    await flagged_pair(store, B)
    (pair,) = await store.fact_conflicts(A)
    assert {pair.first.id, pair.second.id} == {priya.id, daniel.id}
    with pytest.raises(InvalidInputError, match="limit"):
        await store.fact_conflicts(A, limit=0)


async def test_keep_both_clears_the_flags_both_ways(store: MemoryStore) -> None:
    priya, daniel = await flagged_pair(store)
    kept = await store.resolve_conflict(A, priya.id, daniel.id, "keep_both")
    assert [m.status.value for m in kept] == ["active", "active"]
    assert all(m.fact.conflicts_with == [] for m in kept)
    assert await store.fact_conflicts(A) == []
    events = await store.history(A, daniel.id)
    assert events[-1].new_values == {"conflicts_with": [], "resolution": "keep_both",
                                     "other": str(priya.id)}
    assert events[-1].old_values == {"conflicts_with": [str(priya.id)]}
    with pytest.raises(ConflictError, match="not flagged"):
        await store.resolve_conflict(A, priya.id, daniel.id, "keep_both")


async def test_keep_one_supersedes_the_other(store: MemoryStore) -> None:
    priya, daniel = await flagged_pair(store)
    kept, dropped = await store.resolve_conflict(A, daniel.id, priya.id, "keep_one")
    assert kept.status.value == "active" and dropped.status.value == "superseded"
    assert dropped.fact.superseded_by_id == daniel.id
    chain = (await store.fact_history(A, daniel.id)).chain
    assert [m.id for m in chain] == [priya.id, daniel.id]
    recalled = await store.recall(A, "Who is Tim's manager?")
    assert priya.id not in {item.memory_id for item in recalled.items}
    assert (await store.history(A, priya.id))[-1].event == "superseded"


async def test_merge_rewords_the_kept_fact(store: MemoryStore) -> None:
    priya, daniel = await flagged_pair(store)
    with pytest.raises(InvalidInputError, match="content"):
        await store.resolve_conflict(A, priya.id, daniel.id, "merge", content="  ")
    merged, dropped = await store.resolve_conflict(
        A, priya.id, daniel.id, "merge", content="Tim's manager was Priya, now Daniel")
    assert merged.summary == "Tim's manager was Priya, now Daniel" and merged.version >= 2
    assert dropped.status.value == "superseded"
    assert [e.event for e in await store.history(A, priya.id)][-2:] == ["updated", "updated"]


async def test_resolve_refuses_what_is_not_a_pair(store: MemoryStore) -> None:
    priya, daniel = await flagged_pair(store)
    other_priya, _ = await flagged_pair(store, B)
    with pytest.raises(NotFoundError):  # another agent's fact is unknown here
        await store.resolve_conflict(A, priya.id, other_priya.id, "keep_both")
    with pytest.raises(InvalidInputError, match="resolution"):
        await store.resolve_conflict(A, priya.id, daniel.id, "drop_both")
    with pytest.raises(InvalidInputError, match="only a merge"):
        await store.resolve_conflict(A, priya.id, daniel.id, "keep_one", content="x")
    with pytest.raises(InvalidInputError, match="other_id"):
        await store.resolve_conflict(A, priya.id, priya.id, "keep_both")
    assert len(await store.fact_conflicts(A)) == 1  # nothing changed
    assert len(await store.fact_conflicts(B)) == 1


async def test_purge_erases_cold_storage(store: MemoryStore) -> None:
    ended = datetime.now(UTC) - timedelta(days=120)
    episode = await store.remember(A, "episode", title="Kitchen renovation",
                                   detail="We compared three quotes. " * 200,
                                   started_at=(ended - timedelta(hours=1)).isoformat(),
                                   ended_at=ended.isoformat())
    await store.archive_episodes(A, ended_before=ended + timedelta(seconds=1))
    async with store._db.acquire() as conn:
        cold = "SELECT count(*) FROM memory_archive WHERE agent_id = $1 AND memory_id = $2"
        assert await conn.raw.fetchval(cold, A, episode.id) == 1
        await store.delete(A, episode.id, purge=True)
        assert await conn.raw.fetchval(cold, A, episode.id) == 0


async def test_list_by_tag(store: MemoryStore) -> None:
    await store.remember_many(A, [{"kind": "fact", "content": f"fact {i}",
                                   "tags": ["core"] if i < 3 else []} for i in range(6)])
    page = await store.list(A, tag="core")
    assert sorted(m.summary for m in page.items) == ["fact 0", "fact 1", "fact 2"]
    assert (await store.list(B, tag="core")).items == []
    with pytest.raises(InvalidInputError, match="tag"):
        await store.list(A, tag="")


async def test_llm_usage_by_day_and_work_queue(store: MemoryStore) -> None:
    recorder = PostgresCallRecorder(store._db)
    now = datetime.now(UTC)
    for agent, outcome, when in ((A, CallOutcome.OK, now), (A, CallOutcome.TIMEOUT, now),
                                 (A, CallOutcome.OK, now - timedelta(days=2)),
                                 (A, CallOutcome.OK, now - timedelta(days=40)),
                                 (B, CallOutcome.OK, now)):
        answered = outcome.answered
        await recorder.record(LLMCall(
            agent_id=agent, purpose="episode_close", model="m",
            prompt_tokens=100 if answered else 0, completion_tokens=20 if answered else 0,
            tokens_estimated=False, latency_ms=5, outcome=outcome, error=None,
            created_at=when))
    days = await store.llm_usage_by_day(A, days=30)
    assert [(d.calls, d.failed_calls, d.prompt_tokens) for d in days] == [(2, 1, 100),
                                                                         (1, 0, 100)]
    assert days[0].day > days[1].day
    episode = await store.start_episode(A, title="chat")
    await store.close_episode(A, episode.id)
    queue = await store.work_queue(A)
    assert queue.counts == {"episode_close": {"pending": 1}}
    assert [w.memory_id for w in queue.items] == [episode.id]
    assert (await store.work_queue(B)).items == []


async def test_an_update_names_every_bad_field_at_once(store: MemoryStore) -> None:
    decision = await store.remember(A, "decision", description="Use Postgres")
    with pytest.raises(InvalidInputError) as caught:
        await store.update(A, decision.id, confidence=2, importance="lots", tags=[""])
    assert sorted(p.field for p in caught.value.problems) == [
        "confidence", "importance", "tags.0"]
    assert (await store.get(A, decision.id)).version == 1
