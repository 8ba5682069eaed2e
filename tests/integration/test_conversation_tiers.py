"""A conversation built with start/append/close goes through the storage tiers: its
transcript is the episode's detail for tier 2, the trim moves the transcript beyond a hot
head to cold storage (chunks stay hot), expand reaches the cold part, archive takes the
whole and restore brings it back byte for byte."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nous_memory import MemoryStore
from nous_memory.context.model import Tier
from nous_memory.testing import ScriptedLLMServer
from tests.integration.db_helpers import sql

from .jobs_helpers import NOW

AGENT = "talker"
TOPICS = ("the garden shed", "the bicycle repair", "the kitchen tiles", "the piano lessons",
          "the tax forms", "the dentist visit", "the bookshelf", "the roof gutters")
LATE = "The harbour ferry to Ostrava leaves at 07:40 on Thursday, platform nine."


def _messages() -> list[dict[str, Any]]:
    """Thirty turns of about 120 characters, the distinctive one near the end."""
    start = NOW - timedelta(days=40)
    out = []
    for i in range(30):
        topic = TOPICS[i % len(TOPICS)]
        text = (LATE if i == 27 else
                f"Turn {i}: we talked about {topic} again, and what to do next week about "
                f"{topic} before the weather changes.")
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": text,
                    "name": "Dana" if i % 2 == 0 else None,
                    "created_at": (start + timedelta(minutes=i)).isoformat()})
    return out


async def _conversation(store: MemoryStore, agent: str = AGENT) -> Any:
    episode = await store.start_episode(agent, title="Chores",
                                        started_at=NOW - timedelta(days=40, minutes=1))
    await store.append(agent, episode.id, _messages())
    await store.close_episode(agent, episode.id)
    await store.worker().drain()
    return episode


def _line(text: str, ref: str) -> str:
    """The context line of one item, with its continuation lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"[{ref}] "))
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return "\n".join(lines[start:end])


async def _hot_seqs(store: MemoryStore, episode_id: Any) -> list[int]:
    rows = await sql(store, "SELECT seq FROM episode_messages WHERE agent_id = $1 AND "
                            "episode_id = $2 ORDER BY seq", AGENT, episode_id)
    return [r["seq"] for r in rows]


async def test_transcript_is_the_detail_for_tier_two(store: MemoryStore) -> None:
    episode = await _conversation(store)
    ctx = await store.assemble_context(AGENT, "When does the harbour ferry to Ostrava leave?",
                                       budget_tokens=2000)
    item = next(i for i in ctx.items if i.ref == f"episode:{episode.id.hex[:8]}")
    # a transcript of about 3,500 characters makes a complex record: the query-relevant
    # truncation of the transcript, not the one-line rule summary
    assert item.tier is Tier.TRUNCATION and ctx.cache_misses == 1
    assert "Ostrava" in _line(ctx.text, item.ref)


async def test_trim_moves_the_transcript_tail_cold_and_back(store: MemoryStore) -> None:
    episode = await _conversation(store)
    await _conversation(store, "other-talker")  # another agent's, trimmed by the same run
    recent = await store.start_episode(AGENT, title="Recent")
    await store.append(AGENT, recent.id, [{"role": "user", "content": "x " * 1500}])
    await store.close_episode(AGENT, recent.id)
    await store.worker().drain()
    chunks_before = await sql(store, "SELECT count(*) AS n FROM episode_chunks")
    digest = await sql(store, "SELECT hashtextextended(jsonb_agg(to_jsonb(m) ORDER BY m.seq)"
                              "::text, 0) AS h FROM episode_messages m WHERE agent_id = $1 "
                              "AND episode_id = $2", AGENT, episode.id)

    result = await store.maintenance.trim(now=NOW, agent_id=AGENT)

    assert result.counts["trimmed_transcripts"] == 1  # not the recent one, not the other agent
    hot = await _hot_seqs(store, episode.id)
    # the head: every message that starts within the first 2,000 characters
    lengths = [len(m["content"]) for m in _messages()]
    head = sum(1 for i in range(30) if sum(lengths[:i]) < 2_000)
    assert hot == list(range(head)) and 0 < head < 30
    assert result.counts["trimmed_messages"] == 30 - head
    cold = await sql(store, "SELECT start_offset, reason, jsonb_array_length(messages) AS n "
                            "FROM memory_archive WHERE agent_id = $1 AND memory_id = $2",
                     AGENT, episode.id)
    assert [(r["start_offset"], r["reason"], r["n"]) for r in cold] == [
        (head, "trim", 30 - head)]
    memory = await store.get(AGENT, episode.id)
    assert memory.episode.storage == "trimmed"
    assert (await sql(store, "SELECT count(*) AS n FROM episode_chunks")) == chunks_before
    assert (await store.maintenance.trim(now=NOW, agent_id=AGENT)).counts[
        "trimmed_transcripts"] == 0

    # recall still finds the cold message through its hot chunk; expand reaches it
    found = await store.recall(AGENT, "harbour ferry to Ostrava", k=3)
    chunk = next(i for i in found.items if i.source == "chunk")
    assert "Ostrava" in chunk.text
    expanded = await store.expand(AGENT, chunk.ref)
    assert expanded.transcript is not None and expanded.transcript.from_cold_storage
    assert expanded.transcript.total_messages == 30
    assert expanded.transcript.messages[0].content == LATE
    assert [(p.part, p.reason, p.size) for p in expanded.archived] == [
        ("transcript", "trim", 30 - head)]

    # restore puts the tail back beside the head, verified against the whole transcript
    back = await store.restore(AGENT, episode.id)
    assert back.messages == 30 and back.previous_storage == "trimmed"
    assert await _hot_seqs(store, episode.id) == list(range(30))
    again = await sql(store, "SELECT hashtextextended(jsonb_agg(to_jsonb(m) ORDER BY m.seq)"
                             "::text, 0) AS h FROM episode_messages m WHERE agent_id = $1 "
                             "AND episode_id = $2", AGENT, episode.id)
    assert again == digest


