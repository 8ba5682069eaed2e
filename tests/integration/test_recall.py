"""Hybrid recall against the real database and the real bundled model."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from nous_memory import MemoryStore
from nous_memory.config import Settings
from nous_memory.context.recall import MAX_K, Priors, RecallItem
from nous_memory.embeddings import SentenceTransformerEmbedder
from nous_memory.errors import InvalidInputError
from nous_memory.memories.kinds import Kind, Status


@pytest.fixture(params=["exact", "index"])
async def store(request: pytest.FixtureRequest, database_url: str,
                embedder: SentenceTransformerEmbedder) -> AsyncIterator[MemoryStore]:
    """Every test runs both ways: a small agent read whole and ranked in memory, and the
    index path a large agent takes (HNSW and GIN; on tables this small the planner may
    still scan, but every index-mode branch of the statement runs)."""
    limit = Settings().recall_exact_scan_max_rows if request.param == "exact" else 0
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                data_dir=Path("/nonexistent-unused"),
                                recall_exact_scan_max_rows=limit) as opened:
        yield opened


REF = re.compile(r"^(decision|fact|episode|procedure|censor):[0-9a-f]{8}(#c\d+)?$")

SMALL_TALK = [
    "Morning! How was the weekend?", "Pretty quiet, we mostly stayed home.",
    "Did you watch the game on Saturday?", "Only the second half, it was a close one.",
    "The weather is finally getting warmer.", "Yes, I might go for a run later.",
]


def assert_final_order(items: Sequence[RecallItem]) -> None:
    """No item is ahead of one closer in meaning without keyword evidence the other
    lacks (or a speaker or time prior): context/ordering.py's rule 2."""
    for i, ahead in enumerate(items):
        for behind in items[i + 1:]:
            if ahead.scores.cosine is None or behind.scores.cosine is None:
                continue
            if behind.scores.cosine > ahead.scores.cosine and not (
                    ahead.scores.speaker or ahead.scores.time):
                assert not set(ahead.scores.matched) <= set(behind.scores.matched), (
                    ahead.ref, behind.ref)


async def closed_episode(store: MemoryStore, agent: str, turns: list[tuple[str, str]],
                         first_id: int = 1) -> Any:
    """An episode of (speaker, text) turns, closed without an LLM and fully processed."""
    episode = await store.start_episode(agent, participants=sorted({s for s, _ in turns}))
    await store.append(agent, episode.id, [
        {"role": "user" if i % 2 == 0 else "assistant", "name": speaker, "content": text,
         "metadata": {"dia_id": f"D1:{first_id + i}"}} for i, (speaker, text) in enumerate(turns)])
    await store.close_episode(agent, episode.id)
    await store.worker().drain()
    return episode


async def test_exact_words_come_back_as_chunks_after_close(store: MemoryStore) -> None:
    turns = [(("Ana", "Bo")[i % 2], text) for i, text in enumerate(SMALL_TALK)]
    turns.insert(3, ("Ana", "My locker code at the gym is Zanzibar-4471, don't tell anyone."))
    episode = await closed_episode(store, "ana", turns)
    assert (await store.get_episode("ana", episode.id)).episode.state == "closed"

    result = await store.recall("ana", "what is the Zanzibar-4471 locker code", k=5)
    assert result.items and result.k == 5
    top = result.items[0]
    assert top.source == "chunk" and top.kind is Kind.EPISODE
    assert top.memory_id == episode.id and top.chunk_no is not None
    assert top.ref == f"episode:{episode.id.hex[:8]}#c{top.chunk_no}"
    assert "Zanzibar-4471" in top.text
    assert {"dia_id": "D1:4"} in top.message_metadata
    assert top.scores.text_rank == 1 and top.scores.cosine is not None
    assert top.tokens > 0 and top.status is Status.ACTIVE
    for item in result.items:
        assert REF.match(item.ref), item.ref
    assert_final_order(result.items)
    assert result.timings.total_ms >= result.timings.sql_ms > 0


