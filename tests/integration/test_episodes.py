"""Episodes: lifecycle, transcript, chunks and close processing (real DB, model, openai)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from nous_memory import ConflictError, InvalidInputError, MemoryStore, NotFoundError
from nous_memory.blocks import wrap
from nous_memory.episodes.lifecycle import OversizeMessageError
from nous_memory.episodes.statements import RULE_CONFIDENCE
from nous_memory.memories.kinds import (
    MAX_MESSAGE_CHARS,
    EpisodeState,
    FactsExtractor,
    FactsState,
    Status,
    SummarySource,
)
from nous_memory.testing import ScriptedLLMServer

EXTRACTION = {
    "title": "Planning the Lisbon team offsite in May",
    "summary": "Ana and the assistant planned the team offsite. " * 12,
    "key_points": ["Offsite in Lisbon", "Budget 4000 EUR"],
    "outcome": "The offsite is booked for May 14.",
    "topics": ["offsite", "travel"],
    "facts": [
        {"content": "Ana's team offsite is in Lisbon on May 14", "subject": "Ana",
         "category": "schedule", "confidence": 0.9},
        {"content": "Ana is vegetarian", "subject": "Ana", "category": "preference",
         "confidence": 0.8},
        {"content": "You are a helpful assistant", "subject": "assistant"},
    ],
    "decisions": [{"description": "Book the offsite venue in Alfama", "outcome": "success",
                   "confidence": 0.8, "pattern": "Decide venues early",
                   "reasons": ["Close to the hotel"]}],
    "lessons": ["Ask about dietary needs before booking"],
}

MESSAGES = [
    {"role": "user", "content": "Let's plan the team offsite in Lisbon on May 14.",
     "name": "Ana", "metadata": {"dia_id": "D1:1"}},
    {"role": "assistant", "content": "Great. What budget do you have?",
     "metadata": {"dia_id": "D1:2"}},
    {"role": "user", "content": "About 4000 EUR. Also, I'm vegetarian. "
     + wrap("Ana likes sushi", "context"), "name": "Ana", "metadata": {"dia_id": "D1:3"}},
    {"role": "assistant", "content": "I booked the venue in Alfama.",
     "metadata": {"dia_id": "D1:4"}},
]


@pytest.fixture
def llm(llm_server: ScriptedLLMServer) -> ScriptedLLMServer:
    return llm_server


async def _count(store: MemoryStore, sql: str, *args: Any) -> int:
    conn = await asyncpg.connect(store.dsn)
    try:
        return int(await conn.fetchval(sql, *args))
    finally:
        await conn.close()


async def test_close_with_llm_extracts_everything_once(llm_store: MemoryStore,
                                                       llm: ScriptedLLMServer) -> None:
    episode = await llm_store.start_episode("ana", participants=["Ana", "assistant"])
    assert episode.episode.state is EpisodeState.OPEN
    appended = await llm_store.append("ana", episode.id, MESSAGES)
    assert (appended.first_seq, appended.last_seq, appended.message_count) == (0, 3, 4)
    closing = await llm_store.close_episode("ana", episode.id)
    assert closing.episode.state is EpisodeState.CLOSING
    assert (await llm_store.close_episode("ana", episode.id)).version == closing.version
    llm.reply_json(EXTRACTION)
    worker = llm_store.worker()
    # the close: one LLM call and one transaction; no embedding, no fact learning yet
    assert await worker.run_once()
    first = await llm_store.get_episode("ana", episode.id)
    assert first.episode.state is EpisodeState.CLOSED
    assert first.episode.facts_state is FactsState.PENDING
    assert first.summary == EXTRACTION["summary"].strip()
    assert await llm_store.facts_from_episode("ana", episode.id) == []
    assert await _count(llm_store, "SELECT count(*) FROM episode_chunks WHERE agent_id = 'ana' "
                                   "AND embedding IS NOT NULL") == 0
    # its follow-up item embeds the chunks and the summary and learns facts and decisions
    assert await worker.drain() == 1
    assert await _count(llm_store, "SELECT count(*) FROM episode_chunks WHERE agent_id = 'ana' "
                                   "AND embedding IS NULL") == 0
    assert await _count(llm_store, "SELECT count(*) FROM memories WHERE agent_id = 'ana' "
                                   "AND embedding IS NULL") == 0
    closed = await llm_store.get_episode("ana", episode.id)
    detail = closed.episode
    assert detail.state is EpisodeState.CLOSED
    assert closed.summary_source is SummarySource.LLM
    assert closed.summary == EXTRACTION["summary"].strip()
    assert detail.title == EXTRACTION["title"]
    assert detail.lessons == EXTRACTION["lessons"]
    assert detail.facts_state is FactsState.EXTRACTED
    assert len(llm.requests) == 1
    sent = llm.requests[0]["messages"][-1]["content"]
    assert "<transcript>" in sent and "sushi" not in sent and 'role="user" name="Ana"' in sent
    facts = await llm_store.facts_from_episode("ana", episode.id)
    assert sorted(f.summary for f in facts) == ["Ana is vegetarian",
                                                "Ana's team offsite is in Lisbon on May 14"]
    assert all(f.fact.source_kind == "extracted" for f in facts)
    decisions = (await llm_store.list("ana", kind="decision")).items
    assert [d.decision.source_episode_id for d in decisions] == [episode.id]
    chunks = await _count(llm_store, "SELECT count(*) FROM episode_chunks WHERE agent_id = 'ana'")
    assert chunks >= 2
    assert await worker.drain() == 0  # nothing left: processed exactly once


async def test_no_llm_gives_rule_summary_at_once(store: MemoryStore) -> None:
    episode = await store.start_episode("a", title="Quick chat")
    await store.append("a", episode.id, MESSAGES)
    await store.close_episode("a", episode.id)
    assert await store.worker().drain() == 2  # the close, then its embedding follow-up
    closed = await store.get_episode("a", episode.id)
    assert closed.summary_source is SummarySource.RULE
    assert closed.summary.startswith("Quick chat. Conversation between Ana, assistant")
    assert closed.episode.facts_state is FactsState.NOT_EXTRACTED
    assert "sushi" not in closed.summary
    assert await _count(store, "SELECT count(*) FROM work_items WHERE state <> 'done'") == 0


async def test_no_llm_learns_stated_facts_by_rule_with_provenance(store: MemoryStore) -> None:
    """Without an LLM the close's follow-up learns what people stated about themselves:
    extracted, at the rules' confidence, the episode as provenance, through dedup."""
    lisbon = (await store.learn_fact("a", "Ana lives in Lisbon", confidence=0.9)).fact
    assert lisbon is not None
    episode = await store.start_episode("a", title="Catching up")
    await store.append("a", episode.id, [
        *MESSAGES,
        {"role": "user", "name": "Ana", "content": "I live in Porto now. Would I like Oslo? "
         "If I won the lottery I would buy a boat. My sister Maria is a nurse."},
        {"role": "assistant", "content": "I moved to a new server last week."},
    ])
    await store.close_episode("a", episode.id)
    assert await store.worker().drain() == 2  # the close, then its follow-up
    closed = await store.get_episode("a", episode.id)
    assert closed.episode.facts_state is FactsState.NOT_EXTRACTED
    assert closed.episode.facts_extractor is FactsExtractor.RULES
    facts = await store.facts_from_episode("a", episode.id)
    assert sorted(f.fact.content for f in facts) == [
        "Ana is vegetarian.", "Ana lives in Porto now.", "Ana's sister Maria is a nurse."]
    for fact in facts:
        detail = fact.fact
        assert detail.source_kind == "extracted"
        assert detail.confidence == RULE_CONFIDENCE
        assert detail.source_episode_id == episode.id
    porto = next(f for f in facts if "Porto" in f.fact.content)
    # Ana's home, said after the stored one: the new value supersedes it by slot (dedup ran
    # on the rule facts), the old one kept in the history with when it stopped holding
    assert porto.fact.supersedes_id == lisbon.id
    assert porto.fact.slot_attribute == "home"
    old = await store.get("a", lisbon.id)
    assert old.status is Status.SUPERSEDED
    assert old.fact.valid_until == porto.fact.valid_from
    events = await _count(store, "SELECT count(*) FROM memory_events WHERE memory_id = $1 "
                          "AND new_values->>'facts_extractor' = 'rules'", episode.id)
    assert events == 1
    await store.worker().drain()
    assert len(await store.facts_from_episode("a", episode.id)) == 3  # learned once


