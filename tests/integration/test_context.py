"""assemble_context on a real database and the real embedder: sections, always-on items,
agent scoping, tier-2 extraction (cached / sync / off) through the scripted LLM server."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from pgvector import Vector
from pgvector.asyncpg import register_vector

from nous_memory import MemoryStore
from nous_memory.context.assembly import CENSOR_LIMIT, PINNED_FACT_LIMIT, PROFILE_CATEGORIES
from nous_memory.context.model import Section, Tier
from nous_memory.context.now import NOW_LIMIT, UPCOMING_LIMIT
from nous_memory.db import QUERIES
from nous_memory.errors import InvalidInputError
from nous_memory.memories.slot_words import CORE_ATTRIBUTES
from nous_memory.testing import ScriptedLLMServer
from nous_memory.tokens import count_tokens
from tests.conftest import LLMStoreFactory
from tests.integration.db_helpers import sql

MIGRATION = ("The billing database migration was planned in detail. " * 3
             + "We chose Sunday 14 April at 02:00 UTC as the billing migration window. "
             + "The team discussed snacks and the office plants at length. " * 14
             + "Carol owns the rollback runbook for the billing migration.")
LLM_TEXT = "Billing migration window: Sunday 14 April, 02:00 UTC; Carol owns the rollback."


async def _seed(store: MemoryStore, agent: str = "a") -> dict[str, Any]:
    made = await store.remember_many(agent, [
        {"kind": "fact", "content": "The billing service runs on PostgreSQL 16"},
        {"kind": "fact", "content": "Ana prefers short answers without emoji",
         "category": "preference"},
        {"kind": "decision", "description": "Migrate billing during a weekend night window",
         "outcome": "pending", "confidence": 0.8},
        {"kind": "censor", "trigger_pattern": "drop table", "action": "block",
         "reason": "production data must never be dropped by hand"},
        {"kind": "censor", "trigger_pattern": "send email", "action": "warn",
         "reason": "emails need approval"},
        {"kind": "episode", "title": "Billing migration planning", "detail": MIGRATION},
    ])
    return {m.summary.split()[0] if m.kind.value != "episode" else "episode": m for m in made}


async def test_sections_refs_and_always_on_items(store: MemoryStore) -> None:
    seeded = await _seed(store)
    await store.remember("b", "fact", content="Agent b's billing secret is 42")
    ctx = await store.assemble_context("a", "Should I drop table invoices before the billing "
                                            "migration?", budget_tokens=1500)
    assert ctx.tokens_used == count_tokens(ctx.text) <= 1500
    assert ctx.text.startswith('<nous-memory kind="context">')
    refs = {i.ref: i for i in ctx.items}
    for item in ctx.items:
        assert f"[{item.ref}]" in ctx.text
    censor = next(i for i in ctx.items if i.kind == "censor")
    assert "BLOCK: drop table" in ctx.text and censor.section is Section.CENSORS
    assert "send email" not in ctx.text  # a censor that does not match is not shown
    # a pinned preference unrelated to the query stays out (pins are bounded by relevance)
    pref = seeded["Ana"]
    assert f"fact:{pref.id.hex[:8]}" not in refs and "emoji" not in ctx.text
    assert "secret" not in ctx.text  # never another agent's memories
    assert ctx.text.index("## Rules (censors)") < ctx.text.index("## Decisions") \
        < ctx.text.index("## Facts")
    # deterministic
    again = await store.assemble_context("a", "Should I drop table invoices before the "
                                              "billing migration?", budget_tokens=1500)
    assert again.text == ctx.text
    # the complex episode without an LLM: truncated now, nothing queued
    episode = next(i for i in ctx.items if i.kind == "episode")
    assert episode.tier is Tier.TRUNCATION and ctx.cache_misses == 1
    assert ctx.extraction_queued == 0
    assert "Sunday 14 April" in ctx.text  # the query-relevant sentence survived


async def test_small_budget_and_section_choice(store: MemoryStore) -> None:
    await _seed(store)
    await store.remember_many("a", [{"kind": "fact", "content": f"Billing invoice run {n} "
                                     "happens on the first working day of the month"}
                                    for n in range(5)])
    ctx = await store.assemble_context("a", "billing migration", budget_tokens=64,
                                       sections=["facts"])
    assert count_tokens(ctx.text) <= 64
    assert all(i.section is Section.FACTS for i in ctx.items)
    assert ctx.dropped  # the other facts did not fit


async def test_bad_input_is_typed(store: MemoryStore) -> None:
    cases = [({"query": " "}, "query"), ({"query": "q", "budget_tokens": 10}, "budget_tokens"),
             ({"query": "q", "sections": ["gossip"]}, "sections.gossip"),
             ({"query": "q", "extraction": "eventually"}, "extraction")]
    for kwargs, field in cases:
        query = kwargs.pop("query")
        with pytest.raises(InvalidInputError) as caught:
            await store.assemble_context("a", query, **kwargs)
        assert caught.value.field == field


async def test_access_counts_are_updated_off_the_hot_path(store: MemoryStore) -> None:
    seeded = await _seed(store)
    ctx = await store.assemble_context("a", "billing database", budget_tokens=800)
    await store.contexts.drain()
    served = {i.id for i in ctx.items}
    rows = await sql(store, "SELECT id, access_count, last_accessed_at FROM memories "
                             "WHERE agent_id = 'a'")
    for row in rows:
        assert (row["access_count"] == 1) == (row["id"] in served)
        assert (row["last_accessed_at"] is not None) == (row["id"] in served)
    assert seeded["The"].id in served


async def test_cached_miss_queues_llm_extraction_then_hits(llm_store: MemoryStore,
                                                           llm_server: ScriptedLLMServer) -> None:
    await _seed(llm_store)
    query = "When is the billing migration window?"
    first = await llm_store.assemble_context("a", query)
    assert first.cache_misses == 1 and first.cache_hits == 0 and first.extraction_queued == 1
    await llm_store.contexts.drain()
    llm_server.reply_json({"relevant": LLM_TEXT})
    assert await llm_store.worker().drain() == 1
    rows = await sql(llm_store, "SELECT source, content, model FROM extraction_cache")
    assert [(r["source"], r["content"]) for r in rows] == [("llm", LLM_TEXT)]
    calls = await sql(llm_store, "SELECT purpose, outcome FROM llm_calls")
    assert [(c["purpose"], c["outcome"]) for c in calls] == [("context_extract", "ok")]
    # the same query (case and spacing do not matter) now hits the cache
    second = await llm_store.assemble_context("a", "  when is the BILLING migration window?")
    assert second.cache_hits == 1 and second.cache_misses == 0
    assert second.extraction_queued == 0
    episode = next(i for i in second.items if i.kind == "episode")
    assert episode.tier is Tier.EXTRACTION and LLM_TEXT in second.text
    # asking again while a request is queued does not queue twice
    await llm_store.assemble_context("a", "who owns the rollback?")
    await llm_store.assemble_context("a", "who owns the rollback?")
    await llm_store.contexts.drain()
    pending = await sql(llm_store, "SELECT count(*) AS n FROM work_items "
                                    "WHERE task = 'context_extract' AND state = 'pending'")
    assert pending[0]["n"] == 1


async def test_failed_extraction_caches_the_truncation_on_the_last_try(
        open_llm_store: LLMStoreFactory, llm_server: ScriptedLLMServer) -> None:
    async with open_llm_store(llm_max_attempts=1) as store:
        await _seed(store)
        await store.assemble_context("a", "billing migration window")
        await store.contexts.drain()
        await sql(store, "UPDATE work_items SET attempts = 5")  # the next one is the last
        llm_server.fail(400, "bad request")
        assert await store.worker().drain() == 1
        rows = await sql(store, "SELECT source FROM extraction_cache")
        assert [r["source"] for r in rows] == ["rule"]
        again = await store.assemble_context("a", "billing migration window")
        assert again.cache_hits == 1 and again.extraction_queued == 0


async def test_sync_uses_the_llm_within_its_time_budget(
        open_llm_store: LLMStoreFactory, llm_server: ScriptedLLMServer) -> None:
    async with open_llm_store(extraction_sync_timeout_s=3.0) as store:
        await _seed(store)
        llm_server.reply_json({"relevant": LLM_TEXT})
        ctx = await store.assemble_context("a", "billing migration window", extraction="sync")
        assert LLM_TEXT in ctx.text and ctx.extraction_queued == 0
        await store.contexts.drain()
        rows = await sql(store, "SELECT source FROM extraction_cache")
        assert [r["source"] for r in rows] == ["llm"]
        # too slow: truncation now, and the extraction is queued for next time
        llm_server.reply_json({"relevant": "late"}, delay_s=10.0)
        slow = await store.assemble_context("a", "who owns the rollback runbook?",
                                            extraction="sync")
        assert slow.timings.total_ms < 9000  # the 3 s budget, not the 10 s reply
        episode = next(i for i in slow.items if i.kind == "episode")
        assert episode.tier is Tier.TRUNCATION and slow.extraction_queued == 1
        assert "late" not in slow.text


async def test_off_never_queues(llm_store: MemoryStore) -> None:
    await _seed(llm_store)
    ctx = await llm_store.assemble_context("a", "billing migration", extraction="off")
    await llm_store.contexts.drain()
    assert ctx.extraction_queued == 0 and ctx.cache_misses == 1
    rows = await sql(llm_store, "SELECT count(*) AS n FROM work_items "
                                 "WHERE task = 'context_extract'")
    assert rows[0]["n"] == 0


async def test_complex_procedure_uses_tier_two(store: MemoryStore) -> None:
    patterns = [f"Step {i}: check the {name} dashboard" for i, name in enumerate(
        ["billing", "latency", "error", "queue", "disk", "memory", "replica"])]
    await store.remember("a", "procedure", name="Incident triage", core_patterns=patterns)
    await store.remember("a", "procedure", name="Deploy", core_patterns=["run tests"])
    ctx = await store.assemble_context("a", "which dashboard shows replica lag?",
                                       sections=["procedures"], extraction="off")
    tiers = {i.ref.split(":")[0] + str(i.tier) for i in ctx.items}
    assert "proceduretruncation" in tiers and "proceduresummary" in tiers
    assert "replica dashboard" in ctx.text


async def test_concurrent_calls_share_nothing(store: MemoryStore) -> None:
    await _seed(store, "a")
    await _seed(store, "b")
    results = await asyncio.gather(*[
        store.assemble_context(agent, "billing migration", budget_tokens=600)
        for agent in ("a", "b", "a", "b")])
    assert results[0].text == results[2].text
    ids_a = {i.id for i in results[0].items}
    ids_b = {i.id for i in results[1].items}
    assert ids_a and ids_b and ids_a.isdisjoint(ids_b)


async def test_build_prompt_takes_its_context_block_from_assemble_context(
        store: MemoryStore) -> None:
    """The store wires working memory's context provider to assemble_context: the prompt
    gets the relevant memories, with refs, inside one marked block, within budget."""
    fact = await store.remember("wired", "fact", content="Ana is allergic to hazelnuts",
                                category="person")
    chat = await store.start_episode("wired", title="Baking")
    await store.append("wired", chat.id, [
        {"role": "user", "name": "Ana", "content": "Which cake should I bake tonight?"}])
    prompt = await store.build_prompt("wired", chat.id, "You help with recipes.", 600,
                                      query="cake with nuts for Ana", context_tokens=200)
    blocks_ = [m["content"] for m in prompt.messages
               if m["content"].startswith('<nous-memory kind="context">')]
    assert len(blocks_) == 1
    assert f"[fact:{fact.id.hex[:8]}]" in blocks_[0] and "hazelnuts" in blocks_[0]
    assert blocks_[0].count("<nous-memory") == 1  # marked once, not nested
    assert prompt.tokens <= 600
    too_small = await store.build_prompt("wired", chat.id, "You help with recipes.", 600,
                                         query="cake", context_tokens=40)
    assert not any("<nous-memory kind=\"context\">" in m["content"]
                   for m in too_small.messages)


async def test_a_failed_read_stops_the_others_and_takes_their_errors(
        store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The always-on and tier-2 reads run beside other work: when one fails, the call
    fails with its error, no read is left running, and the other's failure is taken too
    (asyncio would otherwise report an exception nobody retrieved)."""
    from nous_memory.errors import DatabaseError

    await _seed(store)
    reads: dict[str, asyncio.Task[Any]] = {}
    fetch = store._db.fetch

    async def failing(name: str, *args: Any) -> Any:
        if name in ("context_tier2", "context_always_on"):
            task = asyncio.current_task()
            assert task is not None
            reads[name] = task
        if name == "context_tier2":
            raise DatabaseError("tier-2 read failed")
        if name == "context_always_on":
            await asyncio.sleep(0.2)  # fails after the tier-2 read has failed
            raise DatabaseError("always-on read failed")
        return await fetch(name, *args)

    monkeypatch.setattr(store._db, "fetch", failing)
    with pytest.raises(DatabaseError, match="always-on"):
        await store.assemble_context("a", "when is the billing migration window?")
    assert set(reads) == {"context_tier2", "context_always_on"}
    assert all(task.done() for task in reads.values())
    # what asyncio checks when a task goes: a failure nobody retrieved gets logged
    assert not reads["context_tier2"]._log_traceback