async def test_archived_episode_stays_reachable_without_its_transcript(
        store: MemoryStore) -> None:
    """The archive job moves the transcript out; recall reads only chunks and summaries."""
    turns = [("Ana", "We booked the cabin at Lake Kerrigan for the second week of July."),
             ("Bo", "Great, I'll bring the kayak.")]
    episode = await closed_episode(store, "ana", turns)
    conn = await asyncpg.connect(store.dsn)
    try:
        await conn.execute("DELETE FROM episode_messages WHERE agent_id = 'ana'")
        await conn.execute("UPDATE memories SET status = 'archived' WHERE agent_id = 'ana'")
    finally:
        await conn.close()
    result = await store.recall("ana", "Kerrigan cabin booking", k=3)
    chunk = next(i for i in result.items if i.source == "chunk")
    assert chunk.memory_id == episode.id and chunk.status is Status.ARCHIVED
    assert "Lake Kerrigan" in chunk.text
    summary = [i for i in result.items if i.source == "memory"]
    assert summary and summary[0].memory_id == episode.id


async def test_deleted_episode_and_other_agents_never_appear(store: MemoryStore) -> None:
    text = "The spare key is under the blue flowerpot by the back door."
    mine = await store.remember("me", "fact", content=text)
    theirs = await store.remember("them", "fact", content=text)
    their_episode = await closed_episode(store, "them", [("Cy", text), ("Di", "Got it.")])
    gone = await closed_episode(store, "me", [("Ed", text + " (old house)")])
    await store.delete("me", gone.id)

    result = await store.recall("me", "where is the spare key", k=MAX_K)
    ids = {item.memory_id for item in result.items}
    assert ids == {mine.id}
    assert theirs.id not in ids and their_episode.id not in ids
    assert result.items[0].scores.vector_rank == 1


async def _prefer_indexes(store: MemoryStore) -> None:
    """A table this small is scanned exactly (seq scan or btree, then sort): make new
    sessions take the HNSW index, the path a large agent takes."""
    conn = await asyncpg.connect(store.dsn)
    try:
        name = await conn.fetchval("SELECT current_database()")
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            await conn.execute(f'ALTER DATABASE "{name}" SET {setting} = off')
    finally:
        await conn.close()


async def _recall_refs(store: MemoryStore, queries: tuple[str, ...], exact_scan_max_rows: int,
                       scan_pool: bool = True) -> tuple[list[list[str]], int]:
    """Recall through a store of its own; also how many blocks of the memories HNSW index
    its sessions read (the buffer manager counts every block; pgvector does not count
    index scans).  A session flushes its statistics when it ends, before it leaves
    pg_stat_activity, so the count is read once the store's sessions are gone."""
    others = ("SELECT COALESCE(array_agg(pid), '{}') FROM pg_stat_activity "
              "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    reads = ("SELECT idx_blks_hit + idx_blks_read FROM pg_statio_user_indexes "
             "WHERE indexrelname = 'memories_embedding_hnsw'")
    conn = await asyncpg.connect(store.dsn)
    try:
        baseline = set(await conn.fetchval(others))
        before = await conn.fetchval(reads)
        async with MemoryStore.open(database_url=store.dsn, embedder=store.embedder,
                                    recall_exact_scan_max_rows=exact_scan_max_rows,
                                    recall_scan_pool=scan_pool) as own:
            assert own._db.has_scan_pool is scan_pool
            refs = []
            for query in queries:  # every kind; one kind; superseded rows too
                for options in ({}, {"kinds": ["fact"]}, {"include_superseded": True}):
                    result = await own.recall("mix", query, k=30, **options)
                    refs.append([i.ref for i in result.items])
        for _ in range(200):
            if set(await conn.fetchval(others)) <= baseline:
                break
            await asyncio.sleep(0.05)
        return refs, int(await conn.fetchval(reads)) - int(before)
    finally:
        await conn.close()