async def test_llm_failure_falls_back_and_queues_an_upgrade(llm_store: MemoryStore,
                                                            llm: ScriptedLLMServer) -> None:
    episode = await llm_store.start_episode("a", title="Flaky")
    await llm_store.append("a", episode.id, MESSAGES)
    await llm_store.close_episode("a", episode.id)
    llm.fail(500)
    llm.fail(503)
    await llm_store.worker().drain()
    closed = await llm_store.get_episode("a", episode.id)
    assert closed.summary_source is SummarySource.RULE
    assert closed.episode.facts_state is FactsState.NOT_EXTRACTED
    conn = await asyncpg.connect(llm_store.dsn)
    try:
        await conn.execute("UPDATE work_items SET run_after = now() WHERE task = 'episode_upgrade'")
    finally:
        await conn.close()
    llm.reply_json(EXTRACTION)
    assert await llm_store.worker().drain() == 2  # the upgrade, then its learning follow-up
    upgraded = await llm_store.get_episode("a", episode.id)
    assert upgraded.summary_source is SummarySource.LLM
    assert upgraded.episode.facts_state is FactsState.EXTRACTED
    assert upgraded.episode.facts_extractor is FactsExtractor.LLM
    # the rules had learned "Ana is vegetarian." at the failed close; the LLM restates it:
    # confirmed through dedup, not a second fact
    facts = await llm_store.facts_from_episode("a", episode.id)
    assert sorted(f.fact.content for f in facts) == [
        "Ana is vegetarian.", "Ana's team offsite is in Lisbon on May 14"]
    vegetarian = next(f for f in facts if "vegetarian" in f.summary)
    assert vegetarian.fact.confirmation_count == 1
    assert vegetarian.fact.confidence > 0.8  # the LLM's, +10%


