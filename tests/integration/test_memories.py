"""The memory store on a real PostgreSQL with the real bundled embedding model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from uuid import uuid4

import asyncpg
import numpy as np
import pytest

from nous_memory import (
    Embedder,
    InvalidInputError,
    Kind,
    MemoryStore,
    NotFoundError,
    PayloadTooLargeError,
    Status,
    SummarySource,
)
from nous_memory.embeddings import Vector
from nous_memory.memories.kinds import MAX_TEXT_CHARS

DECISION = {"description": "Chose Postgres + pgvector for unified storage", "outcome": "success",
            "confidence": 0.85, "pattern": "Unify to reduce surface area"}


async def _embedding(store: MemoryStore, agent: str, memory_id: Any) -> Vector:
    conn = await asyncpg.connect(store.dsn)
    try:
        text = await conn.fetchval(
            "SELECT embedding::text FROM memories WHERE agent_id = $1 AND id = $2",
            agent, memory_id)
    finally:
        await conn.close()
    return np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)


async def _snapshot(store: MemoryStore) -> list[tuple[Any, ...]]:
    """Every stored row of the memory tables, to prove a rejected call changed nothing."""
    conn = await asyncpg.connect(store.dsn)
    try:
        rows = []
        for table in ("memories", "decisions", "facts", "episodes", "procedures", "censors",
                      "memory_events", "embedding_cache"):
            rows += [(table, *r.values()) for r in await conn.fetch(
                f"SELECT * FROM {table} ORDER BY 1, 2")]
        return rows
    finally:
        await conn.close()


async def test_each_kind_gets_its_template_summary(store: MemoryStore) -> None:
    decision = await store.remember("a", "decision", **DECISION)
    assert decision.kind is Kind.DECISION
    assert decision.summary == ("Chose Postgres + pgvector for unified storage [success] "
                                "[85% confidence] — Pattern: Unify to reduce surface area")
    fact = await store.remember("a", "fact", content="Tim likes Celsius", subject="Tim")
    assert fact.summary == "Tim likes Celsius"
    procedure = await store.remember(
        "a", "procedure", name="Architecture Decision", activation_count=7, success_count=6,
        effectiveness=0.92, core_patterns=["Query past decisions", "Evaluate 2+ alternatives",
                                           "Record with confidence", "Review in 30 days"])
    assert procedure.summary == ("Architecture Decision: Query past decisions; Evaluate 2+ "
                                 "alternatives; Record with confidence [92% effective]")
    censor = await store.remember("a", "censor", action="block",
                                  trigger_pattern="Pushing directly to main",
                                  reason="Always use feature branches + PR")
    assert censor.summary == "BLOCK: Pushing directly to main — Always use feature branches + PR"
    given = await store.remember("a", "episode", title="Standup", summary="We planned the week.")
    assert (given.summary, given.summary_source) == ("We planned the week.", SummarySource.GIVEN)
    rule = await store.remember("a", "episode", title="Standup",
                                detail="Ann demoed the importer. Bob is blocked on review.")
    assert rule.summary_source is SummarySource.RULE
    assert rule.summary == "Standup. Ann demoed the importer. Bob is blocked on review."
    for memory in (decision, fact, procedure, censor, given, rule):
        assert await store.get("a", memory.id) == memory


async def test_embedding_is_the_summary_embedding(store: MemoryStore,
                                                  embedder: Embedder) -> None:
    fact = await store.remember("a", "fact", content="The office is in Lisbon")
    stored = await _embedding(store, "a", fact.id)
    expected = embedder.encode(["The office is in Lisbon"])[0]
    assert float(stored @ expected) > 0.9999


async def test_update_recomputes_summary_embedding_and_audits(
        store: MemoryStore, embedder: Embedder) -> None:
    d = await store.remember("a", "decision", **DECISION)
    before = await _embedding(store, "a", d.id)
    updated = await store.update("a", d.id, outcome="failure", confidence=0.4, actor="tester")
    assert updated.summary == ("Chose Postgres + pgvector for unified storage [failure] "
                               "[40% confidence] — Pattern: Unify to reduce surface area")
    assert updated.version == 2 and updated.updated_at > d.updated_at
    assert await store.get("a", d.id) == updated
    after = await _embedding(store, "a", d.id)
    assert float(after @ embedder.encode([updated.summary])[0]) > 0.9999
    assert float(after @ before) < 0.9999
    history = await store.history("a", d.id)
    assert [e.event for e in history] == ["created", "updated"]
    change = history[-1]
    assert change.actor == "tester"
    assert change.old_values == {"outcome": "success", "confidence": 0.85, "summary": d.summary}
    assert change.new_values == {"outcome": "failure", "confidence": 0.4,
                                 "summary": updated.summary}


async def test_update_without_summary_change_keeps_embedding(store: MemoryStore) -> None:
    f = await store.remember("a", "fact", content="Ann likes tea", tags=["drinks"])
    before = await _embedding(store, "a", f.id)
    updated = await store.update("a", f.id, importance=0.9, tags=["drinks", "ann"])
    assert (updated.importance, updated.tags, updated.version) == (0.9, ["drinks", "ann"], 2)
    assert np.array_equal(before, await _embedding(store, "a", f.id))
    assert await store.update("a", f.id, importance=0.9) == updated  # no-op: no new version
    assert len(await store.history("a", f.id)) == 2


async def test_episode_rule_summary_follows_detail_but_given_summary_stays(
        store: MemoryStore) -> None:
    rule = await store.remember("a", "episode", title="Trip", detail="We went to Porto.")
    changed = await store.update("a", rule.id, detail="We went to Braga instead.")
    assert changed.summary == "Trip. We went to Braga instead."
    given = await store.remember("a", "episode", title="Trip", summary="A short trip.")
    kept = await store.update("a", given.id, detail="Long detail.")
    assert kept.summary == "A short trip." and kept.summary_source is SummarySource.GIVEN


async def test_concurrent_updates_all_apply(store: MemoryStore) -> None:
    f = await store.remember("a", "fact", content="Counter fact")
    values = [0.11, 0.22, 0.33, 0.44, 0.66]  # none equals the default 0.5: no no-op update
    await asyncio.gather(*(store.update("a", f.id, importance=v) for v in values))
    final = await store.get("a", f.id)
    assert final.version == 1 + len(values)
    assert final.importance in values
    assert len(await store.history("a", f.id)) == 1 + len(values)


async def test_tenant_isolation_on_every_operation(store: MemoryStore) -> None:
    mine = await store.remember("alice", "fact", content="Alice's secret is 42")
    assert (await store.list("bob")).items == []
    for call in (store.get("bob", mine.id), store.get("bob", mine.id, include_deleted=True),
                 store.update("bob", mine.id, content="stolen"), store.delete("bob", mine.id),
                 store.delete("bob", mine.id, purge=True), store.history("bob", mine.id)):
        with pytest.raises(NotFoundError):
            await call
    assert await store.counts("bob") == {}
    assert await store.get("alice", mine.id) == mine
    assert len(await store.history("alice", mine.id)) == 1


async def test_unknown_id_is_not_found(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        await store.get("a", uuid4())
    with pytest.raises(InvalidInputError) as info:
        await store.get("a", "not-a-uuid")
    assert info.value.field == "memory_id"


BAD_INPUTS: Sequence[tuple[str, dict[str, Any], str]] = [
    ("decision", {**DECISION, "confidence": 1.5}, "confidence"),
    ("decision", {**DECISION, "confidence": -0.01}, "confidence"),
    ("decision", {**DECISION, "outcome": "great"}, "outcome"),
    ("mood", {"content": "x"}, "kind"),
    ("fact", {"content": ""}, "content"),
    ("fact", {"content": "x" * (MAX_TEXT_CHARS + 1)}, "content"),
    ("fact", {"content": "nul\x00byte"}, "content"),
    ("censor", {"trigger_pattern": "t", "action": "nuke", "reason": "r"}, "action"),
]


@pytest.mark.parametrize(("kind", "fields", "field"), BAD_INPUTS)
async def test_bad_input_is_rejected_and_nothing_changes(
        store: MemoryStore, kind: str, fields: dict[str, Any], field: str) -> None:
    existing = await store.remember("a", "decision", **DECISION)
    before = await _snapshot(store)
    with pytest.raises(InvalidInputError) as info:
        await store.remember("a", kind, **fields)
    assert info.value.field == field
    update_fields = {k: v for k, v in fields.items() if k in DECISION} or {"confidence": 7}
    with pytest.raises(InvalidInputError):
        await store.update("a", existing.id, **update_fields)
    with pytest.raises(InvalidInputError):
        await store.remember_many("a", [{"kind": "fact", "content": "fine"},
                                        {"kind": kind, **fields}])
    assert await _snapshot(store) == before


async def test_oversize_text_is_payload_too_large(store: MemoryStore) -> None:
    with pytest.raises(PayloadTooLargeError):
        await store.remember("a", "fact", content="y" * (MAX_TEXT_CHARS + 1))


async def test_remember_many_batch_and_error_paths(store: MemoryStore) -> None:
    items = [{"kind": "fact", "content": f"Batch fact number {i}"} for i in range(70)]
    items.append({"kind": "decision", "description": "Batch decision", "confidence": 0.5})
    created = await store.remember_many("a", items)
    assert [m.summary for m in created[:2]] == ["Batch fact number 0", "Batch fact number 1"]
    assert created[-1].summary == "Batch decision [50% confidence]"
    assert (await store.counts("a")) == {"fact": {"active": 70}, "decision": {"active": 1}}
    for memory in (created[0], created[-1]):
        assert await store.get("a", memory.id) == memory
    with pytest.raises(InvalidInputError) as info:
        await store.remember_many("a", [{"kind": "fact", "content": "ok"},
                                        {"kind": "fact", "content": "a", "confidence": 3},
                                        {"content": "no kind"}])
    assert [p.field for p in info.value.problems] == ["items[1].confidence", "items[2].kind"]
    assert await store.remember_many("a", []) == []


class CountingEmbedder:
    """The real model, counting how many texts reach it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.model_name = inner.model_name
        self.dimension = inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