async def test_kind_filter_returns_k_with_a_selective_filter(store: MemoryStore) -> None:
    """40+ closer facts (this agent's and another's) come before any decision in the HNSW
    graph: the iterative scan must keep going until k decisions pass the filter."""
    query = "grocery shopping list for the weekend"
    near = [{"kind": "fact", "content": f"Weekend grocery list item {i}: buy fresh produce "
             f"number {i} at the market"} for i in range(60)]
    await store.remember_many("shop", near)
    await store.remember_many("other", near)
    far = [{"kind": "decision", "description": f"Deploy release {i} of the billing service "
            "on a Tuesday"} for i in range(12)]
    decisions = {m.id for m in await store.remember_many("shop", far)}

    await _prefer_indexes(store)
    async with MemoryStore.open(database_url=store.dsn, embedder=store.embedder,
                                recall_exact_scan_max_rows=0) as fresh:
        result = await fresh.recall("shop", query, kinds=["decision"], k=10)
        facts = await fresh.recall("shop", query, kinds=[Kind.FACT], k=7)
    assert len(result.items) == 10
    assert {i.memory_id for i in result.items} <= decisions
    assert all(i.kind is Kind.DECISION and i.scores.vector_rank for i in result.items)
    assert len(facts.items) == 7 and all(i.kind is Kind.FACT for i in facts.items)


async def _mixed_agent(store: MemoryStore) -> None:
    # importance and confidence spread the priors' factors over their whole range, so
    # priors reorder items whose fused scores are close
    await store.remember_many("mix", [
        {"kind": "fact", "content": f"Invoice {i} for the {topic} project was paid on day {i}",
         "importance": (i * 7 % 11) / 10, "confidence": (i * 3 % 11) / 10}
        for i, topic in enumerate(["garden", "kitchen", "roof", "garage", "attic"] * 8)])
    await store.remember_many("mix", [
        {"kind": "decision", "description": f"Chose supplier {i} for the kitchen tiles"}
        for i in range(10)])
    await closed_episode(store, "mix", [
        ("Ana", "The roof repair quote came in at 4,200 euros."),
        ("Bo", "That is more than the kitchen tiles cost."),
        ("Ana", "Let's pay the roof invoice after the garden work.")])


async def _mixed_agent_with_history(store: MemoryStore) -> None:
    """The mixed agent plus rows recall must treat differently: another agent with the
    same texts, archived and superseded memories, a deleted episode's chunks."""
    await _mixed_agent(store)
    await store.remember_many("other", [
        {"kind": "fact", "content": f"Invoice {i} for the roof project was paid on day {i}"}
        for i in range(20)])
    gone = await closed_episode(store, "mix", [
        ("Ana", "The roof invoice from the old house was paid twice."),
        ("Bo", "Kitchen tiles supplier refunded the garden deposit.")], first_id=10)
    await store.delete("mix", gone.id)
    conn = await asyncpg.connect(store.dsn)
    try:
        await conn.execute(
            "UPDATE memories SET status = CASE WHEN n % 2 = 0 THEN 'archived' "
            "ELSE 'superseded' END FROM (SELECT id, row_number() OVER (ORDER BY id) AS n "
            "FROM memories WHERE agent_id = 'mix' AND kind = 'fact' ORDER BY id LIMIT 8) t "
            "WHERE memories.agent_id = 'mix' AND memories.id = t.id")
    finally:
        await conn.close()


async def test_top_k_is_the_prefix_of_a_deeper_recall(store: MemoryStore) -> None:
    """Candidates that their priors cannot lift into the top k are cut before the details
    are read: the cut must never change what comes back."""
    await _mixed_agent(store)
    for query in ("roof invoice", "kitchen tiles supplier", "what did we pay for the garden"):
        deep = await store.recall("mix", query, k=MAX_K)
        refs = [i.ref for i in deep.items]
        assert len(refs) > 20
        for k in (1, 2, 5, 10, 20):
            shallow = await store.recall("mix", query, k=k)
            assert [i.ref for i in shallow.items] == refs[:k], (query, k)