def _index_names(node: dict[str, Any]) -> set[str]:
    own = {node["Index Name"]} if "Index Name" in node else set()
    return own.union(*(_index_names(child) for child in node.get("Plans", [])))


async def test_the_always_on_read_finds_the_pins_through_their_index(
        store: MemoryStore) -> None:
    """Every call reads the agent's pins: through facts_pinned (the facts the user stated,
    by category), not through all of the agent's facts, so the statement's conditions
    must stay the partial index's."""
    await _seed(store)
    await store.remember_many("a", [{"kind": "fact", "content": f"Ticket {n} was closed"}
                                    for n in range(30)])
    vector = (await store.embedder.embed(["billing"]))[0]
    conn = await asyncpg.connect(store.dsn)
    try:
        await register_vector(conn)
        await conn.execute("ANALYZE facts")
        await conn.execute("SET enable_seqscan = off")  # a table this small is read whole
        (plan,) = json.loads(await conn.fetchval(
            "EXPLAIN (FORMAT JSON) " + QUERIES["context_always_on"], "a",
            list(PROFILE_CATEGORIES), CENSOR_LIMIT, PINNED_FACT_LIMIT, Vector(vector),
            store.embedder.model_name, ["home"], ["billing"], list(CORE_ATTRIBUTES),
            NOW_LIMIT, datetime.now(UTC), UPCOMING_LIMIT, ["ana"]))
    finally:
        await conn.close()
    indexes = _index_names(plan["Plan"])
    # the pins, the current slot values and the plans each through their partial index
    assert {"facts_pinned", "facts_slot", "facts_events"} <= indexes, indexes
    assert "facts_pkey" not in indexes, indexes


async def test_an_extraction_of_a_record_changed_meanwhile_is_not_cached(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    seeded = await _seed(llm_store)
    await llm_store.assemble_context("a", "When is the billing migration window?")
    await llm_store.contexts.drain()
    extract = type(llm_store.extractor).llm_extract
    edits = []

    async def edited_meanwhile(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = await extract(self, *args, **kwargs)
        if not edits:  # the owner edits the episode while its extraction is computed
            edits.append(await llm_store.update("a", seeded["episode"].id,
                                                detail="Moved to a weekday morning."))
        return found

    monkeypatch.setattr(type(llm_store.extractor), "llm_extract", edited_meanwhile)
    llm_server.reply_json({"relevant": "from the old text"})
    llm_server.reply_json({"relevant": "from the new text"})
    await llm_store.worker().drain()
    assert await sql(llm_store, "SELECT content FROM extraction_cache") == []
    await asyncio.sleep(1.2)  # the item was put back, not failed: it runs again
    await llm_store.worker().drain()
    rows = await sql(llm_store, "SELECT content FROM extraction_cache")
    assert [r["content"] for r in rows] == ["from the new text"]