async def test_archive_after_trim_takes_the_whole_transcript(store: MemoryStore) -> None:
    episode = await _conversation(store)
    await store.maintenance.trim(now=NOW, agent_id=AGENT)
    archived = await store.maintenance.archive(now=NOW, agent_id=AGENT, ended_before=NOW)
    assert archived.counts["archived_messages"] == 30
    cold = await sql(store, "SELECT part, reason, start_offset, messages FROM memory_archive "
                            "WHERE agent_id = $1 AND memory_id = $2", AGENT, episode.id)
    assert [(r["part"], r["reason"], r["start_offset"]) for r in cold] == [
        ("transcript", "archive", 0)]
    assert await _hot_seqs(store, episode.id) == []
    back = await store.restore(AGENT, episode.id)
    assert back.messages == 30
    assert await _hot_seqs(store, episode.id) == list(range(30))


async def test_tier_two_llm_extraction_reads_the_transcript(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    episode = await llm_store.start_episode(AGENT, title="Chores")
    await llm_store.append(AGENT, episode.id, _messages())
    await llm_store.close_episode(AGENT, episode.id)
    llm_server.reply_json({"title": "Chores and a ferry", "summary": "Dana and the assistant "
                           "went over household chores and a ferry.", "facts": [],
                           "decisions": []})
    await llm_store.worker().drain()
    query = "When does the harbour ferry to Ostrava leave?"
    first = await llm_store.assemble_context(AGENT, query)
    assert first.cache_misses == 1 and first.extraction_queued == 1
    await llm_store.contexts.drain()
    llm_server.reply_json({"relevant": "Ferry to Ostrava: 07:40 Thursday, platform nine."})
    await llm_store.worker().drain()
    record = llm_server.requests[-1]["messages"][-1]["content"]
    assert LATE in record and "Turn 0:" in record  # the whole transcript, head and tail
    second = await llm_store.assemble_context(AGENT, query)
    item = next(i for i in second.items if i.ref == f"episode:{episode.id.hex[:8]}")
    assert item.tier is Tier.EXTRACTION
    assert "07:40 Thursday, platform nine" in _line(second.text, item.ref)


async def test_an_upgrade_after_the_trim_reads_the_cold_tail(
        llm_store: MemoryStore, llm_server: ScriptedLLMServer) -> None:
    """A conversation closed while the LLM failed is upgraded later; when the trim moved
    its transcript's tail to cold storage meanwhile, the upgrade still sends it whole."""
    episode = await llm_store.start_episode(AGENT, title="Chores")
    await llm_store.append(AGENT, episode.id, _messages())
    await llm_store.close_episode(AGENT, episode.id)
    for _ in range(2):  # both attempts of the close's one call
        llm_server.fail(500)
    await llm_store.worker().drain()  # the rule fallback; an upgrade is queued for later
    assert (await llm_store.get(AGENT, episode.id)).episode.facts_state == "not_extracted"
    assert (await llm_store.maintenance.trim(now=NOW, agent_id=AGENT)).counts[
        "trimmed_transcripts"] == 1
    await sql(llm_store, "UPDATE work_items SET run_after = now() WHERE agent_id = $1 "
                         "AND task = 'episode_upgrade'", AGENT)
    llm_server.requests.clear()
    llm_server.reply_json({"title": "Chores and a ferry", "summary": "Dana and the assistant "
                           "went over chores and a ferry.", "facts": [], "decisions": []})
    await llm_store.worker().drain()
    sent = llm_server.requests[0]["messages"][-1]["content"]
    assert "Ostrava" in sent and "Turn 0:" in sent and "Turn 29:" in sent
    upgraded = await llm_store.get(AGENT, episode.id)
    assert upgraded.summary_source == "llm"