async def test_exact_and_index_scans_agree(store: MemoryStore) -> None:
    """A small agent's vectors are scanned exactly, a large one's through HNSW: on a small
    graph both find the same items in the same order."""
    await _mixed_agent_with_history(store)
    queries = ("roof invoice", "kitchen tiles supplier", "garden project payments")
    await _prefer_indexes(store)
    exact, exact_reads = await _recall_refs(store, queries, 20_000)
    via_index, index_reads = await _recall_refs(store, queries, 0)
    # without the scan pool (behind a transaction-mode pooler) the settings are per call
    pooled, pooled_reads = await _recall_refs(store, queries, 20_000, scan_pool=False)
    # planning reads the index's metapage (once per plan); a scan reads many blocks
    assert exact_reads <= 3 and pooled_reads <= 3 and index_reads >= 30, (
        exact_reads, pooled_reads, index_reads)
    assert exact == via_index == pooled
    assert all(len(refs) == 30 for refs in exact)
    assert any("#c" in ref for refs in exact for ref in refs)  # chunks compete too


HOSTILE = [
    "'", "''", '"', '"unterminated', "\\", "\\'", "a & b | !c", "(", ")", "<->", "<2>",
    ":*", "a:*", "!!!", "-", "- -", "OR", "AND NOT OR", "foo -bar", "x' | 'y", "the of and",
    "what is it?", "日本語のテキスト", "🙂🚀", "Ünïcödé façade naïve", "\u200b\u200b",
    "DROP TABLE memories; --", "%_%", "a" * 3000, "word " * 500, "1:56 pm on 8 May, 2023",
    "e-mail: x@y.z https://example.com/a?b=c&d=e", "$1 $2 ::tsquery", "\t\n tabs\r\n",
    "O'Reilly's C++ book", "'a':1 'b':2",
]


async def test_any_text_is_a_valid_query(store: MemoryStore) -> None:
    await store.remember("h", "fact", content="O'Reilly published the C++ book in 2023")
    for query in HOSTILE:
        result = await store.recall("h", query, k=3)
        assert len(result.items) == 1, query  # the vector leg always answers


async def test_punctuated_words_still_match_in_full_text(store: MemoryStore) -> None:
    target = await store.remember("h", "fact", content="O'Reilly published the C++ book")
    await store.remember("h", "fact", content="The bakery opens at seven in the morning")
    result = await store.recall("h", "O'Reilly's C++", k=2)
    assert result.items[0].memory_id == target.id
    assert result.items[0].scores.text_rank == 1
    assert result.items[1].scores.text_rank is None


async def test_superseded_facts_only_when_asked(store: MemoryStore) -> None:
    old = await store.learn_fact("f", "The project deadline is March 3")
    new = await store.learn_fact("f", "The project deadline is March 10")
    assert old.fact is not None and new.fact is not None
    default = await store.recall("f", "project deadline", k=10)
    assert [i.memory_id for i in default.items] == [new.fact.id]
    both = await store.recall("f", "project deadline", k=10, include_superseded=True)
    by_id = {i.memory_id: i for i in both.items}
    assert set(by_id) == {old.fact.id, new.fact.id}
    assert by_id[old.fact.id].status is Status.SUPERSEDED


async def test_priors_are_bounded_and_compose_the_final_score(store: MemoryStore) -> None:
    low = await store.remember("p", "fact", content="Tim prefers tea in the afternoon",
                               importance=0.0, confidence=0.0)
    high = await store.remember("p", "fact", content="Tim prefers tea in the afternoon",
                                importance=1.0, confidence=1.0)
    result = await store.recall("p", "what does Tim drink in the afternoon", k=2)
    by_id = {i.memory_id: i.scores for i in result.items}
    bounds = Priors()
    for scores in by_id.values():
        assert 0 <= scores.recency <= bounds.recency
        assert abs(scores.importance) <= bounds.importance / 2
        assert abs(scores.confidence) <= bounds.confidence / 2
        assert 0 <= scores.use <= bounds.use
        factor = 1 + scores.recency + scores.importance + scores.confidence + scores.use
        assert 0.9 <= factor <= 1.2
        assert scores.final == pytest.approx(scores.fused * factor)
    assert by_id[high.id].importance == pytest.approx(bounds.importance / 2)
    assert by_id[low.id].confidence == pytest.approx(-bounds.confidence / 2)
    # adjacent ranks fuse to nearly equal scores: the priors decide the order
    assert by_id[high.id].final / by_id[high.id].fused > by_id[low.id].final / by_id[low.id].fused
    assert result.items[0].memory_id == high.id


