"""How cold copies are stored: the storage choices the trim and archive batches rely on
for speed must not cost a byte of the original."""

from __future__ import annotations

from nous_memory import MemoryStore

from .jobs_helpers import NOW, long_text, old_episode, sql

AGENT = "cold-agent"


async def test_archive_moves_a_compressed_detail_as_is_and_restores_it(
        store: MemoryStore, database_url: str) -> None:
    detail = long_text(9_000, seed=3) * 2  # repeats: PostgreSQL stores it compressed
    episode = await old_episode(store, AGENT, ended_days_ago=120, detail=detail)
    hot = await sql(database_url, "SELECT pg_column_compression(detail) AS c FROM episodes "
                    "WHERE memory_id = $1", episode.id)
    assert hot[0]["c"] == "pglz"

    assert (await store.maintenance.archive(now=NOW)).counts["archived"] == 1
    cold = await sql(database_url,
                     "SELECT pg_column_compression(content) AS c, content, "
                     "checksum = hashtextextended(content, 0) AS ok FROM memory_archive "
                     "WHERE agent_id = $1 AND memory_id = $2 AND part = 'detail'",
                     AGENT, episode.id)
    assert cold[0]["c"] == "pglz"  # moved compressed, not decompressed into the copy
    assert cold[0]["ok"] and cold[0]["content"] == detail

    done = await store.restore(AGENT, episode.id)
    assert done.detail_chars == len(detail)
    back = await sql(database_url, "SELECT convert_to(detail, 'UTF8') AS b FROM episodes "
                     "WHERE memory_id = $1", episode.id)
    assert back[0]["b"] == detail.encode("utf-8")


async def test_a_trimmed_tail_is_stored_uncompressed(store: MemoryStore,
                                                     database_url: str) -> None:
    detail = long_text(6_000, seed=4) * 2
    episode = await old_episode(store, AGENT, ended_days_ago=40, detail=detail)
    assert (await store.maintenance.trim(now=NOW)).counts["trimmed"] == 1
    rows = await sql(database_url,
                     "SELECT pg_column_compression(a.content) AS c, "
                     "e.detail || a.content AS whole FROM memory_archive a JOIN episodes e "
                     "ON e.agent_id = a.agent_id AND e.memory_id = a.memory_id "
                     "WHERE a.agent_id = $1 AND a.memory_id = $2", AGENT, episode.id)
    assert rows[0]["c"] is None  # STORAGE EXTERNAL: no pglz pass in the batch
    assert rows[0]["whole"] == detail
    storage = await sql(database_url,
                        "SELECT attname, attstorage::text AS attstorage FROM pg_attribute "
                        "WHERE attrelid = 'memory_archive'::regclass "
                        "AND attname IN ('content', 'messages')")
    assert {r["attname"]: r["attstorage"] for r in storage} == {"content": "e",
                                                                "messages": "e"}