async def test_embedding_cache_embeds_each_text_once_per_agent(
        database_url: str, embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    async with MemoryStore.open(database_url=database_url, embedder=counting) as store:
        await store.remember("a", "fact", content="Paris is in France")
        await store.remember_many("a", [{"kind": "fact", "content": "Paris is in France"},
                                        {"kind": "fact", "content": "Rome is in Italy"},
                                        {"kind": "fact", "content": "Rome is in Italy"}])
        await store.remember("b", "fact", content="Paris is in France")
    assert counting.texts == ["Paris is in France", "Rome is in Italy", "Paris is in France"]


async def test_list_pages_filters_and_deleted(store: MemoryStore) -> None:
    made = [await store.remember("a", "fact", content=f"Listed fact {i}") for i in range(5)]
    decision = await store.remember("a", "decision", description="Listed decision")
    seen, cursor = [], None
    while True:
        page = await store.list("a", kind="fact", limit=2, cursor=cursor)
        seen += page.items
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [m.id for m in seen] == [m.id for m in reversed(made)]
    await store.delete("a", made[0].id)
    everything = await store.list("a")
    assert made[0].id not in {m.id for m in everything.items}
    assert decision.id in {m.id for m in everything.items}
    deleted = await store.list("a", status="deleted")
    assert [m.id for m in deleted.items] == [made[0].id]
    assert deleted.items[0].status is Status.DELETED
    for bad in ({"limit": 0}, {"limit": 501}, {"kind": "mood"}, {"status": "gone"},
                {"cursor": "garbage"}):
        with pytest.raises(InvalidInputError) as info:
            await store.list("a", **bad)  # type: ignore[arg-type]
        assert info.value.field == next(iter(bad))


async def test_soft_delete_then_purge(store: MemoryStore) -> None:
    f = await store.remember("a", "fact", content="Bob's phone is 555-0100")
    await store.delete("a", f.id, actor="user")
    with pytest.raises(NotFoundError):
        await store.get("a", f.id)
    gone = await store.get("a", f.id, include_deleted=True)
    assert gone.status is Status.DELETED and gone.deleted_at is not None
    with pytest.raises(NotFoundError):
        await store.delete("a", f.id)
    with pytest.raises(NotFoundError):
        await store.update("a", f.id, content="changed")
    await store.delete("a", f.id, purge=True)
    with pytest.raises(NotFoundError):
        await store.get("a", f.id, include_deleted=True)
    history = await store.history("a", f.id)
    assert [e.event for e in history] == ["created", "deleted", "purged"]
    assert all("555" not in str(e.old_values) + str(e.new_values) for e in history)
    conn = await asyncpg.connect(store.dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM facts WHERE agent_id = 'a'") == 0
        assert await conn.fetchval("SELECT count(*) FROM embedding_cache") == 0
    finally:
        await conn.close()


async def test_purge_clears_links_to_the_purged_memory(store: MemoryStore) -> None:
    """Provenance and supersession links to a purged memory become NULL (the purge clears
    them itself: the foreign keys have no ON DELETE SET NULL, which Citus refuses)."""
    episode = await store.remember("a", "episode", title="Planning call",
                                   detail="We planned the move.")
    learned = await store.remember("a", "fact", content="The move is on May 3",
                                   source_episode_id=str(episode.id))
    first = await store.learn_fact("a", "The project deadline is March 3")
    second = await store.learn_fact("a", "The project deadline is March 10")
    assert second.action == "superseded"
    await store.delete("a", episode.id, purge=True)
    await store.delete("a", second.fact.id, purge=True)
    conn = await asyncpg.connect(store.dsn)
    try:
        links = {r["memory_id"]: r for r in await conn.fetch(
            "SELECT memory_id, source_episode_id, supersedes_id, superseded_by_id FROM facts "
            "WHERE agent_id = 'a'")}
    finally:
        await conn.close()
    assert links[learned.id]["source_episode_id"] is None
    assert links[first.fact.id]["superseded_by_id"] is None
    assert (await store.get("a", learned.id)).summary == "The move is on May 3"


async def test_kind_cannot_change_and_summary_is_computed(store: MemoryStore) -> None:
    f = await store.remember("a", "fact", content="Fixed kind")
    with pytest.raises(InvalidInputError) as info:
        await store.update("a", f.id, kind="decision")
    assert info.value.field == "kind"
    with pytest.raises(InvalidInputError) as info:
        await store.update("a", f.id, summary="Sneaky")
    assert info.value.field == "summary"
    with pytest.raises(InvalidInputError):
        await store.update("a", f.id)