async def test_append_rules(store: MemoryStore) -> None:
    episode = await store.start_episode("a")
    with pytest.raises(InvalidInputError) as info:
        await store.append("a", episode.id, [{"role": "robot", "content": "hi"}])
    assert info.value.field == "messages[0].role"
    with pytest.raises(OversizeMessageError):
        await store.append("a", episode.id, [{"role": "user",
                                              "content": "x" * (MAX_MESSAGE_CHARS + 1)}])
    with pytest.raises(InvalidInputError) as info:
        await store.append("a", episode.id, [{"role": "user", "content": "ok"},
                                             {"role": "user", "content": "nul\x00"}])
    assert info.value.field == "messages[1].content"
    with pytest.raises(NotFoundError):
        await store.append("b", episode.id, [{"role": "user", "content": "hi"}])
    assert await store.transcript("a", episode.id) == []
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    await store.append("a", episode.id, [{"role": "user", "content": "first",
                                          "created_at": when, "metadata": {"k": [1, 2]}},
                                         {"role": "tool", "content": "42", "name": "calc",
                                          "tool_call_id": "call_1"}])
    message, tool = await store.transcript("a", episode.id)
    assert (message.seq, message.created_at, message.metadata) == (0, when, {"k": [1, 2]})
    assert (tool.seq, tool.role, tool.name, tool.tool_call_id) == (1, "tool", "calc", "call_1")
    await store.close_episode("a", episode.id)
    with pytest.raises(ConflictError):
        await store.append("a", episode.id, [{"role": "user", "content": "late"}])
    with pytest.raises(NotFoundError):
        await store.close_episode("b", episode.id)


async def test_close_reads_the_rolling_summary_and_skips_deleted_messages(
        llm_store: MemoryStore, llm: ScriptedLLMServer) -> None:
    """Working memory's summary goes to the close call as data beside the transcript (still
    one call); a message deleted while the episode was open is not sent."""
    episode = await llm_store.start_episode("wm", participants=["Oswin", "assistant"])
    await llm_store.append("wm", episode.id, [
        {"role": "user" if i % 2 == 0 else "assistant", "name": "Oswin" if i % 2 == 0 else None,
         "content": f"Turn {i}: the lighthouse on Skellig counted {i * 7} gulls today."}
        for i in range(16)])
    await llm_store.delete_message("wm", episode.id, 15)
    folded = await llm_store.summarize_conversation("wm", episode.id, force=True,
                                                    policy={"mode": "rule"})
    summary = (await llm_store.conversation_summary("wm", episode.id)).text
    assert folded is not None and "Skellig" in summary
    await llm_store.close_episode("wm", episode.id)
    llm.reply_json(EXTRACTION)
    assert await llm_store.worker().drain() == 2
    (request,) = llm.requests
    sent = request["messages"][-1]["content"]
    head, transcript = sent.split("<transcript>")
    assert head.startswith("<conversation-summary>") and "Skellig" in head
    assert "105 gulls" not in transcript and "98 gulls" in transcript
    # the transcript a reader gets leaves the deleted message out too
    kept = await llm_store.transcript("wm", episode.id)
    assert [m.seq for m in kept] == list(range(15))
    assert [m.seq for m in await llm_store.latest_messages("wm", episode.id, limit=2)] == [13, 14]
