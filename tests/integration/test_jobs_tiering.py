"""Trim, archive, restore and retention on a real database, with crafted ages (the
job's clock is injected: records ended N days before ``NOW``)."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest

from nous_memory import MemoryStore, SentenceTransformerEmbedder
from nous_memory.errors import ConflictError, DatabaseError, NotFoundError

from .jobs_helpers import NOW, long_text, old_episode, snapshot, sql

AGENT = "jobs-agent"


async def test_trim_moves_the_tail_losslessly_once(sweeps: str, store: MemoryStore,
                                                   database_url: str) -> None:
    assert store.maintenance.policy.sweeps == sweeps
    old = await old_episode(store, AGENT, ended_days_ago=40, detail=long_text(5_000, seed=1))
    text = old.detail.detail  # as stored (unicode normalised to NFC)
    assert text is not None
    short = await old_episode(store, AGENT, ended_days_ago=40, detail=long_text(1_999, 2))
    recent = await old_episode(store, AGENT, ended_days_ago=10, detail=long_text(4_000, 3))
    other = await old_episode(store, "other-agent", ended_days_ago=40,
                              detail=long_text(3_000, 4))

    result = await store.maintenance.trim(now=NOW)

    assert result.counts["trimmed"] == 2
    other_text = other.detail.detail
    assert other_text is not None
    assert result.counts["trimmed_chars"] == len(text) - 2_000 + len(other_text) - 2_000
    hot = await store.get(AGENT, old.id)
    assert hot.episode.detail == text[:2_000]
    assert hot.episode.storage == "trimmed"
    rows = await sql(database_url, "SELECT e.agent_id, left(e.detail, a.start_offset) "
                     "|| a.content AS whole, a.reason, a.start_offset FROM episodes e JOIN "
                     "memory_archive a ON a.agent_id = e.agent_id AND a.memory_id = "
                     "e.memory_id WHERE a.part = 'detail' ORDER BY e.agent_id")
    assert [(r["agent_id"], r["reason"], r["start_offset"]) for r in rows] == [
        (AGENT, "trim", 2_000), ("other-agent", "trim", 2_000)]
    assert rows[0]["whole"] == text
    for untouched in (short, recent):
        assert (await store.get(AGENT, untouched.id)).episode.storage == "hot"
    events = [e.event for e in await store.history(AGENT, old.id)]
    assert events == ["created", "trimmed"]
    assert (await store.get("other-agent", other.id)).episode.storage == "trimmed"

    again = await store.maintenance.trim(now=NOW)
    assert again.counts["trimmed"] == 0

    # the hot prefix cannot be edited while the rest is cold (it would corrupt the whole)
    with pytest.raises(ConflictError, match="restore it"):
        await store.update(AGENT, old.id, detail="rewritten")
    retitled = await store.update(AGENT, old.id, title="Still editable")
    assert retitled.episode.detail == text[:2_000]
    await store.restore(AGENT, old.id)
    edited = await store.update(AGENT, old.id, detail="rewritten after restore")
    assert edited.episode.detail == "rewritten after restore"


async def test_archive_then_restore_round_trips_byte_for_byte(sweeps: str,
                                                             store: MemoryStore,
                                                             database_url: str) -> None:
    assert store.maintenance.policy.sweeps == sweeps
    remembered = await old_episode(store, AGENT, ended_days_ago=120,
                                   detail=long_text(7_321, seed=5))
    detail = remembered.detail.detail  # as stored (unicode normalised to NFC)
    assert detail is not None and len(detail) > 7_000
    live = await store.start_episode(AGENT, title="Trip planning")
    base = NOW - timedelta(days=100)
    messages = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": long_text(50 + 37 * i, seed=10 + i) + "\n\ttabs and\nnewlines",
                 "created_at": (base + timedelta(minutes=i, microseconds=123457)).isoformat(),
                 "metadata": {"source": f"turn-{i}", "score": 0.1 + i, "nested": {"ü": [i]}}}
                for i in range(7)]
    await store.append(AGENT, live.id, messages)
    await store.close_episode(AGENT, live.id)
    await store.worker().drain()
    transcript_before = await store.transcript(AGENT, live.id)
    chunks_before = await sql(database_url, "SELECT count(*) AS n FROM episode_chunks "
                              "WHERE agent_id = $1 AND episode_id = $2", AGENT, live.id)
    before = {m: await store.get(AGENT, m) for m in (remembered.id, live.id)}

    trimmed = await store.maintenance.trim(now=NOW)
    assert trimmed.counts["trimmed"] == 1  # the live one has no detail
    archived = await store.maintenance.archive(now=NOW)
    assert archived.counts["archived"] == 2
    assert archived.counts["archived_messages"] == 7
    moved = {m: [e for e in await store.history(AGENT, m) if e.event == "archived"]
             for m in (remembered.id, live.id)}
    assert [(e.old_values, e.new_values) for e in moved[remembered.id]] == [(
        {"storage": "trimmed"},
        {"storage": "archived", "detail_chars": len(detail), "messages": 0})]
    assert [(e.old_values, e.new_values) for e in moved[live.id]] == [(
        {"storage": "hot"}, {"storage": "archived", "detail_chars": 0, "messages": 7})]

    cold = await store.get(AGENT, remembered.id)
    assert cold.episode.detail is None and cold.episode.storage == "archived"
    assert cold.summary == before[remembered.id].summary
    assert await store.transcript(AGENT, live.id) == []
    chunks_after = await sql(database_url, "SELECT count(*) AS n FROM episode_chunks "
                             "WHERE agent_id = $1 AND episode_id = $2", AGENT, live.id)
    assert chunks_after[0]["n"] == chunks_before[0]["n"] > 0  # the search index stays
    whole = await sql(database_url, "SELECT left(coalesce(e.detail, ''), a.start_offset) "
                      "|| a.content AS d "
                      "FROM episodes e JOIN memory_archive a ON a.agent_id = e.agent_id AND "
                      "a.memory_id = e.memory_id AND a.part = 'detail' WHERE e.memory_id = $1",
                      remembered.id)
    assert whole[0]["d"] == detail

    done = await store.restore(AGENT, remembered.id, actor="tester")
    assert done.detail_chars == len(detail) and done.previous_storage == "archived"
    back = await store.get(AGENT, remembered.id)
    assert back.episode.detail == detail
    assert back.episode.storage == "restored"
    raw = await sql(database_url, "SELECT convert_to(detail, 'UTF8') AS b FROM episodes "
                    "WHERE memory_id = $1", remembered.id)
    assert raw[0]["b"] == detail.encode("utf-8")

    restored_live = await store.restore(AGENT, live.id)
    assert restored_live.messages == 7 and restored_live.detail_chars is None
    assert await store.transcript(AGENT, live.id) == transcript_before
    assert await sql(database_url, "SELECT 1 FROM memory_archive WHERE agent_id = $1",
                     AGENT) == []
    events = [e.event for e in await store.history(AGENT, remembered.id)]
    assert events == ["created", "trimmed", "archived", "restored"]

    # restored episodes stay hot: the jobs leave them alone from now on
    assert (await store.maintenance.archive(now=NOW)).counts["archived"] == 0
    with pytest.raises(ConflictError):
        await store.restore(AGENT, remembered.id)
    with pytest.raises(NotFoundError):
        await store.restore("someone-else", remembered.id)
    with pytest.raises(NotFoundError):
        await store.restore(AGENT, UUID(int=7))


async def test_archive_one_agent_regardless_of_age(store: MemoryStore) -> None:
    mine = await old_episode(store, AGENT, ended_days_ago=0.01, detail="fresh")
    theirs = await old_episode(store, "other-agent", ended_days_ago=500, detail="old")
    result = await store.archive_episodes(AGENT, now=NOW)
    assert result.counts["archived"] == 1
    assert (await store.get(AGENT, mine.id)).episode.storage == "archived"
    assert (await store.get("other-agent", theirs.id)).episode.storage == "hot"


async def test_dry_runs_change_nothing_and_report_what_a_run_does(
        sweeps: str, store: MemoryStore, database_url: str) -> None:
    assert store.maintenance.policy.sweeps == sweeps
    for i in range(5):
        await old_episode(store, AGENT, ended_days_ago=35 + 30 * i, detail=long_text(
            2_500 + 100 * i, seed=20 + i))
    await old_episode(store, AGENT, ended_days_ago=200, detail="tiny")
    before = await snapshot(database_url)
    dry_trim = await store.maintenance.trim(now=NOW, dry_run=True)
    dry_archive = await store.maintenance.archive(now=NOW, dry_run=True)
    assert await snapshot(database_url) == before
    assert dry_trim.counts["trimmed"] == 5 and dry_archive.counts["archived"] == 4

    real_trim = await store.maintenance.trim(now=NOW)
    real_archive = await store.maintenance.archive(now=NOW)
    assert real_trim.counts == dry_trim.counts
    assert real_archive.counts == dry_archive.counts
    assert await snapshot(database_url) != before


class Killed(Exception):
    """Stands in for a kill between two batches (see also the SIGKILL test)."""


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_trim_killed_after_a_batch_resumes(sweeps: str, workers: int,
                                                   database_url: str,
                                                   embedder: SentenceTransformerEmbedder
                                                   ) -> None:
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                job_batch_size=2, job_workers=workers) as small:
        assert small.maintenance.policy.sweeps == sweeps
        texts = {}
        for i in range(5):
            episode = await old_episode(small, AGENT, ended_days_ago=45,
                                        detail=long_text(2_600 + i, seed=40 + i))
            texts[episode.id] = episode.episode.detail

        async def kill_after_first(step: str, n: int) -> None:
            raise Killed(f"{step}: {n}")

        with pytest.raises(Killed):
            await small.maintenance.trim(now=NOW, on_batch=kill_after_first)
        storages = [(await small.get(AGENT, i)).episode.storage for i in texts]
        trimmed = storages.count("trimmed")
        if workers == 1:
            assert trimmed == 2  # batch 1 committed, nothing after it
        else:  # batch 1, and batch 2 when it was in flight beside it: whole batches
            assert trimmed in (2, 4)
        assert storages.count("hot") == 5 - trimmed

        resumed = await small.maintenance.trim(now=NOW)
        assert resumed.counts["trimmed"] == 5 - trimmed
        rows = await sql(database_url, "SELECT e.memory_id, left(e.detail, a.start_offset) "
                         "|| a.content AS whole FROM episodes e JOIN memory_archive a ON "
                         "a.agent_id = e.agent_id AND a.memory_id = e.memory_id")
        assert {r["memory_id"]: r["whole"] for r in rows} == texts


async def test_retention_is_off_by_default_and_deletes_old_cold_parts(
        sweeps: str, store: MemoryStore, database_url: str,
        embedder: SentenceTransformerEmbedder) -> None:
    kept = await old_episode(store, AGENT, ended_days_ago=400, detail=long_text(3_000, 50))
    # archived 300 days before NOW, and one archived at NOW
    assert (await store.maintenance.archive(now=NOW - timedelta(days=300))).counts[
        "archived"] == 1
    fresh = await old_episode(store, AGENT, ended_days_ago=100, detail=long_text(2_500, 51))
    assert (await store.maintenance.archive(now=NOW)).counts["archived"] == 1

    off = await store.maintenance.retention(now=NOW)
    assert off.skipped and "off" in (off.note or "")
    async with MemoryStore.open(database_url=database_url, embedder=embedder,
                                retention_days=200) as retaining:
        assert retaining.maintenance.policy.sweeps == sweeps
        dry = await retaining.maintenance.retention(now=NOW, dry_run=True)
        assert dry.counts == {"cold_parts_deleted": 1}
        done = await retaining.maintenance.retention(now=NOW)
        assert done.counts == {"cold_parts_deleted": 1}
        gone = await retaining.get(AGENT, kept.id)
        assert gone.episode.storage == "expired"
        assert [e.event for e in await retaining.history(AGENT, kept.id)][-1] == "expired"
        assert (await retaining.get(AGENT, fresh.id)).episode.storage == "archived"


async def test_a_corrupted_cold_copy_is_not_restored(store: MemoryStore,
                                                     database_url: str) -> None:
    episode = await old_episode(store, AGENT, ended_days_ago=100, detail=long_text(4_000, 80))
    await store.archive_episodes(AGENT, now=NOW)
    await sql(database_url, "UPDATE memory_archive SET content = content || 'x' "
              "WHERE memory_id = $1", episode.id)
    with pytest.raises(DatabaseError, match="checksum"):
        await store.restore(AGENT, episode.id)
    still = await store.get(AGENT, episode.id)
    assert still.episode.storage == "archived" and still.episode.detail is None
    assert len(await sql(database_url, "SELECT 1 FROM memory_archive WHERE memory_id = $1",
                         episode.id)) == 1