async def test_a_chunk_spoken_by_someone_the_query_names_comes_first(
        store: MemoryStore) -> None:
    """Two people say the same words; a question naming one of them ranks that one's
    turn first (the speaker prior), and a question naming nobody leaves it at 0."""
    episode = await store.start_episode("sp", participants=["Mary Ann", "Olga"])
    await store.append("sp", episode.id, [
        {"role": "user", "name": "Olga", "content": "I adopted a grey cat from the shelter."},
        {"role": "assistant", "name": "Mary Ann",
         "content": "I adopted a grey cat from the shelter."}])
    await store.close_episode("sp", episode.id)
    await store.worker().drain()
    bounds = Priors()
    # k=5: the rules learn a fact from the user turn, which may rank beside the chunks
    for name, other in (("Mary Ann", "Olga"), ("Olga", "Mary Ann")):
        result = await store.recall("sp", f"What pet did {name.lower()} adopt?", k=5)
        chunks = [i for i in result.items if i.source == "chunk"]
        assert [c.text.split(":")[0] for c in chunks] == [name, other]
        assert chunks[0].scores.speaker == pytest.approx(bounds.speaker)
        assert chunks[1].scores.speaker == 0
        factor = 1 + sum(getattr(chunks[0].scores, p)
                         for p in ("recency", "importance", "confidence", "use", "speaker"))
        assert chunks[0].scores.final == pytest.approx(chunks[0].scores.fused * factor)
    # "Mary" alone is not the whole name; nobody named, nobody nudged
    for query in ("What pet did Mary adopt?", "Who adopted a grey cat?"):
        result = await store.recall("sp", query, k=3)
        assert all(i.scores.speaker == 0 for i in result.items)


async def test_precomputed_query_embedding_gives_the_same_ranking(store: MemoryStore) -> None:
    await store.remember_many("v", [{"kind": "fact", "content": c} for c in (
        "The cat sleeps on the sofa", "Invoices are due on the first Monday",
        "The router password is taped under the desk")])
    query = "when do I have to pay the invoices"
    (vector,) = await store.embedder.embed([query])
    given = await store.recall("v", query, query_embedding=list(vector))
    computed = await store.recall("v", query)
    assert [i.ref for i in given.items] == [i.ref for i in computed.items]
    assert given.items[0].text.startswith("Invoices")


BAD_CALLS: list[tuple[dict[str, Any], str]] = [
    ({"query": ""}, "query"), ({"query": "   "}, "query"), ({"query": 42}, "query"),
    ({"query": "x" * 5000}, "query"), ({"query": "a\x00b"}, "query"),
    ({"k": 0}, "k"), ({"k": MAX_K + 1}, "k"), ({"k": True}, "k"), ({"k": "5"}, "k"),
    ({"kinds": ["fact", "gossip"]}, "kinds[1]"), ({"kinds": []}, "kinds"),
    ({"kinds": "fact"}, "kinds"), ({"include_superseded": "yes"}, "include_superseded"),
    ({"query_embedding": [0.1, 0.2]}, "query_embedding"),
    ({"query_embedding": [0.0] * 384}, "query_embedding"),
    ({"query_embedding": [float("nan")] * 384}, "query_embedding"),
    ({"agent": ""}, "agent_id"),
]


async def test_bad_input_names_the_field(store: MemoryStore) -> None:
    for call, field in BAD_CALLS:
        args = {"agent": "x", "query": "hello"} | call
        agent, query = args.pop("agent"), args.pop("query")
        with pytest.raises(InvalidInputError) as caught:
            await store.recall(agent, query, **args)
        assert caught.value.field == field, call
